"""No test verdict may depend on the machine's speed (issue 20, item 1): every solver call a test
relies on runs under a work limit (z3's ``rlimit``, cvc5's ``rlimit-per``), the same count of
solver steps on every machine, with the wall-clock budget only as the outer safety net."""

from __future__ import annotations

import ast
from fractions import Fraction as F
from pathlib import Path

from proofs.smt import encode
from proofs.smt.classes import enumerate_classes
from proofs.smt.hardkill import RLIMIT, SAFETY_S, Z3Runner
from proofs.smt.instance import reference_instance
from proofs.smt.search import search_counterexample

TESTS = Path(__file__).parent
SOLVER_CALLS = {"search_counterexample", "theta_star", "cancelling_heads", "two_heads_capped", "Z3Runner",
                "Cvc5Runner"}
# tests whose solver calls assert only what holds at any speed (the hard kill; the size table's
# "proof or unknown" at 60 s, a timing benchmark), or that fail before any solver runs
CLOCK_ONLY = {"test_hard_kill_gives_unknown", "test_bench_chain_size_table", "test_recheck_needs_the_solver",
              "test_cli_rejects_a_missing_second_solver"}
CLI_SEARCH_NEEDS = "--rlimit"


def _calls_without_work_limit(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    bad = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or fn.name in CLOCK_ONLY:
            continue
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            name = getattr(call.func, "id", getattr(call.func, "attr", None))
            limited = any(k.arg == "rlimit" or k.arg is None for k in call.keywords)  # rlimit= or **WORK
            if name == "Cvc5Runner":
                limited = limited or bool(call.args)
            if name in SOLVER_CALLS and not limited:
                bad.append(f"{path.name}:{call.lineno} {fn.name}: {name}(...) without a work limit")
            is_cli_search = (name == "main" and call.args and isinstance(call.args[0], ast.List)
                             and any(isinstance(e, ast.Constant) and e.value == "search" for e in call.args[0].elts))
            if is_cli_search and not any(isinstance(e, ast.Constant) and e.value == CLI_SEARCH_NEEDS
                                         for e in call.args[0].elts):
                bad.append(f"{path.name}:{call.lineno} {fn.name}: sinks search without {CLI_SEARCH_NEEDS}")
    return bad


def test_every_solver_call_in_the_tests_has_a_work_limit(tmp_path):
    """Scans every test file: a solver call without ``rlimit`` gets its verdict from the clock.
    The scan finds the calls it must: planted calls without a limit are reported."""
    bad = [line for path in sorted(TESTS.rglob("test_*.py")) for line in _calls_without_work_limit(path)]
    assert not bad, "\n".join(bad)
    planted = tmp_path / "test_planted.py"
    planted.write_text("def test_x():\n    search_counterexample(inst, None, 'chain', timeout_s=10)\n"
                       "    with Z3Runner() as r:\n        pass\n    main(['search', '--length', '3'])\n"
                       "    search_counterexample(inst, None, 'chain', **WORK)\n")
    assert len(_calls_without_work_limit(planted)) == 3


def test_the_work_limit_not_the_clock_decides_an_unknown():
    """The same query: a limit below what it needs gives unknown (z3's resource reason) however
    long the clock allows; under RLIMIT it is decided, with the same work count on each run."""
    inst = reference_instance(2, 3, F(1, 100))
    text = encode.pattern_script(inst, inst.eps, enumerate_classes(inst)).text()
    with Z3Runner(rlimit=100) as runner:
        starved = runner.check(text, SAFETY_S)
    assert starved.result == "unknown" and starved.reason in ("max. resource limit exceeded", "canceled")
    with Z3Runner(rlimit=RLIMIT) as runner:
        first, second = runner.check(text, SAFETY_S), runner.check(text, SAFETY_S)
    assert first.result == second.result == "sat" and first.work == second.work
    assert 100 < first.work < RLIMIT


def test_a_search_under_a_work_limit_repeats_step_for_step():
    """Verdict, answers and work counts of every step are the same on a second run (what makes a
    verdict machine-independent); the counts are recorded on the steps."""
    inst = reference_instance(2, 3, F(1, 100))
    runs = [search_counterexample(inst, F(1, 2), "chain", SAFETY_S, rlimit=RLIMIT) for _ in range(2)]
    assert runs[0].status == runs[1].status == "proof"
    steps = [[(s.lemma, s.where, s.result, s.work) for s in r.steps] for r in runs]
    assert steps[0] == steps[1]
    assert all(s.work is not None for s in runs[0].steps if s.checker == "z3")
