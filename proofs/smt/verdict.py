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
    recheck_work: int | None = None  # the second solver's resource count (cvc5's units), when asked


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
    rlimit: int | None = None  # z3's work limit per query (None: the seconds alone decided)
    safety_net: list[str] = field(default_factory=list)  # steps whose unknown came from the clock

    def work(self) -> dict[str, Any]:
        """How close the search came to its work limit: the most z3 units a decided query (sat /
        unsat) needed and where, how many queries the work limit stopped (``at_limit``, each
        unknown) and how many the clock stopped (``safety_net``)."""
        decided = [(s.work, f"{s.lemma} at {s.where}") for s in self.steps
                   if s.work is not None and s.result in ("sat", "unsat")]
        units, at = max(decided, key=lambda w: w[0]) if decided else (None, None)
        stopped = sum(s.result == "unknown" and s.work is not None and bool(self.rlimit) and s.work >= self.rlimit
                      for s in self.steps)
        return {"max_units": units, "at": at, "limit": self.rlimit, "at_limit": stopped,
                "safety_net": len(self.safety_net)}

    @property
    def proved(self) -> bool:
        return self.status == "proof"

    def summary(self) -> dict[str, Any]:
        from constructions.files import to_jsonable

        out = to_jsonable({k: getattr(self, k) for k in ("status", "kind", "method", "instance", "theta",
                                                          "seconds", "reason", "where", "replay", "box", "recheck",
                                                          "rlimit", "safety_net")})
        out["steps"] = [{k: v for k, v in to_jsonable(s).items() if k != "smt2"} for s in self.steps]
        out["queries"] = len(self.steps)
        out["unsat"] = sum(s.result == "unsat" for s in self.steps)
        out["work"] = self.work()
        return out


def combine(statuses: list[str]) -> str:
    for s in ("counterexample", "solution", "candidate", "unknown"):
        if s in statuses:
            return s
    return "proof"
