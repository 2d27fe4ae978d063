"""The multi-head constructions that refute T2 (non-trigger) and question (a): exact checks,
broken variants that the verifiers must reject, the float length check and the CLI."""

import dataclasses
from fractions import Fraction

import pytest

from constructions import cancelling_heads, catalogue, reference, task, verify_multihead
from constructions.errors import BadInput

BETA = Fraction(10)
TWO_VALUES = (Fraction(-1), Fraction(1, 2))


def test_cancelling_pair_is_exact_in_q_e_beta():
    v = verify_multihead.verify_cancelling(cancelling_heads.build(4, BETA), BETA, task.TaskConfig(d=4, L=4))
    assert v.ok, v.failure
    assert v.sequences == 128 and v.details["max_bos_mass_off_trigger"] == 0.5
    assert v.details["max_bos_mass_at_trigger"] > 0.9999  # head 2 parks on BOS at the trigger only
    assert v.worst_error_float == pytest.approx(float(max(cancelling_heads.worst_error_terms(BETA, 4))), rel=1e-12)


def test_cancelling_stack_solves_the_residual_task_like_the_layer():
    cfg = task.TaskConfig(d=4, L=4, residual=True)
    v = verify_multihead.verify_cancelling(cancelling_heads.build_stack(4, BETA), BETA, cfg, TWO_VALUES)
    assert v.ok, v.failure
    assert len(cancelling_heads.build_stack(4, BETA).layers) == 2


def test_verifier_rejects_a_pair_that_does_not_cancel():
    net = cancelling_heads.build(4, BETA)
    layer = net.layers[0]
    half = tuple(tuple(x / 2 if c >= 4 else x for c, x in enumerate(row)) for row in layer.W_O)  # W_O = [I, -I/2]
    broken = dataclasses.replace(net, layers=(dataclasses.replace(layer, W_O=half),))
    v = verify_multihead.verify_cancelling(broken, BETA, task.TaskConfig(d=4, L=4), TWO_VALUES)
    assert not v.ok and "closed form" in v.failure


def test_verifier_rejects_a_wrong_trigger_score():
    net = cancelling_heads.build(4, BETA)
    layer = net.layers[0]
    W_Q = [list(r) for r in layer.W_Q[1]]
    W_Q[0][task.TRIGGER_FLAG] = 2 * BETA
    broken = dataclasses.replace(net, layers=(dataclasses.replace(layer, W_Q=(layer.W_Q[0], reference.as_matrix(W_Q))),))
    v = verify_multihead.verify_cancelling(broken, BETA, task.TaskConfig(d=4, L=4), TWO_VALUES)
    assert not v.ok and "BOS weight" in v.failure


@pytest.mark.parametrize("L, heads, largest", [(4, 2, "3/4"), (5, 4, "2/3")])
def test_interpolating_heads_have_zero_error(L, heads, largest):
    net = cancelling_heads.build_interpolating(4, L)
    assert net.layers[0].heads == heads
    v = verify_multihead.verify_zero_error(net, task.TaskConfig(d=4, L=L), TWO_VALUES)
    assert v.ok, v.failure
    assert v.largest_bos_weight == largest


def test_interpolating_weights_are_the_exact_solution_and_two_heads_fail_at_length_5():
    n = cancelling_heads.interpolation_weights(4, (1, 6))
    assert n == (Fraction(12, 5), Fraction(-12, 5))
    assert sum(n) == 0 and all(sum(c / (r + j) for c, r in zip(n, (1, 6))) == Fraction(1, j) for j in (2, 3))
    with pytest.raises(BadInput, match="no unique exact interpolation"):
        cancelling_heads.interpolation_weights(5, (1, 6))
    net = cancelling_heads.build_interpolating(4, 5, (1, 6, 2, 3))  # other rho: still exact
    assert verify_multihead.verify_zero_error(net, task.TaskConfig(d=4, L=5), (Fraction(1),)).ok


def test_interpolating_heads_fail_one_length_longer():
    """Exact at L = 4 only: the same two heads at L = 5 miss the mean at j = 4."""
    net = cancelling_heads.build_interpolating(4, 4)
    v = verify_multihead.verify_zero_error(net, task.TaskConfig(d=4, L=5), (Fraction(1),))
    assert not v.ok and "trigger 4" in v.failure


def test_verify_entry_point_knows_the_new_constructions():
    assert {"cancelling", "cancelling-stack", "interpolating"} <= set(catalogue.CONSTRUCTIONS)
    assert catalogue.verify("interpolating", d=4, L=4, values=TWO_VALUES).ok
    with pytest.raises(BadInput, match="valid: relu"):
        catalogue.verify("nosuch")


@pytest.mark.parametrize("L", [16, 1024])
def test_float_check_of_the_pair_up_to_length_1024(L):
    import torch

    from empirical.analysis.float_check import float_check

    for net in (cancelling_heads.build(16, BETA), cancelling_heads.build_stack(16, BETA)):
        r = float_check(net, L, batch=2, seed=0, dtype=torch.float64)
        assert r["max_abs_error"] <= float(max(cancelling_heads.worst_error_terms(BETA, L))) * (1 + 1e-9)
        assert r["max_bos_weight_off_trigger"] <= 0.5 + 1e-12


def test_construct_prints_the_pair_and_refuses_irrational_json(capsys, tmp_path):
    from empirical.pipeline import cli

    assert cli.main(["construct", "cancelling", "--d", "4", "--L", "5"]) == 0
    out = capsys.readouterr().out
    assert "layer 0, head 1" in out and "max |output - target|" in out
    assert cli.main(["construct", "interpolating", "--d", "4", "--L", "4"]) == 0
    error = float(capsys.readouterr().out.rsplit("on this example:", 1)[1])
    assert error < 1e-12  # exact construction, float rounding only
    assert cli.main(["construct", "interpolating", "--L", "4", "--format", "json", "--out", str(tmp_path)]) == 2
    assert "not a rational number" in capsys.readouterr().err and not any(tmp_path.iterdir())


def test_unrestricted_two_head_search_answers_an_impossible_cap():
    """The QF_NRA encoding of question (a') is well formed and can answer: with cap 0 no head may
    put anything on BOS, which softmax forbids, so z3 says unsat. (With cap 3/4 it says unknown
    within minutes even at length 3, where an exact two-head solution exists; README.)"""
    from proofs.smt.hardkill import RLIMIT, SAFETY_S
    from proofs.smt.instance import reference_instance
    from proofs.smt.multihead import two_heads_capped

    r = two_heads_capped(reference_instance(2, 3, Fraction(1, 100)), Fraction(0), timeout_s=SAFETY_S, rlimit=RLIMIT)
    assert r["answer"] == "unsat" and r["classes"] == 15
