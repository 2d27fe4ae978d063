"""Every figure the report calls certified is rounded outward, whatever the interval context's
precision, and no verifier changes that precision globally.
Each test here fails when the rounding direction it names is flipped."""

from fractions import Fraction

import pytest
from mpmath import iv

from constructions import abstaining_heads, cancelling_heads, numbers, softmax_head, task, verify, verify_multihead


def test_verifiers_leave_the_interval_precision_alone():
    before = iv.prec
    verify.verify_softmax(softmax_head.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    assert iv.prec == before
    verify_multihead.verify_cancelling(cancelling_heads.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    assert iv.prec == before


def _raw_ends(name, gap, L):
    """The intervals certified_point takes its figures from (same context precision)."""
    ops = abstaining_heads.attention.ops("interval")
    net = abstaining_heads.get(name).build(4, iv.mpf(gap))
    err, bos = [], []
    for j in range(2, L):
        P = abstaining_heads.pattern(net, L, j, ops)
        for i, (a0, dev) in enumerate(abstaining_heads.row_errors(P, j, ops.one)):
            err += [iv.mpf(a0).b, iv.mpf(dev).b]
            if i >= 1:
                bos.append(iv.mpf(a0).b)
    return max(err), max(bos)


@pytest.mark.parametrize("name", sorted(abstaining_heads.CONSTRUCTIONS))
def test_abstaining_certified_maxima_round_up_at_high_precision(name):
    """At 40 digits an interval end is not a float; float() would round it to nearest, below the
    end about half the time (the old code, after verify.py had raised iv.dps to 30)."""
    with numbers.interval_digits(40):
        for gap in (7, 10, 13):
            p = abstaining_heads.certified_point(name, gap, 8)
            err, bos = _raw_ends(name, gap, 8)
            assert iv.mpf(p.max_error).a >= err and iv.mpf(p.max_bos_mass).a >= bos


def test_interval_and_fraction_rounding_helpers_round_outward():
    with numbers.interval_digits(40):
        for n in range(1, 40):
            x = iv.mpf(1) / (3 * n)
            assert iv.mpf(numbers.interval_up(x)).a >= x.b and iv.mpf(numbers.interval_down(x)).b <= x.a
    for n in range(1, 40):
        q = Fraction(1, 3 * n)
        assert Fraction(numbers.fraction_up(q)) >= q >= Fraction(numbers.fraction_down(q))
        assert numbers.fraction_up(q) > numbers.fraction_down(q)  # 1/(3n) is never a float


# ---- proofs.certify: every certified figure, its rounding direction ------------------------------


def test_certified_bos_mass_rounds_to_the_safe_side():
    """sink: a non-trigger minimum rounds down, the trigger's maximum up (a = 1/(1+R), R not a float)."""
    from proofs.certify.head import sink

    with numbers.interval_digits(40):
        for n in range(1, 30):
            R = iv.mpf(n) / 7 + iv.mpf(1) / 3
            a = 1 / (1 + R)
            assert iv.mpf(sink.certified_bos_mass(R, "before")).b <= a.a
            assert iv.mpf(sink.certified_bos_mass(R, "trigger")).a >= a.b


def test_search_figure_rounds_up():
    """branch: the certified maximum of a sum of exponentials (softmax) and of sigmoid ratios
    (sigmoid_norm) is the upper end of its interval recomputation, rounded up."""
    import numpy as np

    from proofs.certify.arithmetic import branch, heads

    n = 2
    E = heads.Exponent(0.1, np.zeros(n), np.zeros((n, n)), 0, np.zeros(n), np.zeros((n, n)))
    soft = branch.ExpSum([(1.0 / 3, E), (2.0 / 7, E)], +1)
    sig = branch.SigmoidSum([(1.0 / 3, E)], E, +1)
    with numbers.interval_digits(40):
        rows = np.array([[0.1, 0.3], [0.2, -0.7]])
        exact_soft = max(iv.mpf(1.0 / 3) * iv.exp(iv.mpf(r[0])) + iv.mpf(2.0 / 7) * iv.exp(iv.mpf(r[1])) for r in rows)
        assert iv.mpf(soft.certified(rows)).a >= exact_soft.b

        def ls(x):
            return -iv.log(1 + iv.exp(-iv.mpf(x)))

        exact_sig = max(iv.mpf(1.0 / 3) * iv.exp(ls(r[0]) - ls(r[1])) for r in rows)
        assert iv.mpf(sig.certified(rows)).a >= exact_sig.b


def test_eta_up_rounds_up_and_eta_lo_down():
    from proofs.certify.head import error, witness
    from proofs.certify.arithmetic import heads
    from tests.test_certify import random_net

    for q in (Fraction(1, 3), Fraction(2, 7), Fraction(10, 9)):
        assert Fraction(error.certified_eta(q)) >= q
    net = random_net(4, 2, scale=0.8)
    h = heads.head_maps(net)
    with numbers.interval_digits(40):
        lo = witness.eta_lower(net, h, 5)
        X = task.make_sequence([[Fraction(v) for v in row] for row in lo["contents"]], lo["trigger"])
        from proofs.certify.head import sink

        err, _ = sink.Replayer(net).error(X, lo["position"], lo["trigger"], h)
        assert iv.mpf(lo["eta_lo"]).b <= err.a  # below the exact error's lower end


def test_t1_bounds_round_down():
    import sympy

    from proofs.certify.head import t1

    for f in (sympy.Rational(1, 3), sympy.Rational(2, 7), sympy.Rational(1, 1000003)):
        low = t1._one_minus(f)
        assert Fraction(low) <= 1 - Fraction(int(f.p), int(f.q)) < Fraction(low) + Fraction(1, 2 ** 50)


def test_relu_certified_maxima_round_up():
    """free: the ReLU head's largest BOS weight is an exact rational divided by the query position;
    reported as a float it must not fall below it (float() rounds to nearest)."""
    from constructions import reference
    from proofs.certify.head import free

    d = 4
    z = [[Fraction(0)] * d for _ in range(d)]
    WQ = [row[:] for row in z]
    WK = [row[:] for row in z]
    WQ[0][task.content_flag(d)] = Fraction(1, 3)
    WK[0][task.BOS_FLAG] = Fraction(1)
    net = reference.single_head("relu", WQ, WK, reference.identity(d, Fraction(0), Fraction(1)),
                                reference.identity(d, Fraction(0), Fraction(1)))
    cert = free.certify_relu(net, 6)
    for q in cert["queries"]:
        assert Fraction(q["max_bos_weight"]) >= Fraction(1, 3) / q["position"]
    assert Fraction(cert["max_bos_weight"]) >= Fraction(1, 3)


def test_verify_softmax_figures_round_outward():
    """constructions.verify: min BOS mass off the trigger rounds down, the largest error and the
    closed-form bound up (exact values e^b/(e^b + i) and (L-1)/(e^b + L-1) are irrational)."""
    v = verify.verify_softmax(softmax_head.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    with numbers.interval_digits(40):
        e = iv.exp(3)
        assert iv.mpf(v.details["min_bos_mass_off_trigger"]).b <= (e / (e + 3)).a
        bound = max((3 / (e + 3)).b, (1 / (1 + 2 * e)).b)
        assert iv.mpf(v.details["closed_form_bound"]).a >= bound
        assert iv.mpf(v.worst_error_float).a >= (3 / (e + 3)).b  # all-ones content attains the bound
