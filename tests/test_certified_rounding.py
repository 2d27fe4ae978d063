"""Every figure the report calls certified is rounded outward, whatever Arb's working precision,
and no verifier changes that precision globally.
Each test here fails when the rounding direction it names is flipped."""

from fractions import Fraction

import pytest
from flint import arb, ctx

from constructions import abstaining_heads, balls, cancelling_heads, numbers, softmax_head, task, verify, verify_multihead


def test_verifiers_leave_the_working_precision_alone():
    before = ctx.prec
    verify.verify_softmax(softmax_head.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    assert ctx.prec == before
    verify_multihead.verify_cancelling(cancelling_heads.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    assert ctx.prec == before
    abstaining_heads.certified_point("softmax1", 7, 5)
    assert ctx.prec == before


def _raw_ends(name, gap, L):
    """The balls certified_point takes its figures from (the same working precision)."""
    with balls.precision():
        ops = abstaining_heads.attention.ops("interval")
        net = abstaining_heads.get(name).build(4, balls.ball(gap))
        err, bos = [], []
        for j in range(2, L):
            P = abstaining_heads.pattern(net, L, j, ops)
            for i, (a0, dev) in enumerate(abstaining_heads.row_errors(P, j, ops.one)):
                err += [balls.hi(a0), balls.hi(dev)]
                if i >= 1:
                    bos.append(balls.hi(a0))
    return max(err), max(bos)


@pytest.mark.parametrize("name", sorted(abstaining_heads.CONSTRUCTIONS))
def test_abstaining_certified_maxima_round_up(name):
    """At 128 bits a ball's end is not a float; float() would round it to nearest, below the end
    about half the time."""
    for gap in (7, 10, 13):
        p = abstaining_heads.certified_point(name, gap, 8)
        err, bos = _raw_ends(name, gap, 8)
        assert p.max_error >= err and p.max_bos_mass >= bos


def test_interval_and_fraction_rounding_helpers_round_outward():
    with balls.precision(133):
        for n in range(1, 40):
            x = balls.ball(1) / (3 * n)
            assert numbers.interval_up(x) >= balls.hi(x) and numbers.interval_down(x) <= balls.lo(x)
    for n in range(1, 40):
        q = Fraction(1, 3 * n)
        assert Fraction(numbers.fraction_up(q)) >= q >= Fraction(numbers.fraction_down(q))
        assert numbers.fraction_up(q) > numbers.fraction_down(q)  # 1/(3n) is never a float


# ---- proofs.certify: every certified figure, its rounding direction ------------------------------


def test_certified_bos_mass_rounds_to_the_safe_side():
    """sink: a non-trigger minimum rounds down, the trigger's maximum up (a = 1/(1+R), R not a float)."""
    from proofs.certify.head import sink

    with balls.precision(133):
        for n in range(1, 30):
            R = balls.ball(n) / 7 + balls.ball(1) / 3
            a = 1 / (1 + R)
            assert sink.certified_bos_mass(R, "before") <= balls.lo(a)
            assert sink.certified_bos_mass(R, "trigger") >= balls.hi(a)


def test_search_figure_rounds_up():
    """branch: the certified maximum of a sum of exponentials (softmax) and of sigmoid ratios
    (sigmoid_norm) is the upper end of its interval recomputation, rounded up."""
    import numpy as np

    from proofs.certify.arithmetic import branch, heads

    n = 2
    E = heads.Exponent(0.1, np.zeros(n), np.zeros((n, n)), 0, np.zeros(n), np.zeros((n, n)))
    soft = branch.ExpSum([(1.0 / 3, E), (2.0 / 7, E)], +1)
    sig = branch.SigmoidSum([(1.0 / 3, E)], E, +1)
    with balls.precision(200):
        rows = np.array([[0.1, 0.3], [0.2, -0.7]])
        exact_soft = max(balls.hi(arb(1.0 / 3) * balls.exp(r[0]) + arb(2.0 / 7) * balls.exp(r[1])) for r in rows)
        assert soft.certified(rows) >= exact_soft

        def ls(x):
            return -balls.log(1 + balls.exp(-arb(x)))

        exact_sig = max(balls.hi(arb(1.0 / 3) * balls.exp(ls(r[0]) - ls(r[1]))) for r in rows)
        assert sig.certified(rows) >= exact_sig


def test_eta_up_rounds_up_and_eta_lo_down():
    from proofs.certify.head import error, witness
    from proofs.certify.arithmetic import heads
    from tests.test_certify import random_net

    for q in (Fraction(1, 3), Fraction(2, 7), Fraction(10, 9)):
        assert Fraction(error.certified_eta(q)) >= q
    net = random_net(4, 2, scale=0.8)
    h = heads.head_maps(net)
    lo = witness.eta_lower(net, h, 5)
    X = task.make_sequence([[Fraction(v) for v in row] for row in lo["contents"]], lo["trigger"])
    from proofs.certify.head import sink

    with balls.precision(200):
        err, _ = sink.Replayer(net).error(X, lo["position"], lo["trigger"], h)
        assert lo["eta_lo"] <= balls.lo(err)  # below the exact error's lower end


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
    with balls.precision(200):
        e = balls.exp(3)
        assert v.details["min_bos_mass_off_trigger"] <= balls.lo(e / (e + 3))
        bound = max(balls.hi(3 / (e + 3)), balls.hi(1 / (1 + 2 * e)))
        assert v.details["closed_form_bound"] >= bound
        assert v.worst_error_float >= balls.hi(3 / (e + 3))  # all-ones content attains the bound


# ---- each ball-to-float site against a 200-bit reference, on the inputs where rounding decides --------
# The reference is mpmath at 200 bits (point values; no interval): exact to far below a float's ulp.
# Each site check also runs with the helper planted to round one float inward (below): it must fail.

import math  # noqa: E402

import mpmath  # noqa: E402

TRICKY = (1.0 + 2 ** -52, 1.0 - 2 ** -53, 2.0 ** -40, 5e-324, 1e-300, 1e300, 0.5, 1 / 3, 2.0 ** 10,
          math.nextafter(2.0 ** 10, math.inf), math.nextafter(2.0 ** 10, 0), 7.0, 700.0)
EXPONENTS = TRICKY[:5] + (0.5, 1 / 3, 7.0, 700.0) + tuple(-x for x in TRICKY[:5] + (0.5, 1 / 3, 7.0, 700.0, 745.5))


def _ref(fn, *args):
    with mpmath.mp.workprec(200):
        return fn(*(mpmath.mpf(a) for a in args))


def _below(f: float, ref) -> bool:
    with mpmath.mp.workprec(200):
        return mpmath.mpf(f) <= ref


def _above(f: float, ref) -> bool:
    with mpmath.mp.workprec(200):
        return mpmath.mpf(f) >= ref


def _check_ball_ends():
    for x in TRICKY:
        for fn, ref in ((balls.exp, mpmath.exp), (balls.log, mpmath.log), (balls.sigmoid, lambda v: 1 / (1 + mpmath.exp(-v)))):
            if fn is balls.exp and x > 709:
                continue  # exp overflows the floats: +inf either way
            y = fn(x)
            assert _below(balls.down(y), _ref(ref, x)) and _above(balls.up(y), _ref(ref, x)), (fn.__name__, x)


def _check_weight_ends():
    from proofs.certify.arithmetic import replay

    f = {"softmax": mpmath.exp, "sigmoid_norm": lambda v: 1 / (1 + mpmath.exp(-v))}
    for kind, fn in f.items():
        for e in EXPONENTS:
            lo, hi = replay.weight_ends(kind, e, e)
            assert _below(lo, _ref(fn, e)) and _above(hi, _ref(fn, e)), (kind, e)


def _check_logs():
    from proofs.certify.head import error

    for x in TRICKY:
        assert _below(error._log_down(x), _ref(mpmath.log, x)) and _above(error._log_up(x), _ref(mpmath.log, x)), x


def _check_branch_sums():
    import numpy as np

    from proofs.certify.arithmetic import branch

    for x in EXPONENTS:
        for sign in (+1, -1):
            got = branch.ExpSum([(1.0, None)], sign).certified(np.array([[x]]))
            assert _above(got, _ref(lambda v: sign * mpmath.exp(v), x)), (sign, x)
            got = branch.SigmoidSum([(1.0, None)], None, sign).certified(np.array([[x, 0.0]]))
            assert _above(got, _ref(lambda v: sign * (1 + mpmath.exp(0)) / (1 + mpmath.exp(-v)), x)), (sign, x)


def _check_bos_mass():
    from proofs.certify.head import sink

    for R in TRICKY:
        a = _ref(lambda r: 1 / (1 + r), R)
        assert _below(sink.certified_bos_mass(R, "before"), a) and _above(sink.certified_bos_mass(R, "trigger"), a), R


def _check_quotients():
    from proofs.certify.stack import affine_stack

    for num in (1.0, 1 / 3, 5e-324):
        for a, b in ((1.0, 2 ** -52), (3.0, 1e-300), (1e300, 1e300), (0.1, 0.2)):
            q = Fraction(num) / (Fraction(a) + Fraction(b))
            assert Fraction(affine_stack._iv_quotient(num, a, b, True)) <= q <= Fraction(affine_stack._iv_quotient(num, a, b, False))


def _check_interval_helpers():
    for x in TRICKY:
        third = balls.ball(x) / 3
        q = Fraction(x) / 3
        assert Fraction(numbers.interval_down(third)) <= q <= Fraction(numbers.interval_up(third)), x


SITES = {"balls": _check_ball_ends, "weight_ends": _check_weight_ends, "logs": _check_logs,
         "branch": _check_branch_sums, "bos_mass": _check_bos_mass, "quotients": _check_quotients,
         "interval_helpers": _check_interval_helpers}


@pytest.mark.parametrize("site", sorted(SITES))
def test_site_encloses_the_200_bit_reference(site):
    SITES[site]()


@pytest.mark.parametrize("site", sorted(SITES))
def test_planted_inward_rounding_is_caught(site, monkeypatch):
    """``balls``' float ends moved one float inward: every site's check above must see it."""
    real = balls._end
    monkeypatch.setattr(balls, "_end", lambda x, side: math.nextafter(real(x, side), math.inf if side == "down" else -math.inf))
    with pytest.raises(AssertionError):
        SITES[site]()


def test_ball_ends_are_the_nearest_floats_outward():
    """``down`` / ``up`` of exact balls: a float is its own end; a non-float end rounds to the
    adjacent float on its side; beyond the float range, +-inf or the largest float on the safe side."""
    for x in TRICKY + (-5e-324, -1e300, 0.0, math.inf, -math.inf):
        assert balls.down(x) == x == balls.up(x)
    with balls.precision(200):
        for x in TRICKY:
            y = balls.ball(x) * (1 + balls.ball(2) ** -80)  # just above x: not a float
            assert balls.down(y) == x and balls.up(y) == math.nextafter(x, math.inf), x
        huge = balls.ball(2) ** 1030
        assert balls.up(huge) == math.inf and balls.down(huge) == 1.7976931348623157e308
        tiny = balls.ball(2) ** -1100
        assert balls.down(tiny) == 0.0 and balls.up(tiny) == 5e-324
        assert balls.down(-tiny) == -5e-324 and balls.up(-tiny) == -0.0
    nan = arb.nan()
    assert balls.down(nan) == -math.inf and balls.up(nan) == math.inf  # indeterminate: the whole line
