"""Question (a') for flag-reading scores and the candidate family of question (b).

The statements themselves run in tests/test_proofs.py (every registered statement); here the
constants that decide them are pinned (each fails when made a factor 2 stronger) and the
pieces that other code relies on are checked directly."""

import sympy

from proofs.statements import algebra
from proofs.statements import t2_one_head_per_layer_family as family
from proofs.statements import t2_two_heads_flag_scores as flag


def _spread_ok(case: str) -> bool:
    atoms = flag._case_atoms(case)
    with algebra.citing([flag.LEMMA]):
        ok, _ = algebra.certificate(flag.inequalities(case)["G5"], flag.spread(case), atoms, flag.delta, flag.INTERVAL)
    return ok


def test_spread_constant_is_pinned(monkeypatch):
    monkeypatch.setattr(flag, "C_SPREAD", flag.C_SPREAD // 2)  # rho_2 - rho_1 >= (1 - 61 kappa) S: stronger
    assert not _spread_ok("II")  # the case rho_1 < 0 needs C_SPREAD >= 108


def test_delta_interval_is_pinned(monkeypatch):
    monkeypatch.setattr(flag, "INTERVAL", sympy.Interval.Lopen(0, 2 * flag.DELTA_MAX))
    assert not _spread_ok("I")  # h0 < 0 near delta = 1/500: S is no longer large enough


def test_sink_constant_is_pinned():
    bound = flag.sink_bound()
    assert sympy.minimum(bound - (1 - flag.C_SINK * flag.delta), flag.delta, flag.INTERVAL) >= 0
    assert sympy.minimum(bound - (1 - flag.C_SINK // 2 * flag.delta), flag.delta, flag.INTERVAL) < 0


def test_the_premises_are_symmetric_in_the_heads_and_the_case_forms_are_the_lemma():
    forms = flag.case_lemma_forms("II")
    assert set(forms) >= {"delta + d_2", "delta - d_3", "delta + d3_2"}
    assert all(algebra.is_zero(lemma - form) for lemma, form in forms.values())


def test_the_flag_layer_rows_come_from_the_evaluator():
    net = flag.flag_layer()
    assert algebra.is_zero(flag.half_difference(net, 4, 1, 1) - flag.e0(1))
    assert algebra.is_zero(flag.half_difference(net, 3, 3, 3) - flag.e3(3))
    assert not algebra.is_zero(flag.half_difference(net, 3, 3, 1) - flag.e3(3))  # content key != trigger's own


def test_family_length_5_point_and_the_concave_phi():
    point = family.exact_point_at_length_5()
    assert point["holds"] and point["weights"] == [sympy.Rational(1, 64), sympy.Rational(1, 256), sympy.Rational(1, 512)]
    m = -sympy.Rational(3, 2)
    values = [family.phi(sympy.Integer(k)).subs(family.mu1, m) for k in (2, 3, 4)]  # P = 1: x = P + k
    assert abs(float(values[0] - values[1])) < 1e-12  # rows 2, 3 close at L = 5 (the exact point)
    assert float(values[1] - values[2]) > 1e-3  # the third ratio (row 4, L >= 6) cannot


def test_a_trigger_with_fixed_content_lets_flag_heads_avoid_the_sink():
    """The control behind the SMT result: with the trigger's content 0 (the SMT instances'
    convention) two flag-reading heads have the cancelling pair's error and no BOS mass above 1/2
    at any query i >= 1; a trigger with content 1 breaks it (the d3 rows of the proof)."""
    from constructions import cancelling_heads, reference, task

    beta = sympy.Symbol("beta", positive=True)
    net = cancelling_heads.build_trigger_parking(4, beta)
    for j in (2, 3, 4):
        contents = [[sympy.Symbol(f"c{p}", real=True) if p != j else sympy.Integer(0)] for p in range(1, 5)]
        X = task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))
        Y, patterns = reference.forward(net, X, "sympy")
        T = task.target(X, j)
        S = [sum(X[k][c] for k in range(1, j + 1)) for c in range(4)]
        factor = cancelling_heads.trigger_factor(beta, j)
        assert all(algebra.is_zero(Y[i][c] - T[i][c] - (factor * S[c] if i == j else 0)) for i in range(5) for c in range(4))
        masses = [P[i][0] for P in patterns[0] for i in range(1, 5)]
        assert all(sympy.limit(m, beta, sympy.oo) <= sympy.Rational(1, 2) for m in masses)
        X[j][task.CONTENT_START] = sympy.Integer(1)  # the trigger carries content 1
        Y, _ = reference.forward(net, X, "sympy")
        gap = Y[j][task.CONTENT_START] - task.target(X, j)[j][task.CONTENT_START]
        assert sympy.limit(gap, beta, sympy.oo) == -1 - sympy.Rational(1, j)


def test_the_finite_instance_lp_sees_the_parking_solution_only_when_the_trigger_content_is_fixed():
    """proofs.smt.two_heads_lp: the exact-LP error of the trigger-parking weights (type level) is
    the cancelling pair's on the SMT instances (trigger content 0) and large once the trigger
    carries a content type, while every BOS mass stays <= 1/2."""
    import numpy as np

    from proofs.smt.two_heads_lp import TypeInstance, bos_masses, min_error, parking, weights

    for trigger_contents, small in ((False, True), (True, False)):
        inst = TypeInstance(2, 4, trigger_contents)
        W = weights(inst, parking(inst))  # head 1 ignores the trigger itself, head 2 parks on it
        assert all(W[0, t, t] == np.exp(-12.0) and W[1, t, t] == np.exp(12.0) for t in inst.triggers)
        assert np.count_nonzero(W != 1) == 2 * len(inst.triggers)
        error = min_error(inst, W)
        assert bos_masses(inst, W).max() <= 0.5 + 1e-12
        assert (error < 1e-4) if small else (error > 1e-2), (trigger_contents, error)
