"""``sinks reproduce``: run every part of the suite, keep one JSON per part, build REPORT.md.

A part is a module ``empirical/pipeline/parts/<name>.py`` with
``run(results_dir: Path, quick: bool, device: str) -> dict``. The dict has a key ``"claims"``,
a list of ``{"claim", "verdict", "evidence", "test", "command", "figures"}`` (verdict one of
``VERDICTS``; ``figures`` are file names relative to ``results_dir``), and may have
``"tables"``, a list of ``{"title", "columns": [...], "rows": [[...], ...], "note"}`` that the
report prints as they are (the per-run table of the reference experiments, the beyond-the-paper
table). Every other key is kept under ``"details"`` in the part's file.

Resuming: ``results/<part>.json`` is written atomically (``files.write_json``) once the part has
finished, with its provenance (config: part, quick, device). A part whose file is complete, ok and
has the same config is not rerun unless ``force``; a missing, corrupt or failed file is rerun. A
long part keeps its own finished runs with ``empirical.pipeline.sweep.run_sweep`` (e.g. under
``results_dir / "runs" / <part>``) so that an interrupted part resumes run by run.

``build_report(results_dir)`` writes ``REPORT.md`` from the part files only, so the report can be
rebuilt (``sinks report``) without running anything. The commands ``sinks reproduce`` and
``sinks report`` also write ``claims.json`` beside it, the part of the run that the READMEs'
generated tables quote (``empirical.pipeline.published.write_digest``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from constructions.errors import BadInput
from constructions.files import provenance, to_jsonable, write_atomic, write_json
from empirical.pipeline import report
from empirical.pipeline.report import total_wall  # noqa: F401  (part of this module's API: the report's total)

PARTS = ("proofs", "constructions", "smt", "training", "beyond")
# Parts that run in a process of their own beside the others, started first: z3 is single-threaded,
# so the smt part needs one core for its whole run (~6 min), and beside it the single-core proofs
# and constructions parts, then the training part's workers, use the machine's other core; run one
# after another the smt part left a core idle for all its minutes. A part that reads another's
# result waits for it (AFTER: the beyond part's SMT column reads smt.json). Verdicts cannot depend
# on the overlap: every z3 query runs under a work limit, not a clock (proofs/smt/hardkill.py).
ALONGSIDE = ("smt",)
AFTER = {"beyond": ("smt",)}
# The per-part budget the whole run's ETA starts from (``empirical.host.watch``), wall seconds on
# two idle cores: the default run of empirical/pipeline/README.md#cost-of-a-default-run (AMD EPYC,
# 2026-12-04); for `--quick` the parts' CPU seconds on the same machine type, loaded (2026-12-07),
# the training part's halved for its two workers. The ETA scales them by the pace the run
# measures as it goes, so a loaded machine's ETA grows as soon as a part has run.
BUDGET_S = {
    False: {"proofs": 26.0, "constructions": 107.0, "smt": 447.0, "training": 934.0, "beyond": 78.0},
    True: {"proofs": 61.0, "constructions": 43.0, "smt": 6.0, "training": 78.0, "beyond": 37.0},
}
# The report's one vocabulary: every claim's verdict is one of these words, defined here once; the
# report's header, the READMEs' claims tables and tests/test_vocabulary.py read this table.
VERDICT_MEANINGS = {
    "proved": "a proof for every input of the stated class: sympy certificates, or z3 UNSAT on a finite "
              "instance (its LP steps checked exactly in fractions)",
    "verified exactly": "exact or interval arithmetic on every input of a named finite instance or explicit "
                        "construction, or a certificate over every input that decides the claim",
    "verified numerically": "floating point on the stated inputs, within the stated margins",
    "observed": "trained models, over seeds: the claim's stated criterion held in every seed",
    "not met": "trained models, over seeds: the claim's stated criterion (a SPEC expectation) failed in some "
               "seed; a measurement, not a mathematical refutation",
    "refuted": "a mathematical counterexample: an exact construction, a replayed SMT model or a replayed "
               "witness input",
    "unknown": "not decided: a solver's unknown or timeout, a certificate too weak to decide, or runs that "
               "did not converge",
    "failed": "the check did not run to completion, or a construction failed its own check",
}
VERDICTS = tuple(VERDICT_MEANINGS)
REPORT = "REPORT.md"


@dataclass(frozen=True)
class PartConfig:
    """What a part's result depends on; a stored result is reused only for the same config."""

    part: str
    quick: bool
    device: str


# ----------------------------------------------------------------------------------------
# Parts: discovery, validation, running.


def part_exists(name: str) -> bool:
    return importlib.util.find_spec(f"empirical.pipeline.parts.{name}") is not None


def _parts_path() -> list[str]:
    """The folders part modules are found in (tests add one), for a child process to search the same."""
    import sys

    importlib.util.find_spec("empirical.pipeline.parts")  # imports the package (not a part) if needed
    return list(sys.modules["empirical.pipeline.parts"].__path__)


def part_path(results_dir: Path, name: str) -> Path:
    return Path(results_dir) / f"{name}.json"


def load_part(results_dir: Path, name: str) -> dict | None:
    """The stored record of part ``name``, or None if it is missing, unreadable or malformed
    (claims or tables not in the form ``validate_output`` accepts)."""
    try:
        record = json.loads(part_path(results_dir, name).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    try:  # a stored file is only used if it still has the shape a part's output must have
        record["claims"], record["tables"], _ = validate_output(record)
    except (ValueError, TypeError):
        return None
    return record


def check_selection(only: Iterable[str] | None) -> tuple[str, ...]:
    """The parts to run, in ``PARTS`` order; an unknown name is bad input."""
    if not only:
        return PARTS
    unknown = [name for name in only if name not in PARTS]
    if unknown:
        raise BadInput(f"unknown part(s) {', '.join(unknown)}; valid: {', '.join(PARTS)}")
    return tuple(name for name in PARTS if name in set(only))


def validate_output(output: Any) -> tuple[list[dict], list[dict], dict]:
    """Split a part's output into (claims, tables, details); malformed output raises ValueError."""
    if not isinstance(output, dict) or not isinstance(output.get("claims"), list):
        raise ValueError("a part must return a dict with a list under 'claims'")
    claims = [_check_claim(n, claim) for n, claim in enumerate(output["claims"])]
    tables = [_check_table(n, table) for n, table in enumerate(output.get("tables") or [])]
    details = {k: v for k, v in output.items() if k not in ("claims", "tables")}
    return claims, tables, details


def _check_claim(n: int, claim: Any) -> dict:
    if not isinstance(claim, dict):
        raise ValueError(f"claim {n} is not a dict")
    for key in ("claim", "verdict", "evidence"):
        if not isinstance(claim.get(key), str) or not claim[key]:
            raise ValueError(f"claim {n} needs a non-empty string {key!r}")
    if claim["verdict"] not in VERDICTS:
        raise ValueError(f"claim {n} has verdict {claim['verdict']!r}; valid: {', '.join(VERDICTS)}")
    figures = claim.get("figures") or []
    if not isinstance(figures, list) or not all(isinstance(f, str) for f in figures):
        raise ValueError(f"claim {n}: 'figures' must be a list of file names")
    return {**claim, "test": str(claim.get("test") or ""), "command": str(claim.get("command") or ""),
            "figures": figures}


def _check_table(n: int, table: Any) -> dict:
    if not isinstance(table, dict) or not isinstance(table.get("columns"), list) or not isinstance(
            table.get("rows"), list):
        raise ValueError(f"table {n} needs 'columns' and 'rows' lists")
    width = len(table["columns"])
    for r, row in enumerate(table["rows"]):
        if not isinstance(row, list) or len(row) != width:
            raise ValueError(f"table {n} row {r} must be a list of {width} cells")
    return {"title": str(table.get("title") or f"table {n}"), "columns": table["columns"],
            "rows": table["rows"], "note": str(table.get("note") or "")}


def plain(obj: Any) -> Any:
    """JSON-able copy of a part's output: dataclasses, numpy / torch scalars and arrays included."""
    obj = to_jsonable(obj)
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if hasattr(obj, "tolist") and callable(obj.tolist):  # arrays and tensors (after .cpu() if needed)
        return plain((obj.cpu() if hasattr(obj, "cpu") else obj).tolist())
    return obj


def run_part(name: str, results_dir: Path, quick: bool, device: str, force: bool = False) -> str:
    """Run one part unless a matching finished result exists; returns what happened:
    "missing" (no module), "reused", "ok" or "failed" (the failure is recorded in its file)."""
    if not part_exists(name):
        return "missing"
    config = PartConfig(name, quick, device)
    stored = load_part(results_dir, name)
    if (not force and stored is not None and stored.get("status") == "ok"
            and stored.get("provenance", {}).get("config") == to_jsonable(config)):
        return "reused"
    from empirical.host import usage

    start, began, meter = time.perf_counter(), time.time(), usage.Meter(sample=True)
    record: dict[str, Any] = {"part": name, "status": "ok"}
    try:
        module = importlib.import_module(f"empirical.pipeline.parts.{name}")
        claims, tables, details = validate_output(plain(module.run(Path(results_dir), quick, device)))
        json.dumps(details)  # a result that cannot be stored is a failure of the part
        record.update(claims=claims, tables=tables, details=details)
    except Exception as e:  # a broken part is reported, and the other parts still run
        message = f"{type(e).__name__}: {e}".splitlines()[0]
        record.update(status="failed", error=message, traceback=traceback.format_exc(), tables=[], claims=[{
            "claim": f"part '{name}' runs to completion", "verdict": "failed", "evidence": message,
            "test": "", "command": f"sinks reproduce --only {name}", "figures": []}])
    record["wall_s"] = round(time.perf_counter() - start, 2)
    record["span"] = [round(began, 3), round(time.time(), 3)]  # unix seconds: overlapping parts' total wall
    record["usage"] = meter.read()  # CPU time includes the part's worker processes
    record["machine"] = usage.machine()
    record["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    record["commit"] = git_commit()
    record["provenance"] = provenance(config, None, device)
    write_json(part_path(results_dir, name), record)
    return record["status"]


def git_commit() -> str | None:
    """The checkout's commit, "+ changes" when its tracked files differ from it; None outside git."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + (" + changes" if dirty else "")) or None


def reproduce(
    results_dir: str | Path = "results",
    quick: bool = False,
    device: str = "cpu",
    only: Iterable[str] | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, str]:
    """Run the selected parts (``PARTS`` order; those in ``ALONGSIDE`` in a process of their own
    beside the others, ``AFTER`` respected), then build REPORT.md; returns each part's status."""
    results_dir = Path(results_dir)
    selection = check_selection(only)
    if results_dir.exists() and not results_dir.is_dir():
        raise BadInput(f"results folder {results_dir} is a file, not a folder")
    results_dir.mkdir(parents=True, exist_ok=True)
    statuses: dict[str, str] = {}
    from empirical.host import watch

    plan = {name: BUDGET_S[bool(quick)].get(name, 0.0) for name in selection if part_exists(name)}
    with watch.Watch(plan, log, live=_terminal(), alongside=ALONGSIDE, after=AFTER) as run:
        statuses = _run_parts(selection, results_dir, quick, device, force, run)
    statuses = {name: statuses.get(name, "missing") for name in selection}
    report = build_report(results_dir)
    log(f"report: {report}")
    return statuses


def _terminal() -> bool:
    import sys

    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _run_parts(selection, results_dir: Path, quick: bool, device: str, force: bool, run) -> dict[str, str]:
    """Each selected part, the ``ALONGSIDE`` ones in a process of their own; ``run`` (a
    ``empirical.host.watch.Watch``) hears of each and carries every line."""
    statuses: dict[str, str] = {}
    beside = {name: _Alongside(name, results_dir, quick, device, force, run) for name in selection
              if name in ALONGSIDE and part_exists(name)}
    try:
        for name in selection:
            if name in beside:
                continue
            for before in AFTER.get(name, ()):
                if before in beside:
                    statuses[before] = beside.pop(before).wait()
            if not part_exists(name):
                run.say(f"[{name}] missing: empirical/pipeline/parts/{name}.py does not exist")
                statuses[name] = "missing"
                continue
            run.part_started(name)
            run.say(f"[{name}] running ({'quick' if quick else 'default'}, {device}); {run.summary()}")
            statuses[name] = run_part(name, results_dir, quick, device, force)
            run.part_ended(name, _wall(results_dir, name, statuses[name]))
            run.say(f"[{name}] {statuses[name]}{_usage_note(results_dir, name, statuses[name])}; {run.summary()}")
        for name in list(beside):
            statuses[name] = beside.pop(name).wait()
    finally:  # an interrupted or failing run stops the parts beside it (their finished results stay)
        for part in beside.values():
            part.stop()
    return statuses


def _wall(results_dir: Path, name: str, status: str) -> float | None:
    """The wall seconds a part that ran now took (its record's); None for a reused one."""
    if status not in ("ok", "failed"):
        return None
    return float((load_part(results_dir, name) or {}).get("wall_s") or 0.0)


class _Alongside:
    """A part run by ``run_part`` in a child process beside the serial parts (``ALONGSIDE``). The
    child is waited for only between parts, so that its CPU time is never counted in another
    part's meter (a reaped child's time joins its parent's RUSAGE_CHILDREN); it shares the
    process group, so Ctrl-C reaches it too, and an interrupted run (Ctrl-C or SIGTERM) stops it
    with SIGTERM, which runs its cleanup (``_alongside_main``); its finished result resumes as any."""

    CHILD = ("import sys\nfrom empirical.pipeline.reproduce import _alongside_main\n"
             "sys.exit(_alongside_main(sys.argv[1]))\n")
    STOP_GRACE_S = 30.0  # for its cleanup (solver workers closed) before it is killed

    def __init__(self, name: str, results_dir: Path, quick: bool, device: str, force: bool, run):
        import subprocess
        import sys
        import tempfile

        self.name, self.results_dir, self.run = name, results_dir, run
        handle, self.status_file = tempfile.mkstemp(prefix=f"sinks-{name}-", suffix=".status")
        os.close(handle)
        args = {"name": name, "dir": str(results_dir), "quick": quick, "device": device, "force": force,
                "path": _parts_path(), "parts": list(PARTS), "status": self.status_file}
        run.part_started(name, finished=self.finished)
        run.say(f"[{name}] running alongside the other parts ({'quick' if quick else 'default'}, {device})")
        self.proc = subprocess.Popen([sys.executable, "-c", self.CHILD, json.dumps(args)],
                                     cwd=Path(__file__).resolve().parents[2])

    def finished(self) -> float | None:
        """Its wall seconds once its process has ended (as the watch asks), else None."""
        if self.proc.poll() is None:
            return None
        return _wall(self.results_dir, self.name, "ok")

    def wait(self) -> str:
        code = self.proc.wait()
        status_path = Path(self.status_file)
        status = (status_path.read_text().strip() or "failed") if code == 0 else "failed"
        status_path.unlink(missing_ok=True)
        self.run.part_ended(self.name, _wall(self.results_dir, self.name, status) if code == 0 else None)
        if code != 0:
            self.run.say(f"[{self.name}] failed: its process ended with status {code}")
        else:  # its own wall time: it ended maybe long before this wait
            note = _usage_note(self.results_dir, self.name, status)
            self.run.say(f"[{self.name}] {status}, ran alongside the other parts"
                         + (f" (its own time: {note[2:]}" if note else "") + f"; {self.run.summary()}")
        return status

    def stop(self) -> None:
        import subprocess

        self.proc.terminate()
        try:
            self.proc.wait(self.STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        Path(self.status_file).unlink(missing_ok=True)


def _alongside_main(arg: str) -> int:
    """The child process of ``_Alongside``: ``run_part`` with the parent's parts; SIGTERM or Ctrl-C
    raises in it (``empirical.host.signals``), so its solver workers are closed on the way out."""
    from empirical.host.signals import exit_status, stop_signals

    global PARTS
    a = json.loads(arg)
    importlib.import_module("empirical.pipeline.parts").__path__[:] = a["path"]  # the parent's folders
    PARTS = tuple(a["parts"])
    with stop_signals(sigint=True):
        try:
            status = run_part(a["name"], a["dir"], a["quick"], a["device"], a["force"])
        except KeyboardInterrupt as e:  # the parent says it was stopped
            return exit_status(e)
    Path(a["status"]).write_text(status)
    return 0


def _usage_note(results_dir: Path, name: str, status: str) -> str:
    """' (12.0 s wall, 20.1 s CPU, load ...)' for a part that ran now; '' otherwise."""
    from empirical.host.usage import describe

    usage = (load_part(results_dir, name) or {}).get("usage") if status in ("ok", "failed") else None
    return f" ({describe(usage)})" if usage else ""


# ----------------------------------------------------------------------------------------
# The report, from the part files only (rendered by ``empirical.pipeline.report``).


def build_report(results_dir: str | Path) -> Path:
    """Write ``results_dir/REPORT.md`` from the part files; nothing is recomputed."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise BadInput(f"results folder not found: {results_dir}")
    records = {name: load_part(results_dir, name) for name in PARTS}
    absent = {name: _absence(results_dir, name) for name, record in records.items() if record is None}
    text = report.render(results_dir, records, absent, VERDICT_MEANINGS)
    return write_atomic(results_dir / REPORT, lambda f: f.write(text))


def _absence(results_dir: Path, name: str) -> str:
    if part_path(results_dir, name).exists():
        return f"unreadable results file {name}.json (rerun `sinks reproduce --only {name}`)"
    if not part_exists(name):
        return f"missing: module empirical/pipeline/parts/{name}.py does not exist"
    return f"not run yet (`sinks reproduce --only {name}`)"
