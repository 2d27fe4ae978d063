"""Exact LP certificates of the value-box steps (proofs/smt/farkas.py, linear.py): a correct
certificate passes, a corrupted one is rejected, a false bound cannot be certified, and a step
whose certificate does not check falls back to z3 instead of being called proved."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from proofs.smt import chain, encode, farkas
from proofs.smt.hardkill import RLIMIT, SAFETY_S, Z3Runner
from proofs.smt.linear import NotLinear, Row, parse_fact, parse_facts
from proofs.smt.instance import reference_instance
from proofs.smt.search import search_counterexample
from proofs.smt.verdict import LP_CHECKER, Z3_CHECKER

EPS = F(1, 100)
WORK = {"timeout_s": SAFETY_S, "rlimit": RLIMIT}  # a z3 work limit: the same verdict on every machine
INST = reference_instance(2, 4, EPS)


def _box(b=1, c=2, sign=1):
    rows = parse_facts(encode.box_lp(INST, EPS, b, c, sign).asserts)
    value, y, highs = farkas.certified_max(rows, "OBJ")
    return rows, value, y, highs


def _query_rows(bound, b=1, c=2, sign=1):
    return parse_facts(encode.box_bound_check(INST, EPS, b, c, sign, bound).asserts)


def test_linear_facts_parse_exactly():
    row = parse_fact("(<= (- (* 2.0 x) (/ 1.0 4.0)) (* (- 3.0) y))")
    assert row == Row((("x", F(2)), ("y", F(3))), "<=", F(1, 4))
    assert parse_fact("(> (+ x 1.0) 0.0)") == Row((("x", F(-1)),), "<", F(1))
    assert parse_fact("(= OBJ (- (- A_1 U_0_1) 1.0))") == Row((("A_1", F(-1)), ("OBJ", F(1)), ("U_0_1", F(1))), "=", F(-1))
    with pytest.raises(NotLinear):
        parse_fact("(<= (* x y) 1.0)")


def test_certificate_bound_matches_the_lp_optimum():
    rows, value, y, highs = _box()
    with Z3Runner(rlimit=RLIMIT) as runner:
        z3_opt = runner.maximize(encode.box_lp(INST, EPS, 1, 2, 1).text(), SAFETY_S).model["OBJ"]
    assert value >= z3_opt  # a certified bound is never below the true supremum
    assert abs(value - z3_opt) < F(1, 10 ** 6) and abs(float(value) - highs) < 1e-6


def test_correct_certificate_passes_and_corrupted_ones_are_rejected():
    rows, value, y, _ = _box()
    bound = chain._round_up(value, F(0))
    query = _query_rows(bound)
    cert = farkas.bound_certificate(y, len(query) - 1)
    assert farkas.check_infeasible(query, cert)
    big = max(y, key=lambda i: abs(y[i]))
    for changed in (y[big] + F(1, 10 ** 6), y[big] * 2, F(0)):
        bad = farkas.Certificate({**cert.multipliers, big: changed})
        assert not farkas.check_infeasible(query, bad)
    ineq = next(i for i in y if query[i].op != "=")
    assert not farkas.check_infeasible(query, farkas.Certificate({**cert.multipliers, ineq: -y[ineq]}))
    assert not farkas.check_infeasible(query, farkas.Certificate({**cert.multipliers, len(query): F(1)}))


def test_a_false_bound_cannot_be_certified():
    """Claim the bound 1/100 below the optimum: the query is satisfiable (z3 gives a point that
    satisfies every row exactly), so the exact check must reject the multipliers."""
    rows, value, y, _ = _box()
    bound = value - F(1, 100)
    query = _query_rows(bound)
    assert not farkas.check_infeasible(query, farkas.bound_certificate(y, len(query) - 1))
    with Z3Runner(rlimit=RLIMIT) as runner:
        ans = runner.check(encode.box_bound_check(INST, EPS, 1, 2, 1, bound).text(), SAFETY_S)
    assert ans.result == "sat"
    point = ans.model
    for row in query:
        lhs = sum((c * point.get(v, F(0)) for v, c in row.coeffs), F(0))
        assert lhs <= row.rhs if row.op == "<=" else (lhs < row.rhs if row.op == "<" else lhs == row.rhs)


def test_every_box_bound_of_a_proof_carries_a_checked_certificate():
    r = search_counterexample(INST, F(1, 2), "chain", **WORK)
    box = [s for s in r.steps if s.lemma == "LRA-box"]
    assert r.status == "proof" and box and all(s.checker == LP_CHECKER and s.result == "unsat" for s in box)


def test_a_certificate_that_does_not_check_falls_back_to_z3(monkeypatch):
    real = farkas.certified_max

    def corrupted(rows, objective):
        found = real(rows, objective)
        if isinstance(found, str):  # an unbounded side: no bound either way
            return found
        value, y, highs = found
        i = max(y, key=lambda k: abs(y[k]))
        return value, {**y, i: y[i] * 2}, highs

    monkeypatch.setattr(farkas, "certified_max", corrupted)
    inst = reference_instance(2, 3, EPS)
    r = search_counterexample(inst, F(1, 2), "chain", **WORK)
    box = [s for s in r.steps if s.lemma == "LRA-box"]
    assert box and all(s.checker == Z3_CHECKER for s in box)
    assert r.status == "proof"  # z3 still certifies each bound (an UNSAT of the closed LP)


def test_no_certificate_and_no_z3_answer_is_not_a_proof(monkeypatch):
    from proofs.smt import hardkill

    monkeypatch.setattr(farkas, "certified_max", lambda rows, objective: "failed")
    monkeypatch.setattr(hardkill.Z3Runner, "maximize",
                        lambda self, text, timeout_s: hardkill.Answer("unknown", 0.0, "planted"))
    r = search_counterexample(reference_instance(2, 3, EPS), F(1, 2), "chain", **WORK)
    assert r.status == "unknown" and "value box" in r.reason


def test_degenerate_combinations_are_refused():
    """A combination that sums to 0 <= 0 (or 0 <= positive) is no contradiction; only 0 <= negative,
    or 0 <= 0 with a strict row used with a positive multiplier, is."""
    x_le_0, minus_x_le_0 = Row((("x", F(1)),), "<=", F(0)), Row((("x", F(-1)),), "<=", F(0))
    x_lt_5, x_eq_0 = Row((("x", F(1)),), "<", F(5)), Row((("x", F(1)),), "=", F(0))
    x_lt_0, x_le_m1 = Row((("x", F(1)),), "<", F(0)), Row((("x", F(1)),), "<=", F(-1))
    rows = [x_le_0, minus_x_le_0, x_lt_5, x_eq_0, x_lt_0, x_le_m1]

    def check(y):
        return farkas.check_infeasible(rows, farkas.Certificate({i: F(v) for i, v in y.items()}))

    assert not check({})  # nothing combined: 0 <= 0
    assert not check({0: 1, 1: 1})  # x - x <= 0: 0 <= 0, no strict row
    assert not check({0: 1, 1: 1, 2: 0})  # a strict row with multiplier 0 is not used
    assert not check({3: -1, 0: 1})  # an equation with a negative multiplier: 0 <= 0
    assert not check({2: 1, 1: 1})  # x - x < 5: 0 < 5 holds
    assert check({4: 1, 1: 1})  # x < 0 and -x <= 0: 0 < 0
    assert check({5: 1, 1: 1})  # x <= -1 and -x <= 0: 0 <= -1
    assert check({5: 1, 3: -1})  # x <= -1 and x = 0: 0 <= -1
    assert not check({5: -1, 1: -1})  # negative multipliers on inequalities are refused
