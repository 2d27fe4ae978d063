"""Heads that solve the task with no sink (kinds that can abstain): exact limits in sympy,
certified interval bounds, the worst-case formula against direct evaluation, and a negative
control that the verifier rejects."""

import dataclasses

import pytest
import sympy
import torch

from constructions import abstaining_heads as A
from constructions import reference, task
from constructions.errors import BadInput
from empirical.training import model as M


@pytest.mark.parametrize("name", list(A.CONSTRUCTIONS))
def test_every_weight_tends_to_its_target_exactly(name):
    L = 5
    check = A.verify_limit(name, L=L)
    assert check.all_weights_converge, check.failures
    # not vacuous: at least one weight per trigger position j (its 1/j target) and the zeros
    assert check.weights_checked >= (L - 2) + 1


@pytest.mark.parametrize("name", list(A.CONSTRUCTIONS))
def test_certified_trade_off_error_and_bos_mass_both_vanish(name):
    curve = A.trade_off(name, (2, 8, 16), L=16)
    errors = [p.max_error for p in curve]
    assert errors[0] > errors[1] > errors[2]  # the error falls as the gap grows
    assert errors[2] < 1e-3
    # no sink: BOS mass and the whole non-trigger row mass go to 0 with the error
    assert curve[2].max_bos_mass < 1e-3 and curve[2].max_nontrigger_row_mass < 1e-3


@pytest.mark.parametrize("name", list(A.CONSTRUCTIONS))
def test_worst_case_formula_bounds_and_is_attained_by_direct_evaluation(name):
    """Evaluate the head itself (torch and the float evaluator) on random inputs and on the
    sign input that the formula says is worst: never above the certified bound, and on the
    sign input the content-coordinate error equals sum_k |a_ik - w_ik| at the worst row."""
    gap, L, d = 3, 7, 5
    net = A.get(name).build(d, gap)  # exact (Fraction) weights
    bound = A.certified_point(name, gap, L, d).max_error
    b = task.sample(task.TaskConfig(d=d, L=L), 256, torch.Generator().manual_seed(0), dtype=torch.float64)
    out, _ = M.from_network(net)(b.x)
    # the float evaluations' own rounding, absolute (weights and contents are O(1); the bound is the
    # exact worst case rounded up, which a float error can pass by a few ulps of 1 when it is tiny)
    FLOAT = 1e-13
    assert (out - b.y).abs().max().item() <= bound + FLOAT
    ops = A.attention.ops("float")
    dev, i, j = max((A.row_errors(A.pattern(net, L, j, ops), j, 1.0)[i][1], i, j)
                    for j in range(2, L) for i in range(L))
    P = A.pattern(net, L, j, ops)
    signs = [1.0 if P[i][k] >= A.target_weight(i, k, j, 1.0) else -1.0 for k in range(L)]
    X = task.make_sequence([[signs[k]] + [0.0] * (d - 4) for k in range(1, L)], j, 0.0, 1.0)
    Y, _ = reference.forward(net, X, "float")
    err = abs(Y[i][task.CONTENT_START] - task.target(X)[i][task.CONTENT_START])
    assert err == pytest.approx(dev, rel=1e-9) and err <= bound + FLOAT


def test_verifier_rejects_a_softmax_head_with_the_same_weights():
    """Negative control: softmax rows sum to one, so with softmax1's weights the non-trigger
    rows stay uniform (1/(i+1)) and the limit check must fail."""
    E = sympy.Symbol("E", positive=True)
    net = dataclasses.replace(A.build_softmax1(4, sympy.log(E)), kind="softmax")
    check = A.check_limit(net, E, L=4)
    assert not check.all_weights_converge and check.failures


def test_verifier_preconditions_and_bad_input():
    from constructions import softmax_head

    with pytest.raises(BadInput, match="W_V"):
        A.check_content_blind(softmax_head.build(4, 2))  # BOS's value zeroed: W_V != I
    with pytest.raises(BadInput, match="'gap'"):
        A.build_gated(5, -1)
    with pytest.raises(BadInput, match="'gap'"):
        A.build_softmax1(5, 1.5)  # a float gap would make the "exact" weights inexact
    with pytest.raises(BadInput, match="valid: softmax1, sink_logit, gated, sigmoid, softpick"):
        A.get("relu6")
