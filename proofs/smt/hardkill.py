"""Run z3 on SMT-LIB text in a child process that is killed when it overruns its budget.

z3's own ``timeout`` is advisory: the feasibility study saw 60 s limits overrun by up to 16 s.
So every query runs in a worker process; the parent waits ``budget + grace`` seconds and then
kills the worker (answer ``unknown``, reason ``hard-kill``) and starts a fresh one for the next
query. A worker is reused between queries because starting one (importing z3) costs ~0.3 s.

A wall-clock budget makes the answer depend on the machine's speed (a query that answers in 2 s
idle gave ``unknown`` at 10 s under load). ``Z3Runner(rlimit=N)`` also gives every check z3's
resource limit ``rlimit`` (a count of solver steps, the same on every machine for the same query,
seed and z3 version): that limit decides an ``unknown``, and the wall-clock budget stays only as
the outer safety net against a hang. ``Answer.work`` is the resource count a check used.

The answer of a query is ``Answer(result, seconds, reason, model, work)`` with ``result`` one of
"sat" / "unsat" / "unknown"; ``model`` maps constant names to exact ``Fraction``s, or to
decimal strings (40 digits) for irrational algebraic numbers, which nlsat models can contain.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

GRACE_S = 1.0  # how long past its own timeout z3 may take to answer before it is killed
# The work budget of callers whose verdicts must not depend on the machine (the tests, the smt
# part of ``sinks reproduce``, theta_star): z3 resource units per check, 4.85x the most any
# decided query of the test suite needs (2,059,891: the margin re-solve that confirms
# theta* < 1 - 2 eps at K = 2, length 3, before the trigger; tests/test_smt_thresholds.py) and
# 2.5x the most one of that part needs (3,962,755: a query of theta*'s g = 2 step at length 6,
# a step that ends candidate; outside theta* the part's queries need at most 886,389;
# proofs/smt/README.md). SAFETY_S seconds per check is only the net against a hang: 40x what the
# 2.06M query took at load ~9 (14 s), and above what a query stopped at RLIMIT takes (a query run
# to 2 x RLIMIT took 275-420 s at load ~9.5), so that the work limit, not the clock, decides every
# unknown; where the clock fires anyway, the callers report it (``clock_fired``).
RLIMIT = 10_000_000
SAFETY_S = 600.0


# z3's reasons when its own timer stopped a check (with rlimit also set, "canceled" can mean either)
CLOCK_REASONS = ("timeout", "canceled")


@dataclass
class Answer:
    result: str
    seconds: float
    reason: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    work: int | None = None  # z3's resource count for this check (deterministic; None: not measured)


def clock_fired(ans: Answer, rlimit: int | None) -> bool:
    """Whether an unknown came from the wall clock (z3's timer or the hard kill), not from the work
    limit or z3's incompleteness. Under a work limit that is the safety net firing: the answer
    then depends on the machine's speed, so the callers report it (as unknown, never more)."""
    if ans.result != "unknown":
        return False
    if ans.reason.startswith("hard-kill"):
        return True
    return ans.reason in CLOCK_REASONS and not (rlimit and ans.work is not None and ans.work >= rlimit)


def _value(v) -> Any:
    import z3

    if z3.is_rational_value(v):
        return [v.numerator_as_long(), v.denominator_as_long()]
    if z3.is_algebraic_value(v):
        return v.approx(40).as_decimal(40).rstrip("?")
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return str(v)


def _work(solver) -> int:  # pragma: no cover - runs in the child
    """The resource count so far of ``solver``'s context (cumulative over its checks)."""
    stats = solver.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


def _serve(inp, out) -> None:  # pragma: no cover - runs in the child
    """Answer JSON-line jobs from ``inp`` on ``out`` until end of input."""
    import z3

    def send(*answer) -> None:
        out.write(json.dumps(answer) + "\n")
        out.flush()

    for line in inp:
        text, timeout_s, checks, seed, preprocess, rlimit = json.loads(line)
        if checks == "maximize":
            send(*_maximize(text, timeout_s, rlimit))
            continue
        # a fresh context per job: z3 answered the same LRA query in 0.6 s in a fresh context and
        # timed out after earlier jobs in a shared one
        ctx = z3.Context()
        if preprocess:  # equation solving first: closed LPs that stalled z3's simplex take ~1 s
            tactics = [z3.Tactic(t, ctx=ctx) for t in ("simplify", "propagate-values", "solve-eqs", "smt")]
            solver = z3.Then(*tactics).solver()
        else:
            solver = z3.Solver(ctx=ctx)
        solver.set("timeout", max(1, int(timeout_s * 1000)))
        if rlimit:  # per check (z3 adds the limit to the count at each check)
            solver.set("rlimit", rlimit)
        if seed:
            solver.set("random_seed", seed)
        start = time.perf_counter()
        try:
            solver.from_string(text)
        except z3.Z3Exception as e:
            send("error", time.perf_counter() - start, f"parse error: {e}", {}, 0)
            continue
        for extra in checks or [None]:
            start = time.perf_counter()
            if extra is not None:
                solver.push()
                try:
                    solver.from_string(extra)
                except z3.Z3Exception as e:
                    send("error", 0.0, f"parse error: {e}", {}, 0)
                    solver.pop()
                    continue
            before = _work(solver)
            r = solver.check()
            seconds = time.perf_counter() - start
            model, reason = {}, ""
            if r == z3.sat:
                m = solver.model()
                model = {d.name(): _value(m[d]) for d in m.decls() if d.arity() == 0}
            elif r == z3.unknown:
                reason = solver.reason_unknown()
            send(str(r), seconds, reason, model, _work(solver) - before)
            if extra is not None:
                solver.pop()


def _maximize(text: str, timeout_s: float, rlimit: int | None):  # pragma: no cover - runs in the child
    """Maximise the constant ``OBJ`` subject to ``text`` (linear); value "oo" when unbounded."""
    import z3

    ctx = z3.Context()
    opt = z3.Optimize(ctx=ctx)
    opt.set("timeout", max(1, int(timeout_s * 1000)))
    if rlimit:
        opt.set("rlimit", rlimit)
    start = time.perf_counter()
    opt.from_string(text)
    handle = opt.maximize(z3.Real("OBJ", ctx))
    r = opt.check()
    seconds, work = time.perf_counter() - start, _work(opt)
    if r != z3.sat:
        return (str(r), seconds, opt.reason_unknown() if r == z3.unknown else "", {}, work)
    upper = handle.upper()
    if z3.is_rational_value(upper):
        return ("sat", seconds, "", {"OBJ": _value(upper)}, work)
    return ("sat", seconds, "", {"OBJ": str(upper)}, work)  # "oo" or an infinitesimal expression


def _decode(model: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, v in model.items():
        out[name] = Fraction(v[0], v[1]) if isinstance(v, list) else v
    return out


class Worker:
    """A reusable solver worker process (``python -m <module>``) that answers JSON-line jobs
    and is killed when an answer overruns its budget. Use as a context manager."""

    module = "proofs.smt.hardkill"

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        self._proc = None
        self.kills = 0

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", self.module], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1, env=env,
        )

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _send(self, job) -> None:
        if not self._alive():
            self._start()
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()

    def _recv(self, wait_s: float):
        """The next answer line, or None when none came within ``wait_s`` seconds."""
        ready, _, _ = select.select([self._proc.stdout], [], [], wait_s)
        if not ready:
            return None
        line = self._proc.stdout.readline()
        return json.loads(line) if line else None

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(5)
        self._proc = None

    def _one(self, job, timeout_s: float) -> Answer:
        """Send one job and wait for its answer; past the budget the worker is killed."""
        start = time.perf_counter()
        self._send(job)
        got = self._recv(timeout_s + self.grace_s + 1.0)  # + 1 s: a fresh worker's start
        if got is None:
            self._kill()
            self.kills += 1
            return Answer("unknown", time.perf_counter() - start, "hard-kill")
        r, seconds, reason, model, *work = got
        return Answer(r, seconds, reason, _decode(model), work[0] if work else None)

    def close(self) -> None:
        if self._alive():
            try:
                self._proc.stdin.close()
                self._proc.wait(2)
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


class Z3Runner(Worker):
    """The hard-killed z3 worker; ``rlimit`` (z3 resource units per check, None: none) makes
    every answer independent of the machine's speed, the seconds only a safety net."""

    def __init__(self, grace_s: float = GRACE_S, rlimit: int | None = None) -> None:
        super().__init__(grace_s)
        self.rlimit = rlimit

    def check(self, text: str, timeout_s: float, seed: int = 0, preprocess: bool = False) -> Answer:
        """Solve one SMT-LIB script (declarations and assertions, no check-sat); ``preprocess``
        runs simplify / propagate-values / solve-eqs before the SMT core (for linear queries)."""
        return self.check_each(text, [None], timeout_s, seed, preprocess)[0]

    def maximize(self, text: str, timeout_s: float) -> Answer:
        """LP: the supremum of the constant ``OBJ`` under ``text`` (model {"OBJ": Fraction or
        "oo"}). Used only to *find* bounds; every bound used in a proof is then re-checked by
        an UNSAT query."""
        return self._one((text, timeout_s, "maximize", 0, False, self.rlimit), timeout_s)

    def check_each(self, base: str, extras: list[str | None], timeout_s: float, seed: int = 0,
                   preprocess: bool = False) -> list[Answer]:
        """Incremental solving: assert ``base`` once, then check ``base + extra`` for each extra
        (push / pop). Each check has its own budget; after a hard kill the remaining checks are
        answered ``unknown`` with reason ``hard-kill`` (skipped), never guessed."""
        start = time.perf_counter()
        self._send((base, timeout_s, extras if extras != [None] else None, seed, preprocess, self.rlimit))
        answers = []
        for _ in extras:
            # parsing ``base`` (and a fresh worker's start) count against the first budget
            got = self._recv(timeout_s + self.grace_s + (1.0 if not answers else 0.0))
            if got is None:
                self._kill()
                self.kills += 1
                waited = time.perf_counter() - start
                answers.append(Answer("unknown", waited, "hard-kill"))
                break
            r, seconds, reason, model, work = got
            if r == "error":
                raise ValueError(reason)
            answers.append(Answer(r, seconds, reason, _decode(model), work))
            start = time.perf_counter()
        while len(answers) < len(extras):
            answers.append(Answer("unknown", 0.0, "hard-kill (earlier check in the batch was killed)"))
        return answers


if __name__ == "__main__":  # pragma: no cover
    _serve(sys.stdin, sys.stdout)
