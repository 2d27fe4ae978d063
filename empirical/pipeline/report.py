"""REPORT.md's text from the parts' stored records: which parts ran (status, mode, wall and CPU time,
load, machine), every claim with its verdict, evidence, test, command and figures, and the parts'
tables as they stored them. Rendering only: ``empirical.pipeline.reproduce.build_report`` loads the
records and writes the file, so the report is rebuilt without running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable


class _Raw(str):
    """A cell already formatted as markdown (not escaped again)."""


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", "<br>")


def _code(text: str) -> str:
    return f"`{_cell(text)}`" if text else "—"


def _row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(_cell(c) if not isinstance(c, _Raw) else str(c) for c in cells) + " |"


def _table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(columns), "|" + "---|" * len(columns), *(_row(r) for r in rows)]


def _figure_links(results_dir: Path, figures: list[str]) -> _Raw:
    links = [f"[{f}]({f})" + ("" if (results_dir / f).exists() else " (missing)") for f in figures]
    return _Raw(", ".join(links) or "—")


def render(results_dir: Path, records: dict[str, dict | None], absent: dict[str, str],
           meanings: dict[str, str]) -> str:
    """REPORT.md's text from the parts' stored ``records`` (None where ``absent`` says why) and the
    verdict vocabulary ``meanings`` (word -> meaning, in the report's order)."""
    lines = [
        "# Reproduction report",
        "",
        "Built from the part files in this folder (`<part>.json`, written by `sinks reproduce`); "
        "rebuild it with `sinks report --results <folder>`. SPEC is the project's specification, "
        "constructions/SPEC.md (section 4: the reference results set beside the runs). Verdicts: "
        + "; ".join(f"*{word}*: {meaning}" for word, meaning in meanings.items()) + ".",
        *_parts_section(results_dir, records, absent),
        *_claims_section(results_dir, records, tuple(meanings)),
        *_tables_section(records),
    ]
    return "\n".join(lines) + "\n"


def _parts_section(results_dir: Path, records: dict[str, dict | None], absent: dict[str, str]) -> list[str]:
    rows = []
    for name, record in records.items():
        if record is None:
            rows.append([name, absent[name], "", "", "", "", "", "", ""])
            continue
        config = record.get("provenance", {}).get("config") or {}
        status = record.get("status", "?") + (f": {record['error']}" if record.get("error") else "")
        usage = record.get("usage") or {}
        rows.append([name, status, "quick" if config.get("quick") else "default",
                     record.get("provenance", {}).get("device", "?"), f"{record.get('wall_s', 0):.1f} s",
                     f"{usage['cpu_s']:.1f} s" if "cpu_s" in usage else "not recorded", _load_cell(usage),
                     len(record["claims"]), _Raw(f"[{name}.json]({name}.json)")])
    stored = [r for r in records.values() if r]
    total = total_wall(stored)
    cpu = sum((r.get("usage") or {}).get("cpu_s", 0) for r in stored)
    from empirical.host.usage import describe_machine

    described = {describe_machine(r["machine"]) for r in stored if r.get("machine")}
    # a part that never imported torch (proofs, smt) says less of the same machine: not another one
    machines = sorted(m for m in described if not any(o.startswith(m + " (") for o in described))
    return ["", "## Parts", "",
            *_table(["part", "status", "mode", "device", "wall time", "CPU time", "load", "claims", "file"], rows),
            "", f"Total wall time of the stored parts: {total:.1f} s, while some part ran (parts run "
                f"alongside the others overlap them; the time between the sessions of a resumed run is not "
                f"counted); CPU time {cpu:.1f} s (user + system, the parts' worker processes included).",
            "", "Machine: " + ("; ".join(machines) or "not recorded") + ". Load: the machine's 1-minute load "
                "average while the part ran (mean of samples every 10 s, with start and end), every process "
                "counted, the run's own workers included. On a loaded machine wall time overstates what an "
                "idle one needs; CPU time moves much less with the load."]


def total_wall(records: list[dict]) -> float:
    """The wall time the stored parts took together: the length of the union of their ``span``s
    (parts ``ALONGSIDE`` overlap the others; the time between two sessions of a resumed run, when
    nothing ran, is not counted), else the sum of their walls."""
    spans = [r.get("span") for r in records]
    if not (records and all(isinstance(s, list) and len(s) == 2 for s in spans)):
        return sum(r.get("wall_s", 0) for r in records)
    total, end = 0.0, float("-inf")
    for begin, finish in sorted(spans):
        total += max(0.0, finish - max(begin, end))
        end = max(end, finish)
    return total


def _load_cell(usage: dict) -> str:
    if usage.get("load_mean") is None:
        return "not recorded"
    return f"{usage['load_mean']:.1f} ({usage['load_start']:.1f} → {usage['load_end']:.1f})"


def _claims_section(results_dir: Path, records: dict[str, dict | None], verdicts: tuple[str, ...]) -> list[str]:
    rows, counts = [], {}
    for name, record in records.items():
        for claim in (record or {}).get("claims", []):
            counts[claim["verdict"]] = counts.get(claim["verdict"], 0) + 1
            rows.append([name, claim["claim"], _Raw(f"**{_cell(claim['verdict'])}**"), claim["evidence"],
                         _Raw(_code(claim["test"])), _Raw(_code(claim["command"])),
                         _figure_links(results_dir, claim["figures"])])
    if not rows:
        return ["", "## Claims", "", "No claims stored yet."]
    tally = ", ".join(f"{v} {counts[v]}" for v in verdicts if v in counts)
    return ["", "## Claims", "", *_table(["part", "claim", "verdict", "evidence", "test", "command", "figures"], rows),
            "", f"Verdicts: {tally}."]


def _tables_section(records: dict[str, dict | None]) -> list[str]:
    lines = []
    for name, record in records.items():
        for table in (record or {}).get("tables", []):
            lines += ["", f"## {name}: {_cell(table['title'])}", ""]
            lines += _table([str(c) for c in table["columns"]], table["rows"])
            if table["note"]:
                lines += ["", _cell(table["note"])]
    return lines
