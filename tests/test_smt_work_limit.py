"""No verdict may depend on the machine's speed: every solver call a test, a
part of ``sinks reproduce`` or a library caller in proofs/ relies on runs under a work limit (z3's
``rlimit``, cvc5's ``rlimit-per``), the same count of solver steps on every machine, with the
wall-clock budget only as the outer safety net."""

from __future__ import annotations

import ast
import inspect
from fractions import Fraction as F
from pathlib import Path

from proofs.smt import encode, session
from proofs.smt.classes import enumerate_classes
from proofs.smt.hardkill import RLIMIT, SAFETY_S, Answer, Z3Runner, clock_fired
from proofs.smt.instance import reference_instance
from proofs.smt.multihead import cancelling_heads
from proofs.smt.search import search_counterexample
from proofs.smt.theta_star import theta_star

TESTS = Path(__file__).parent
# the non-test callers: the CLI and the parts of ``sinks reproduce``, and the library's own callers
SOURCES = (TESTS.parent / "empirical", TESTS.parent / "proofs")
SOLVER_CALLS = {"search_counterexample", "theta_star", "cancelling_heads", "two_heads_capped", "Z3Runner",
                "Cvc5Runner"}
# tests whose solver calls assert only what holds at any speed (the hard kill; the size table's
# "proof or unknown" at 60 s, a timing benchmark), or that fail before any solver runs
CLOCK_ONLY = {"test_hard_kill_gives_unknown", "test_bench_chain_size_table", "test_recheck_needs_the_solver",
              "test_cli_rejects_a_missing_second_solver"}
CLI_SEARCH_NEEDS = "--rlimit"
WORK = {"timeout_s": SAFETY_S, "rlimit": RLIMIT}
EPS = F(1, 100)


def _calls_without_work_limit(path: Path, exempt: set[str] = CLOCK_ONLY, source: bool = False) -> list[str]:
    """Solver calls in ``path`` that pass no work limit. In a test, ``**WORK`` counts as one; in
    a ``source`` file a recheck must name cvc5's limit (``recheck_rlimit=``) itself."""
    tree = ast.parse(path.read_text())
    bad = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or fn.name in exempt:
            continue
        for call in ast.walk(fn):
            if not isinstance(call, ast.Call):
                continue
            name = getattr(call.func, "id", getattr(call.func, "attr", None))
            keywords = {k.arg: k.value for k in call.keywords}
            limited = "rlimit" in keywords or None in keywords  # rlimit= or **WORK
            if name == "Cvc5Runner":
                limited = limited or bool(call.args)
            if name in SOLVER_CALLS and not limited:
                bad.append(f"{path.name}:{call.lineno} {fn.name}: {name}(...) without a work limit")
            explicit = keywords.get("rlimit")
            if name in SOLVER_CALLS and isinstance(explicit, ast.Constant) and explicit.value is None:
                bad.append(f"{path.name}:{call.lineno} {fn.name}: {name}(..., rlimit=None)")
            if "recheck_with" in keywords and not ("recheck_rlimit" in keywords or (None in keywords and not source)):
                bad.append(f"{path.name}:{call.lineno} {fn.name}: a recheck without cvc5's work limit")
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


def test_every_solver_call_of_the_parts_and_the_library_has_a_work_limit(tmp_path):
    """The same scan over empirical/ (the CLI, the parts of ``sinks reproduce``) and proofs/: no
    caller leaves a verdict to the clock, and the library entry point the parts call for theta*
    defaults to the work limit. The scan finds a part's call without one (planted)."""
    bad = [line for root in SOURCES for path in sorted(root.rglob("*.py"))
           for line in _calls_without_work_limit(path, exempt=set(), source=True)]
    assert not bad, "\n".join(bad)
    defaults = inspect.signature(theta_star).parameters
    assert defaults["rlimit"].default == RLIMIT and defaults["timeout_s"].default == SAFETY_S
    planted = tmp_path / "planted_part.py"
    planted.write_text("def run(results_dir, quick, device):\n"
                       "    theta_star(inst, timeout_s=10, iterations=5)\n"
                       "    cancelling_heads(inst, rlimit=None)\n"
                       "    search_counterexample(inst, theta, 'chain', **LIMITS, recheck_with='cvc5')\n"
                       "    search_counterexample(inst, theta, 'chain', **LIMITS, recheck_rlimit=CVC5_RLIMIT)\n")
    assert len(_calls_without_work_limit(planted, exempt=set(), source=True)) == 3


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


def _answers(result) -> list[tuple]:
    return [(s.lemma, s.where, s.result, s.work) for s in result.steps]


def test_the_smt_parts_work_limit_decides_and_is_pinned_by_a_factor_two():
    """The smt part's proof claim (``_proof_claim``; K = 2, length 3, the part's small-instance
    path): under the part's limit it is proved, each query's units and the limit recorded. A limit
    of half the largest query's need turns that query unknown by the work limit (z3's resource
    reason; the clock did not fire); twice that need gives the same verdict, answers and counts,
    step for step: the limit, not the machine's speed, decides."""
    from empirical.pipeline.parts import smt

    claim, summary, r = smt._proof_claim(2, 3, EPS)
    assert claim["verdict"] == "proved" and r.rlimit == smt.LIMITS["rlimit"] == RLIMIT
    work = r.work()
    need, where = work["max_units"], work["at"]
    assert summary["work"] == work and work["at_limit"] == 0 and f"(limit {RLIMIT})" in claim["evidence"]
    assert claim["command"].endswith(f"--rlimit {RLIMIT} --timeout {SAFETY_S:g}")  # the command reproduces it
    half = smt._proof_claim(2, 3, EPS, limits={"timeout_s": SAFETY_S, "rlimit": need // 2})[2]
    starved = next(s for s in half.steps if f"{s.lemma} at {s.where}" == where)  # its first try
    assert starved.result == "unknown" and starved.work >= need // 2 and not half.safety_net
    assert starved.reason in ("max. resource limit exceeded", "canceled") and half.work()["at_limit"] >= 1
    double = smt._proof_claim(2, 3, EPS, limits={"timeout_s": SAFETY_S, "rlimit": 2 * need})[2]
    assert double.status == "proof" and _answers(double) == _answers(r)


def test_a_one_query_verdict_turns_unknown_below_its_need_and_stays_above():
    """The two-head control is one z3 query: with half its need the part's verdict would be
    unknown, with twice its need it is the same replayed solution as under RLIMIT."""
    inst = reference_instance(2, 4, F(1, 10))
    full = cancelling_heads(inst, **WORK)
    assert full["status"] == "solution" and full["rlimit"] == RLIMIT and 0 < full["work"] < RLIMIT
    half = cancelling_heads(inst, timeout_s=SAFETY_S, rlimit=full["work"] // 2)
    assert half["status"] == "unknown" and not half["safety_net"]
    double = cancelling_heads(inst, timeout_s=SAFETY_S, rlimit=2 * full["work"])
    assert double["status"] == "solution" and double["work"] == full["work"]


def test_theta_star_runs_under_the_work_limit_and_records_each_steps_work():
    """Each bisection step records the most units one of its queries used; the table's limit is
    the one given (the default is RLIMIT: the scan test above)."""
    ts = theta_star(reference_instance(2, 3, EPS, covered="pre_trigger"), iterations=1, **WORK)
    assert [(e["g"], e["status"]) for e in ts.iterations] == [("8", "proof"), ("4", "proof")]
    assert ts.theta_proved == "24/25" and ts.rlimit == RLIMIT
    assert all(0 < e["work_max"] < RLIMIT and e["at_limit"] == 0 for e in ts.iterations)
    assert ts.work_max == max(e["work_max"] for e in ts.iterations)
    assert ts.queries == sum(e["queries"] for e in ts.iterations) > 0 and all(e["work_at"] for e in ts.iterations)


def test_a_clock_stop_under_a_work_limit_is_reported_and_never_a_finding(monkeypatch):
    """The safety net's accounting, without waiting for a clock: an unknown is the clock's (z3's
    timer, the hard kill) unless the work limit was reached. Trap F3 with its two re-solves
    answered as stopped by the clock is reported unknown (not candidate), the stopped steps listed,
    and the part's evidence says the safety net fired."""
    from empirical.pipeline.parts import smt

    assert clock_fired(Answer("unknown", 1.0, "timeout", work=10), 100)
    assert clock_fired(Answer("unknown", 1.0, "canceled", work=10), 100)
    assert clock_fired(Answer("unknown", 1.0, "hard-kill"), 100)
    assert not clock_fired(Answer("unknown", 1.0, "canceled", work=100), 100)  # the work limit
    assert not clock_fired(Answer("unknown", 1.0, "max. resource limit exceeded", work=100), 100)
    assert not clock_fired(Answer("unknown", 1.0, "(incomplete (theory arithmetic))", work=10), 100)
    assert not clock_fired(Answer("sat", 1.0, "", work=10), 100)
    stopped = {"ideal-values-solve", "pattern-resolve"}
    run = session.Session.run

    def clock_stops_resolves(self, text, lemma, where, *args, **kwargs):
        if lemma not in stopped:
            return run(self, text, lemma, where, *args, **kwargs)
        real, self.runner.check = self.runner.check, lambda *a, **k: Answer("unknown", SAFETY_S, "timeout", work=17)
        try:
            return run(self, text, lemma, where, *args, **kwargs)
        finally:
            self.runner.check = real

    monkeypatch.setattr(session.Session, "run", clock_stops_resolves)
    r = search_counterexample(reference_instance(2, 2, F(1, 10)), F(1, 2), "pattern", **WORK)
    assert r.status == "unknown" and "wall-clock safety net fired" in r.reason
    assert r.safety_net and all(s.split(" at ")[0] in stopped for s in r.safety_net)
    assert r.work()["safety_net"] == len(r.safety_net) and "safety net fired" in smt.work_note(r)
