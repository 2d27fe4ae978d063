"""The numbers the READMEs quote from a run, generated from that run.

Every table of the READMEs whose numbers a run of ``sinks reproduce`` produces (the top README's
claims table, the package READMEs' result tables) sits between two markers,

    <!-- generated: NAME; edit empirical/pipeline/published/, then run sinks report --publish -->
    ...
    <!-- end generated: NAME -->

and is rendered by one builder (``TABLES`` below: the claims-table rows in ``claims_table``, the
package tables in ``package_tables``) from the part files of a results folder. What the builders
read is all they need (``tracked``): ``sinks reproduce`` and ``sinks report`` write it, with the
run's provenance, to ``<results>/claims.json`` (tens of kB), and ``sinks report --publish`` copies
that file to ``empirical/pipeline/published/claims.json`` (committed) and rewrites the marked regions from
it. ``tests/test_published.py`` renders every region from the committed file and compares it with
the READMEs, so a number edited by hand, a README left behind by a new claims.json, or a builder
changed without re-rendering fails a test. ``sinks report --rerender`` rewrites the regions from
the committed file alone (after a change of wording; a builder that needs a field the committed
file lacks says so, and then only a results folder will do).

A builder is a function of a ``Records`` (the part records) returning a table; a cell it cannot
fill because a part or claim is absent from the run says so ("not in this run"). To add a row
to the claims table, add one ``Row`` to ``claims_table.ROWS``; to add a table, add one entry to
``TABLES`` and its markers to the README.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any, Callable

from constructions.errors import BadInput

from .records import NotInRun, Records, Table  # noqa: F401 -- the builders' interface
from .tracked import track

ROOT = Path(__file__).resolve().parents[3]  # the checkout: empirical/pipeline/published/ is three below it
COMMITTED = Path(__file__).resolve().parent / "claims.json"
DIGEST = "claims.json"
BEGIN = "<!-- generated: {name}; edit empirical/pipeline/published/, then run sinks report --publish -->"
END = "<!-- end generated: {name} -->"


def _tables() -> dict[str, Table]:
    from . import claims_table, package_tables

    return {"claims": Table("README.md", claims_table.build), **package_tables.TABLES}


def _parts(results_dir: Path) -> dict[str, Any]:
    from empirical.pipeline.reproduce import PARTS

    parts = {}
    for name in PARTS:
        try:
            parts[name] = json.loads((Path(results_dir) / f"{name}.json").read_text())
        except (OSError, ValueError):
            continue
    return parts


def _render_all(parts: Any) -> dict[str, tuple[list[str], list[list[str]]]]:
    return {name: table.build(Records(parts)) for name, table in _tables().items()}


def digest(results_dir: str | Path) -> dict[str, Any]:
    """The run's provenance and every part-record field the builders read."""
    parts = _parts(Path(results_dir))
    view, mirror = track(parts)
    _render_all(view)
    return {"provenance": _provenance(parts), "inputs": mirror}


def _provenance(parts: dict[str, Any]) -> dict[str, Any]:
    runs = {}
    for name, record in parts.items():
        p = record.get("provenance") or {}
        runs[name] = {"status": record.get("status"), "mode": "quick" if (p.get("config") or {}).get("quick") else "default",
                      "device": p.get("device"), "wall_s": record.get("wall_s"), "finished": record.get("finished"),
                      "commit": record.get("commit")}
    versions = next((r["provenance"]["versions"] for r in parts.values() if "versions" in r.get("provenance", {})), {})
    from empirical.pipeline.reproduce import git_commit

    return {"parts": runs, "versions": versions, "commit": git_commit(),
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def write_digest(results_dir: str | Path, log: Callable[[str], None] | None = None) -> Path | None:
    """Write ``<results>/claims.json``. With ``log``, a builder that breaks on this run is said
    there instead of raised (the run's report and part files stand without it)."""
    from constructions.files import write_json

    try:
        return write_json(Path(results_dir) / DIGEST, digest(results_dir))
    except Exception as e:  # noqa: BLE001 -- reported to the caller's log when it gives one
        if log is None:
            raise
        log(f"sinks: {Path(results_dir) / DIGEST} not written: {type(e).__name__}: {e}")
        return None


# ----------------------------------------------------------------------------------------
# Rendering and the marked regions.


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def provenance_line(prov: dict[str, Any]) -> str:
    runs = prov.get("parts") or {}
    modes = {r["mode"] for r in runs.values()}
    parts = ", ".join(f"{name} ({r['wall_s']:.0f} s)" if isinstance(r.get("wall_s"), (int, float)) else name
                      for name, r in runs.items())
    device = ", ".join(sorted({str(r.get("device")) for r in runs.values()}))
    mode = "/".join(sorted(modes)) or "no"
    warn = " **(a `--quick` run: fewer seeds and settings than the reference)**" if "quick" in modes else ""
    finished = sorted(r["finished"] for r in runs.values() if r.get("finished"))
    commits = sorted({r["commit"] for r in runs.values() if r.get("commit")})
    when = (f"finished {finished[-1]}" if finished else "finish time not recorded") + (
        f" at commit {', '.join(commits)}" if commits else "")
    return (f"*Generated from a {mode} `sinks reproduce` run{warn} on {device}: parts {parts or 'none'}; {when}; "
            f"recorded in [`empirical/pipeline/published/claims.json`]({{root}}empirical/pipeline/published/claims.json) "
            f"(published {prov.get('generated', '?')}); regenerate with `sinks report --results DIR --publish`.*")


def render(name: str, built: tuple[list[str], list[list[str]]], prov: dict[str, Any]) -> str:
    """The region's text (markers excluded) for table ``name``."""
    table = _tables()[name]
    root = "../" * table.doc.count("/")
    columns, rows = built
    lines = [provenance_line(prov).replace("{root}", root), ""] if table.from_run else []
    lines += ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def rendered(claims: dict[str, Any]) -> dict[str, str]:
    """Every region's text from a claims.json (its inputs, re-read by the builders)."""
    view, _ = track(claims["inputs"])
    try:
        built = _render_all(view)
    except (KeyError, IndexError, TypeError, AttributeError) as e:  # a field the record does not hold
        raise BadInput(f"claims.json lacks what a builder reads ({type(e).__name__}: {e}): regenerate it from a "
                       "results folder (sinks report --results DIR --publish)") from None
    return {name: render(name, b, claims["provenance"]) for name, b in built.items()}


def _pattern(name: str) -> re.Pattern:
    return re.compile(re.escape(BEGIN.format(name=name)) + r"\n(.*?)" + re.escape(END.format(name=name)), re.S)


def region(text: str, name: str) -> str | None:
    """The text between table ``name``'s markers (without the newline before the end marker)."""
    m = _pattern(name).search(text)
    return None if m is None else m.group(1).removesuffix("\n")


def rewrite_docs(claims: dict[str, Any], root: Path = ROOT) -> list[Path]:
    """Replace every marked region with its rendering; a README missing its markers is an error."""
    texts = rendered(claims)
    changed = []
    for name, table in _tables().items():
        path = root / table.doc
        text = path.read_text()
        if region(text, name) is None:
            raise BadInput(f"{table.doc} has no region for table {name!r} (markers {BEGIN.format(name=name)!r} ...)")
        new = _pattern(name).sub(lambda m: f"{BEGIN.format(name=name)}\n{texts[name]}\n{END.format(name=name)}", text)
        if new != text:
            path.write_text(new)
            changed += [] if path in changed else [path]
    return changed


def publish(results_dir: str | Path, root: Path = ROOT) -> list[Path]:
    """Copy the results folder's digest into the repository and rewrite the READMEs from it."""
    from constructions.files import write_json

    claims = digest(results_dir)
    if not claims["inputs"]:
        raise BadInput(f"no part results in {results_dir}; run sinks reproduce first")
    write_json(root / COMMITTED.relative_to(ROOT), claims)
    return [root / COMMITTED.relative_to(ROOT), *rewrite_docs(claims, root)]


def committed() -> dict[str, Any]:
    return json.loads(COMMITTED.read_text())
