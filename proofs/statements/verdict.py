"""The result of checking one statement: proved, refuted or unknown, with its evidence.

``proved`` means sympy closed every identity and inequality of the proof (an identity
simplified to 0, or an inequality was written as a sum of products of hypotheses that are
non-negative and the difference simplified to 0). A simplification that did not close is
``unknown``, never ``proved``. ``refuted`` carries a counterexample that was checked exactly.

A statement that cites lemmas (its module's ``CITES``, passed to ``timed``) is ``proved`` only
if every cited lemma is ``proved`` in the same run (``run_statuses``, kept by the registry,
which checks lemmas before the statements citing them). Otherwise it is ``unknown`` and its
evidence names the lemma. A check called outside a registry run has no proved lemmas, so a
citing statement is then ``unknown`` too: conditional proofs are never reported as proofs.

A statement with a Coq twin (``proofs.coq``) also carries the kernel check in ``kernel``; a failed
check turns its ``proved`` or ``refuted`` into ``unknown`` (``proofs.coq.overlay``).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator, Sequence

from .algebra import citing

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
    cites: tuple[str, ...] = ()  # the registered statements this one relies on (its module's CITES)
    # The Coq kernel check of the statement's twin (proofs/coq): None when it has no twin, else
    # "coq" (compiled, only the reals' axioms assumed), "not run" (no coqc) or "failed: <why>".
    kernel: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {STATUSES}, got {self.status!r}")

    @property
    def label(self) -> str:
        """The status with what it rests on: "proved (sympy + Coq)", "proved (sympy; Coq not run)",
        "unknown (Coq failed)"; the bare status for a statement without a Coq twin."""
        if self.kernel is None:
            return self.status
        if self.kernel == "coq":
            return f"{self.status} (sympy + Coq)" if self.status != "unknown" else "unknown (sympy; Coq passed)"
        if self.kernel == "not run":
            return f"{self.status} (sympy; Coq not run)"
        return f"{self.status} (Coq failed)"

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


_RUN: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("run", default=None)


@contextlib.contextmanager
def run_statuses() -> Iterator[dict[str, str]]:
    """One run: the final status of every statement checked so far in it, by name."""
    token = _RUN.set({})
    try:
        yield _RUN.get()
    finally:
        _RUN.reset(token)


def _citation_gaps(cites: Sequence[str]) -> list[str]:
    """One line per cited lemma that is not proved in the current run."""
    statuses = _RUN.get() or {}
    return [f"cites {c}, which is {statuses.get(c, 'not checked')} in this run" for c in cites
            if statuses.get(c) != "proved"]


def timed(name: str, statement: str, body: Callable[[Evidence], None], planted: bool = False,
          cites: Sequence[str] = ()) -> Verdict:
    """Run ``body(evidence)``, time it, and turn the evidence into a verdict; a statement whose
    cited lemmas are not all proved in this run is at best ``unknown``."""
    start = time.perf_counter()
    ev = Evidence()
    with citing(cites):
        body(ev)
    seconds = time.perf_counter() - start
    evidence = list(ev.lines)
    if ev.failures:
        evidence += [f"did not close: {f}" for f in ev.failures]
    gaps = _citation_gaps(cites)
    status = "unknown" if gaps and ev.status == "proved" else ev.status
    if cites:
        evidence.append("cites " + ", ".join(cites) + (": all proved in this run" if not gaps else ""))
        evidence += [f"did not close: {g}" for g in gaps]
    if ev.counterexample is not None:
        evidence.append(f"counterexample: {ev.counterexample}")
    return Verdict(name, status, " ".join(statement.split()), tuple(evidence), tuple(ev.cases),
                   round(seconds, 4), planted, tuple(cites))
