"""The result of checking one statement: proved, refuted or unknown, with its evidence.

``proved`` means sympy closed every identity and inequality of the proof (an identity
simplified to 0, or an inequality was written as a sum of products of hypotheses that are
non-negative and the difference simplified to 0). A simplification that did not close is
``unknown``, never ``proved``. ``refuted`` carries a counterexample that was checked exactly.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

STATUSES = ("proved", "refuted", "unknown")


@dataclass(frozen=True)
class Verdict:
    name: str  # the registry name (the module's name)
    status: str  # one of STATUSES
    statement: str  # the precise statement, one paragraph
    evidence: tuple[str, ...] = ()  # what closed (identities, certificates) or the counterexample
    cases: tuple[str, ...] = ()  # the cases / instances covered
    seconds: float = 0.0
    planted: bool = False  # a deliberately false statement, kept to show the checker can fail

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {STATUSES}, got {self.status!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class Evidence:
    """Collects the steps of one check; any failed step turns ``proved`` into ``unknown``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.failures: list[str] = []
        self.cases: list[str] = []
        self.counterexample: str | None = None

    def step(self, ok: bool, line: str) -> bool:
        """Record one closed (ok) or failed step."""
        (self.lines if ok else self.failures).append(line)
        return ok

    def note(self, line: str) -> None:
        """A step that is argued, not checked by sympy (a norm axiom, a definition)."""
        self.lines.append(f"not checked (argued): {line}")

    def case(self, line: str) -> None:
        self.cases.append(line)

    def refute(self, line: str) -> None:
        self.counterexample = line

    @property
    def status(self) -> str:
        if self.counterexample is not None:
            return "refuted"
        checked = [line for line in self.lines if not line.startswith("not checked")]
        return "proved" if not self.failures and checked else "unknown"


def timed(name: str, statement: str, body: Callable[[Evidence], None], planted: bool = False) -> Verdict:
    """Run ``body(evidence)``, time it, and turn the evidence into a verdict."""
    start = time.perf_counter()
    ev = Evidence()
    body(ev)
    seconds = time.perf_counter() - start
    evidence = list(ev.lines)
    if ev.failures:
        evidence += [f"did not close: {f}" for f in ev.failures]
    if ev.counterexample is not None:
        evidence.append(f"counterexample: {ev.counterexample}")
    return Verdict(name, ev.status, " ".join(statement.split()), tuple(evidence), tuple(ev.cases),
                   round(seconds, 4), planted)
