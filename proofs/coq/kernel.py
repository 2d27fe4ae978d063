"""Compile the Coq development with ``coqc`` and check what its main theorems assume.

``check(source)`` copies the ``.v`` files named in ``_CoqProject`` into a temporary build folder
(the source tree is never written), compiles them in order with ``coqc`` (``coqc.py``: each a
subprocess in its own session, hard-killed at the shared deadline), then runs ``Print Assumptions``
for every main theorem (``twins.main_theorems()``) and compares what the kernel says each one
states with the pinned text (``pins.verify``), and has the independent re-checker ``coqchk`` check
every compiled module (``assumptions.recheck``). The development passes only if every file compiles,
``coqchk`` finds no axiom the development declares (an admitted proof, a Hypothesis outside a
Section, an Axiom in any Module) and no unsafe flag, every main theorem's ``Print Assumptions``
(read strictly) lists nothing beyond ``ALLOWED_AXIOMS``, the axioms the standard library's reals are
built on, its kernel-printed type and every definition that type unfolds to are the pinned ones,
and the source scan (``scan.py``, an early readable message, not the guard) finds nothing.
``default_report()`` checks the installed development once per process; ``SINKS_COQ=off`` skips
the check (the verdicts then say "Coq not run").
"""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .coqc import (INSTALL_HINT, LIBRARY, Timeout, build_dir, children_cpu, compile_files, coqc_path, coqc_version,
                   run_session)
from .assumptions import CLOSED, parse_assumptions, recheck
from .scan import duplicate_names, scan
from .source import COQ_DIR, project_files

__all__ = ["ALLOWED_AXIOMS", "KernelReport", "check", "default_report", "duplicate_names", "not_run",
           "parse_assumptions", "scan"]

DEFAULT_TIMEOUT = 900.0  # seconds for the whole check; SINKS_COQ_TIMEOUT overrides

# What the standard library's reals rest on (Rdefinitions: classical Dedekind cuts; the
# constructive reals use functional extensionality). Nothing else may appear.
ALLOWED_AXIOMS = (
    "ClassicalDedekindReals.sig_forall_dec",
    "ClassicalDedekindReals.sig_not_dec",
    "FunctionalExtensionality.functional_extensionality_dep",
)

@dataclass(frozen=True)
class KernelReport:
    """The outcome of one check of the development."""

    ran: bool  # coqc was found and run
    ok: bool  # everything compiled, nothing forbidden, only ALLOWED_AXIOMS assumed
    reason: str  # why not ok ("" when ok); why not run
    coqc: str = ""  # "coqc 8.16.1"
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0  # user + system time of the coqc processes
    files: tuple[str, ...] = ()  # the files compiled, in order
    assumptions: dict = field(default_factory=dict)  # theorem -> the axioms Print Assumptions lists
    # "all main theorems together" (one Print Assumptions of the tuple of them: each theorem's
    # axioms are among these) or "each theorem" (run when an extra axiom had to be attributed)
    scope: str = ""
    statements: dict = field(default_factory=dict)  # theorem -> its type as coqc prints it (Check)
    failed: dict = field(default_factory=dict)  # theorem -> why it did not pass
    # theorem -> why its kernel-printed type, or a definition it unfolds to, is not the pinned text
    unpinned: dict = field(default_factory=dict)
    recheck: dict = field(default_factory=dict)  # what coqchk -o said (assumptions.Recheck.to_dict())

    def theorem_failure(self, name: str) -> str | None:
        """None when theorem ``name`` passed; otherwise the reason."""
        if not self.ran:
            return None
        if not self.ok and not self.failed:
            return self.reason
        if name in self.failed:
            return self.failed[name]
        if name not in self.assumptions:
            return f"{name} was not checked"
        return None

    def printed_assumptions(self, theorems: list[str] | tuple[str, ...]) -> str:
        """What Print Assumptions listed for ``theorems`` (their union), as the kernel named them."""
        axioms = sorted({a for t in theorems for a in self.assumptions.get(t, ())})
        return ", ".join(axioms) if axioms else CLOSED

    def summary(self) -> str:
        if not self.ran:
            return f"Coq not run: {self.reason}"
        status = "passed" if self.ok else f"FAILED: {self.reason}"
        return (f"Coq kernel check ({self.coqc}): {len(self.files)} files, {self.wall_seconds:.1f} s wall, "
                f"{self.cpu_seconds:.1f} s CPU; {status}")

    def to_dict(self) -> dict:
        return {"ran": self.ran, "ok": self.ok, "reason": self.reason, "coqc": self.coqc,
                "wall_seconds": round(self.wall_seconds, 2), "cpu_seconds": round(self.cpu_seconds, 2),
                "files": list(self.files), "allowed_axioms": list(ALLOWED_AXIOMS),
                "assumptions": {k: list(v) for k, v in self.assumptions.items()}, "assumptions_scope": self.scope,
                "statements": dict(self.statements), "failed": dict(self.failed),
                "unpinned": dict(self.unpinned), "recheck": dict(self.recheck)}


def not_run(reason: str) -> KernelReport:
    return KernelReport(ran=False, ok=False, reason=reason)


def _assumptions_script(theorems: list[str], modules: list[str], each: bool) -> str:
    """Check every theorem; Print Assumptions of all of them together (one traversal of their
    dependencies), or of each one (``each``, to say which theorem an extra axiom comes from).
    ``theorems`` are the names to print (qualified, ``Sinks.T1.t1_single_layer_sink``, where pinned)."""
    lines = ["Require Import Reals.", f"Require Import {' '.join(f'{LIBRARY}.{m}' for m in modules)}.",
             "Open Scope R_scope."]
    for k, name in enumerate(theorems):
        lines += [f"Definition sinks_marker_{k} := tt.", f"Print sinks_marker_{k}.", f"Check {name}."]
        if each:
            lines.append(f"Print Assumptions {name}.")
    if not each:
        lines += [f"Definition sinks_marker_{len(theorems)} := tt.", f"Print sinks_marker_{len(theorems)}.",
                  f"Definition sinks_all_theorems := ({', '.join(theorems)}).", "Check sinks_all_theorems.",
                  "Print Assumptions sinks_all_theorems."]
    return "\n".join(lines) + "\n"


def _split_block(text: str) -> tuple[str, str]:
    """(the Check output, the Print Assumptions output) of one theorem's block."""
    lines = text.splitlines()
    k = 1
    while k < len(lines) and (not lines[k] or lines[k][0].isspace()):
        k += 1
    return " ".join(" ".join(lines[:k]).split()), "\n".join(lines[k:])


def _check_theorems(coqc: str, build: Path, theorems: list[str], modules: list[str], deadline: float,
                    attribute: bool, each: bool = False, refs: dict | None = None) -> tuple[dict, dict, dict, str, str]:
    """(assumptions, statements, failed, scope, error) of the main theorems. All theorems' assumptions
    are read in one ``Print Assumptions``; when that lists more than ``ALLOWED_AXIOMS`` and
    ``attribute``, it runs again per theorem, to name the theorems that use the extra axiom
    (otherwise every theorem is charged with the extra axiom). ``refs``: theorem -> the name to
    print it by (the pinned constant, so that both checks read the same theorem)."""
    refs = refs or {}
    script = build / "sinks_assumptions.v"
    script.write_text(_assumptions_script([refs.get(t, t) for t in theorems], modules, each))
    r = run_session([coqc, "-q", "-R", ".", LIBRARY, script.name], build, deadline)
    if r.returncode != 0:
        return {}, {}, {}, "", f"Print Assumptions did not run: {' '.join(r.stdout.split())[:600]}"
    blocks = re.split(r"^sinks_marker_(\d+) = tt\n\s*: unit\n", r.stdout, flags=re.M)
    assumptions, statements, failed, together = {}, {}, {}, None
    for k, text in zip(blocks[1::2], blocks[2::2]):
        check, printed = _split_block(text)
        if int(k) == len(theorems):
            together = parse_assumptions(printed)
            continue
        name = theorems[int(k)]
        statements[name] = check
        if each:
            assumptions[name] = parse_assumptions(printed)
    if not each:
        if together is None:
            return {}, statements, {}, "", "Print Assumptions printed nothing for the main theorems"
        axioms, problem = together
        if attribute and (any(a not in ALLOWED_AXIOMS for a in axioms) or problem):
            return _check_theorems(coqc, build, theorems, modules, deadline, attribute, each=True, refs=refs)
        assumptions = {name: together for name in theorems}
    for name in theorems:
        if name not in assumptions:
            failed[name] = "no Print Assumptions output"
            continue
        axioms, problem = assumptions[name]
        extra = [a for a in axioms if a not in ALLOWED_AXIOMS]
        if extra or problem:
            failed[name] = "assumes " + ", ".join(extra + ([problem] if problem else []))
    scope = "each theorem" if each else "all main theorems together"
    return {n: a for n, (a, _) in assumptions.items()}, statements, failed, scope, ""


def check(source: Path = COQ_DIR, timeout: float | None = None, theorems: list[str] | None = None) -> KernelReport:
    """Compile ``source`` (a folder with ``_CoqProject``) and check its main theorems."""
    from . import pins
    from .twins import main_theorems

    coqc = coqc_path()
    if coqc is None:
        return not_run(f"coqc not found (install: {INSTALL_HINT})")
    timeout = float(os.environ.get("SINKS_COQ_TIMEOUT", DEFAULT_TIMEOUT)) if timeout is None else timeout
    theorems = main_theorems() if theorems is None else theorems
    version = coqc_version(coqc)
    start, cpu0 = time.monotonic(), children_cpu()
    files = project_files(source)
    build = build_dir()
    for name in files + ["_CoqProject"]:
        shutil.copy2(Path(source) / name, build / name)
    texts = {name: (build / name).read_text() for name in files}
    found = [hit for name in files for hit in scan(texts[name], name)] + duplicate_names(texts)

    def report(ok: bool, reason: str, **kw) -> KernelReport:
        return KernelReport(True, ok, reason, version, time.monotonic() - start, children_cpu() - cpu0,
                            tuple(files), **kw)

    try:
        error = compile_files(coqc, build, files, start + timeout)
        if error:
            return report(False, error)
        modules = [f[:-2] for f in files]
        assumptions, statements, failed, scope, error = _check_theorems(
            coqc, build, theorems, modules, start + timeout, attribute=not found, refs=pins.qualified(theorems))
        unpinned = {} if error else pins.verify(coqc, build, theorems, modules, start + timeout)
        rechecked = recheck(build, LIBRARY, modules, start + timeout) if not error else None
    except Timeout:
        return report(False, f"timed out after {timeout:.0f} s (hard-killed)")
    if error:
        return report(False, error)
    # what undermines every theorem: a forbidden sentence, or anything the re-checker refuses
    development = ([f"forbidden in the source: {'; '.join(found)}"] if found else []) \
        + ([] if rechecked.ok else [rechecked.summary()])
    if development:
        failed = {n: "; ".join(filter(None, (failed.get(n), *development))) for n in theorems}
    for name, why in unpinned.items():  # the kernel checked another statement than the pinned one
        failed[name] = "; ".join(filter(None, (failed.get(name), f"not the pinned statement: {why}")))
    reasons = development + [f"{n}: {why}" for n, why in failed.items() if not development or n in unpinned]
    return report(not reasons, "; ".join(reasons), assumptions=assumptions, statements=statements, failed=failed,
                  scope=scope, unpinned=unpinned, recheck=rechecked.to_dict())


_REPORT: KernelReport | None = None


def default_report() -> KernelReport:
    """The check of the installed development, once per process (``SINKS_COQ=off`` skips it)."""
    global _REPORT
    if os.environ.get("SINKS_COQ", "auto").lower() in ("off", "0", "no"):
        return not_run("skipped (SINKS_COQ=off)")
    if _REPORT is None:
        _REPORT = check()
    return _REPORT
