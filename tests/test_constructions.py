"""The explicit constructions: exact verification, closed forms, broken variants, float lengths."""

import dataclasses
from fractions import Fraction

import pytest
import sympy

from constructions import attention, catalogue, reference, relu_head, softmax_head, task, verify
from constructions.errors import BadInput, NotExpressible

BETA = Fraction(10)


def _replace_head(net, **matrices):
    """``net`` with layer 0 head 0's matrices (W_Q, W_K, W_V as d x d lists, W_O) replaced."""
    layer = net.layers[0]
    changes = {name: (reference.as_matrix(M),) + getattr(layer, name)[1:] for name, M in matrices.items()
               if name != "W_O"}
    if "W_O" in matrices:
        changes["W_O"] = reference.as_matrix(matrices["W_O"])
    return dataclasses.replace(net, layers=(dataclasses.replace(layer, **changes),) + net.layers[1:])


def _rows(M):
    return [list(r) for r in M]


# ----------------------------------------------------------------------------------------
# The constructions pass.


def test_relu_head_is_exact_and_sink_free():
    cfg = task.TaskConfig(d=4, L=5)
    v = verify.verify_sink_free(relu_head.build(4), cfg)
    assert v.ok, v.failure
    assert v.sequences == task.count_sequences(cfg, len(task.DEFAULT_VALUES)) == 768
    assert v.worst_error == "0" and v.largest_bos_weight == "0"


def test_relu_head_is_exact_at_wider_d():
    # d = 6 (3 content coordinates), two content values: 2 triggers x 2^9 contents
    v = verify.verify_sink_free(relu_head.build(6), task.TaskConfig(d=6, L=4), values=(Fraction(-1), Fraction(1, 3)))
    assert v.ok and v.sequences == 2 * 2 ** 9


@pytest.mark.parametrize("layers, heads", [(2, 2), (3, 1)])
def test_relu_stack_solves_residual_task(layers, heads):
    net = relu_head.build_stack(4, layers, heads)
    assert net.residual and len(net.layers) == layers and net.layers[0].heads == heads
    v = verify.verify_sink_free(net, task.TaskConfig(d=4, L=4, residual=True))
    assert v.ok, v.failure
    assert v.sequences == 128


@pytest.mark.parametrize("beta", [BETA, Fraction(5, 2)])
def test_softmax_head_matches_closed_forms(beta):
    cfg = task.TaskConfig(d=4, L=4)
    v = verify.verify_softmax(softmax_head.build(4, beta), beta, cfg)
    assert v.ok, v.failure
    assert v.sequences == 128
    # the worst error found is the closed-form worst case (all-ones content attains it)
    assert v.worst_error_float == pytest.approx(float(softmax_head.max_error(beta, cfg.L)), rel=1e-12)
    assert v.details["min_bos_mass_off_trigger"] == pytest.approx(
        float(softmax_head.bos_mass(beta, cfg.L - 1)), rel=1e-12)


def test_closed_forms_agree_with_sympy_evaluator_for_symbolic_beta():
    # independent of verify's Q(e^beta) arithmetic: the sympy backend with beta a symbol
    b = sympy.Symbol("beta", positive=True)
    net = softmax_head.build(4, b)
    X = task.make_sequence([[Fraction(1, 2)], [Fraction(-1)], [Fraction(1)], [Fraction(0)]], 3)
    Y, patterns = reference.forward(net, X, "sympy")
    target = task.target(X, 3)
    closed_out, closed_err = softmax_head.output(b, X, 3), softmax_head.error(b, X, 3)
    for i in range(len(X)):
        assert sympy.simplify(patterns[0][0][i][0] - softmax_head.bos_mass(b, i, i == 3)) == 0
        for c in range(4):
            assert sympy.simplify(Y[i][c] - closed_out[i][c]) == 0
            assert sympy.simplify(Y[i][c] - target[i][c] - closed_err[i][c]) == 0


def test_content_flag_error_is_one_minus_bos_mass_on_the_evaluator():
    X = task.make_sequence([[Fraction(1)]] * 5, 4)
    Y, patterns = reference.forward(softmax_head.build(4, BETA), X, verify.exp_field_ops(BETA))
    exp = verify.exp_field_ops(BETA).exp
    for i in range(1, 4):  # before the trigger: the content flag of the output is the error
        assert Y[i][task.content_flag(4)] == 1 - patterns[0][0][i][0]
        assert Y[i][task.content_flag(4)] == softmax_head.content_flag_error(BETA, i, exp)


def test_trade_off_error_vanishes_only_with_sink():
    trade = softmax_head.trade_off()
    assert trade.holds
    assert trade.bos_mass_limit == 1 and trade.max_error_limit == 0 and trade.trigger_bos_mass_limit == 0


# ----------------------------------------------------------------------------------------
# The verifier can fail.


def test_verifier_rejects_relu_divisor_off_by_one(monkeypatch):
    relu = attention.get("relu")

    def off_by_one(scores, i, ops, extras):  # divides by i + 1 (BOS counted) instead of max(i, 1)
        return [ops.relu(s) / (i + 1) for s in scores]

    broken = dataclasses.replace(relu, name="relu_off_by_one", exact=off_by_one)
    monkeypatch.setitem(attention._REGISTRY, broken.name, broken)
    net = dataclasses.replace(relu_head.build(4), kind=broken.name)
    v = verify.verify_sink_free(net, task.TaskConfig(d=4, L=4))
    assert not v.ok and v.verdict == "failed" and v.worst_error_float > 0 and v.failure


def test_verifier_rejects_relu_head_that_attends_to_bos():
    # W_K also reads the BOS flag, BOS's value is zeroed: the outputs stay exact (mean of 1..j),
    # but the trigger query puts 1/j on BOS, which T3 forbids
    d = 4
    net = relu_head.build(d)
    W_K = _rows(net.layers[0].W_K[0])
    W_K[0][task.BOS_FLAG] = Fraction(1)
    W_V = _rows(net.layers[0].W_V[0])
    W_V[task.BOS_FLAG][task.BOS_FLAG] = Fraction(0)
    v = verify.verify_sink_free(_replace_head(net, W_K=W_K, W_V=W_V), task.TaskConfig(d=d, L=4))
    assert not v.ok
    assert v.worst_error == "0" and v.largest_bos_weight == "1/2"


def test_verifier_rejects_relu_stack_with_nonzero_extra_output():
    net = relu_head.build_stack(4, 2, 1)
    second = net.layers[1]
    WQ = _rows(relu_head.build(4).layers[0].W_Q[0])
    WK = _rows(relu_head.build(4).layers[0].W_K[0])
    layer = dataclasses.replace(second, W_Q=(reference.as_matrix(WQ),), W_K=(reference.as_matrix(WK),),
                                W_V=(reference.identity(4, Fraction(0), Fraction(1)),),
                                W_O=reference.identity(4, Fraction(0), Fraction(1)))
    broken = dataclasses.replace(net, layers=(net.layers[0], layer))
    assert not verify.verify_sink_free(broken, task.TaskConfig(d=4, L=4, residual=True)).ok


def test_verifier_rejects_softmax_with_bos_left_in_value_map():
    net = softmax_head.build(4, BETA)
    v = verify.verify_softmax(_replace_head(net, W_V=reference.identity(4, Fraction(0), Fraction(1))), BETA,
                              task.TaskConfig(d=4, L=4))
    assert not v.ok and "closed form" in v.failure


def test_verifier_rejects_softmax_with_wrong_trigger_score():
    net = softmax_head.build(4, BETA)
    W_Q = _rows(net.layers[0].W_Q[0])
    W_Q[0][task.TRIGGER_FLAG] = BETA  # the trigger query now also parks its mass on BOS
    v = verify.verify_softmax(_replace_head(net, W_Q=W_Q), BETA, task.TaskConfig(d=4, L=4))
    assert not v.ok and v.worst_error_float > 0.3  # the trigger's mean is lost


# ----------------------------------------------------------------------------------------
# Exact arithmetic in Q(e^beta) and bad input.


def test_exp_rational_field_identities():
    t = verify.ExpRational.power(1)
    assert t / (t + 2) + Fraction(2) / (t + 2) == 1
    assert verify.ExpRational.power(-1) * t == 1
    assert (t - t).is_zero() and not (t / (t + 1) == Fraction(1, 2))
    ops = verify.exp_field_ops(Fraction(3))
    assert ops.exp(Fraction(-6)) == verify.ExpRational.power(-2)
    with pytest.raises(NotExpressible):
        ops.exp(Fraction(1))
    from mpmath import mp

    from constructions import balls

    with balls.precision(verify.ENCLOSURE_BITS):  # the verifiers' precision, scoped (it used to leak globally)
        box = (t / (t + 1)).enclose(balls.exp(3))
    with mp.workdps(50):
        assert balls.down(box) <= mp.mpf(1) / (1 + mp.exp(-3)) <= balls.up(box)
    assert float(box.rad()) < 1e-20


@pytest.mark.parametrize("call", [
    lambda: relu_head.build(3), lambda: relu_head.build_stack(4, 0, 1), lambda: relu_head.build_stack(4, 1, 0),
    lambda: softmax_head.build(4, 0), lambda: softmax_head.build(3, 1),
    lambda: verify.verify_softmax(softmax_head.build(4, 1.5), 1.5, task.TaskConfig(d=4, L=4)),
    lambda: catalogue.verify("nope"),
])
def test_bad_input(call):
    with pytest.raises(BadInput):
        call()


# ----------------------------------------------------------------------------------------
# Float: the torch model with the construction's weights, at and beyond the reference size.


@pytest.mark.parametrize("L", [16, 256])
def test_torch_model_reproduces_targets(L):
    import torch

    from empirical.analysis.float_check import float_check

    relu = float_check(relu_head.build(16), L, batch=16)
    assert relu["max_abs_error"] < 1e-12 and relu["max_bos_weight"] == 0
    stack = float_check(relu_head.build_stack(16, 2, 2), L, batch=8)
    assert stack["max_abs_error"] < 1e-12 and stack["max_bos_weight"] == 0
    soft = float_check(softmax_head.build(16, BETA), L, batch=16, dtype=torch.float64)
    bound = float(softmax_head.max_error(BETA, L))
    assert 0 < soft["max_abs_error"] <= bound * (1 + 1e-9)
    assert soft["min_bos_weight_off_trigger"] >= float(softmax_head.bos_mass(BETA, L - 1)) - 1e-12
    assert soft["max_bos_weight_at_trigger"] <= float(softmax_head.bos_mass(BETA, 2, at_trigger=True)) + 1e-12
