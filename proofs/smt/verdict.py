"""What a search returns: the per-step certificate (``Step``) and the verdict (``SearchResult``).

Kept apart from the search driver so that every driver (``search``, ``chain``, ``relu``) can
build results without importing another driver (the project has no import cycles).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .replay import LayerModel, Replay

STATUSES = ("proof", "counterexample", "solution", "candidate", "unknown")
# who vouches for a step's answer (``Step.checker``); ``recheck`` appends a second solver's word
Z3_CHECKER = "z3"
LP_CHECKER = "LP certificate (HiGHS dual, checked exactly)"


@dataclass
class Step:
    """One query of the certificate."""

    lemma: str  # "LRA-box", "NRA-class", "pattern-class", ...
    where: str  # the class (or "trigger classes")
    expected: str  # what a proof needs ("unsat")
    result: str  # the step's answer
    seconds: float
    reason: str = ""
    smt2: str | None = field(default=None, repr=False)  # the query, kept when a recheck will need it
    checker: str = Z3_CHECKER
    recheck: str | None = None  # a second solver's answer (``recheck``), None when not asked
    work: int | None = None  # z3's resource count for the query (the same on every machine)


@dataclass
class SearchResult:
    status: str
    kind: str
    method: str
    instance: str
    theta: str | None
    seconds: float
    steps: list[Step] = field(default_factory=list)
    reason: str = ""
    where: str | None = None  # the class of the counterexample / candidate
    model: LayerModel | None = None
    replay: Replay | None = None
    box: dict[str, list[str | None]] | None = None
    recheck: dict | None = None  # the second solver's tally (``recheck.recheck``)

    @property
    def proved(self) -> bool:
        return self.status == "proof"

    def summary(self) -> dict[str, Any]:
        from constructions.files import to_jsonable

        out = to_jsonable({k: getattr(self, k) for k in ("status", "kind", "method", "instance", "theta",
                                                          "seconds", "reason", "where", "replay", "box", "recheck")})
        out["steps"] = [{k: v for k, v in to_jsonable(s).items() if k != "smt2"} for s in self.steps]
        out["queries"] = len(self.steps)
        out["unsat"] = sum(s.result == "unsat" for s in self.steps)
        return out


def combine(statuses: list[str]) -> str:
    for s in ("counterexample", "solution", "candidate", "unknown"):
        if s in statuses:
            return s
    return "proof"
