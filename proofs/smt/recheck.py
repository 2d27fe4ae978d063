"""A second solver for every step: ``search --recheck cvc5`` re-solves each step's SMT-LIB query
with cvc5 (optional extra ``.[smt]``) in a hard-killed worker process and records, per step,
who vouches for its answer:

- ``z3, cvc5 agree`` (or ``LP certificate ..., cvc5 agree``): both give the same answer;
- ``z3 only (cvc5 unknown: ...)``: cvc5 gave no answer in its budget (cvc5 is incomplete on
  nonlinear real arithmetic and may time out): the step stands on z3 (or the certificate) alone;
- ``DISAGREE``: cvc5 says the opposite. That is a failed check: the verdict becomes ``unknown``
  with the step named, never ``proof``.

cvc5 reads the same text z3 read (the script, ``(set-logic ALL)``, ``(check-sat)``), as a file
written by ``--emit-smt2`` would give it. ``rlimit`` (cvc5's ``rlimit-per``, its own resource
units, not z3's) makes cvc5's answer machine-independent as ``hardkill.RLIMIT`` does z3's.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time

from .hardkill import Answer, Worker
from .verdict import SearchResult

SOLVERS = ("cvc5",)
DECIDED = ("sat", "unsat")
# cvc5 resource units per query for callers whose verdicts must not depend on the machine: 14x
# the most a step of tests/test_smt_recheck.py needs (142k units, cvc5 1.4.2) and 5.9x the most a
# step of the smt part's recheck (K = 2, length 6) needs (337,073 units, an NRA class query)
CVC5_RLIMIT = 2_000_000


def available(solver: str) -> bool:
    return solver in SOLVERS and importlib.util.find_spec(solver) is not None


def _cvc5_answer(text: str, timeout_s: float, rlimit: int | None) -> tuple[str, float, str, int]:  # pragma: no cover
    import cvc5

    solver = cvc5.Solver(cvc5.TermManager())
    solver.setOption("tlimit-per", str(max(1, int(timeout_s * 1000))))
    if rlimit:
        solver.setOption("rlimit-per", str(rlimit))
    parser = cvc5.InputParser(solver)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, "(set-logic ALL)\n" + text + "(check-sat)\n", "query")
    symbols = parser.getSymbolManager()
    start, out = time.perf_counter(), ""
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        out += command.invoke(solver, symbols)
    answer = out.strip().splitlines()[-1] if out.strip() else "unknown"
    work = int(dict(solver.getStatistics()).get("resource::resourceUnitsUsed", {}).get("value", 0))
    return (answer if answer in DECIDED else "unknown"), time.perf_counter() - start, \
        "" if answer in DECIDED else answer, work


def _serve(inp, out) -> None:  # pragma: no cover - runs in the child
    for line in inp:
        text, timeout_s, rlimit = json.loads(line)
        try:
            result, seconds, reason, work = _cvc5_answer(text, timeout_s, rlimit)
        except Exception as e:  # a parse or option error is an answer of its own, never a pass
            result, seconds, reason, work = "error", 0.0, f"{type(e).__name__}: {e}", 0
        out.write(json.dumps([result, seconds, reason, {}, work]) + "\n")
        out.flush()


class Cvc5Runner(Worker):
    module = "proofs.smt.recheck"

    def __init__(self, rlimit: int | None = None) -> None:
        super().__init__()
        self.rlimit = rlimit

    def check(self, text: str, timeout_s: float) -> Answer:
        return self._one((text, timeout_s, self.rlimit), timeout_s)


def verdict_of(first: str, second: Answer, checker: str) -> tuple[str, bool]:
    """(the step's new checker label, whether the two solvers contradict each other)."""
    if second.result not in DECIDED:
        return f"{checker} only (cvc5 {second.result}: {second.reason or 'no answer'})", False
    if second.result == first:
        return f"{checker}, cvc5 agree", False
    return f"DISAGREE: {checker} {first}, cvc5 {second.result}", True


def recheck(result: SearchResult, timeout_s: float, solver: str = "cvc5", rlimit: int | None = None) -> dict:
    """Re-solve every step with a definite answer and a kept query; update each step's checker
    and, on a disagreement, the verdict. Returns the tally (also stored on ``result.recheck``).
    ``rlimit``: cvc5's resource limit per query (None: the seconds alone)."""
    tally = {"solver": solver, "agree": 0, "unknown": 0, "disagree": 0, "not rechecked": 0, "seconds": 0.0,
             "rlimit": rlimit, "work_max": 0, "safety_net": 0}
    start = time.perf_counter()
    with Cvc5Runner(rlimit) as runner:
        for step in result.steps:
            if step.result not in DECIDED or step.smt2 is None:
                tally["not rechecked"] += 1
                continue
            second = runner.check(step.smt2, timeout_s)
            step.recheck, step.recheck_work = second.result, second.work
            step.checker, contradiction = verdict_of(step.result, second, step.checker)
            key = "disagree" if contradiction else ("agree" if second.result in DECIDED else "unknown")
            tally[key] += 1
            tally["work_max"] = max(tally["work_max"], second.work or 0)
            # cvc5 names no reason for a stop: under a work limit, one at the clock is the safety net
            clock = second.reason.startswith("hard-kill") or second.seconds >= timeout_s
            tally["safety_net"] += bool(rlimit and key == "unknown" and clock)
            if contradiction and result.status in ("proof", "counterexample", "solution"):
                result.reason = f"recheck failed: {step.checker} at {step.lemma} {step.where}"
                result.status = "unknown"
    tally["seconds"] = round(time.perf_counter() - start, 3)
    result.recheck = tally
    return tally


if __name__ == "__main__":  # pragma: no cover
    _serve(sys.stdin, sys.stdout)
