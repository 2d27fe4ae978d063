"""What the Coq kernel check does to a verdict.

A statement with a Coq twin (``twins.TWINS``) keeps its sympy status when every theorem of its
twin compiled and assumes only the reals' axioms (kernel "coq"); when coqc is absent the status
stands with kernel "not run"; when the check failed, timed out or found an extra assumption, a
``proved`` or ``refuted`` status becomes ``unknown`` with the reason in the evidence. Statements
without a twin are returned unchanged.
"""

from __future__ import annotations

import dataclasses

from ..statements.verdict import Verdict
from .kernel import KernelReport
from .twins import TWINS


def has_twin(name: str) -> bool:
    return name in TWINS


def with_kernel(v: Verdict, report: KernelReport) -> Verdict:
    theorems = TWINS.get(v.name)
    if theorems is None:
        return v
    if not report.ran:
        return dataclasses.replace(v, kernel="not run")
    failures = [f"{t}: {why}" for t in theorems if (why := report.theorem_failure(t)) is not None]
    if not failures:
        line = (f"kernel-checked: Coq theorem(s) {', '.join(theorems)} compiled by {report.coqc}; Print Assumptions "
                f"lists: {report.printed_assumptions(theorems)}; {report.recheck.get('summary', 'coqchk not run')}")
        return dataclasses.replace(v, kernel="coq", evidence=(line,) + tuple(v.evidence))
    reason = "; ".join(failures)
    status = "unknown" if v.status in ("proved", "refuted") else v.status
    evidence = tuple(v.evidence) + (f"did not close: Coq kernel check failed: {reason}",)
    return dataclasses.replace(v, status=status, kernel=f"failed: {reason}"[:500], evidence=evidence)
