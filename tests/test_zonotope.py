"""The zonotope domain of ``proofs.certify.arithmetic.zonotope``: every transformer against
high-precision interval arithmetic at the same symbols, and plants that drop a remainder or a
rounding allowance and must be caught."""

import numpy as np
import pytest
from mpmath import iv, mp

from proofs.certify.arithmetic import zonotope as zt

PREC = 200  # bits of the reference evaluation


def random_zono(rng, shape, E, centre=0.0, spread=1.0, rem=0.3):
    c = centre + rng.normal(0, spread, shape)
    return zt.Zono(c, rng.normal(0, spread / E, shape + (E,)), np.abs(rng.normal(0, rem / 3, shape)))


def samples(rng, z, count):
    """(e [count, E], t [count, S]) symbol values: vertices, interior points, remainder ends."""
    E = z.symbols
    e = np.where(rng.random((count, E)) < 0.5, rng.choice([-1.0, 1.0], (count, E)), rng.uniform(-1, 1, (count, E)))
    t = rng.choice([-1.0, 1.0, 0.3], (count,) + z.r.shape) * z.r
    return e, t


def iv_value(z, flat, e, t):
    """Interval of c + G e + t at flat index ``flat`` (every float exact in iv)."""
    c, G = z.c.reshape(-1), z.G.reshape(-1, z.symbols)
    acc = iv.mpf(float(c[flat])) + iv.mpf(float(t.reshape(-1)[flat]))
    for a in range(z.symbols):
        acc += iv.mpf(float(G[flat, a])) * iv.mpf(float(e[a]))
    return acc


def contains(out, flat, e, value) -> bool:
    """value (interval) - (c' + G' e) lies within r' (the output's own symbols at the same e)."""
    affine = iv_value(out, flat, np.pad(e, (0, out.symbols - len(e))), np.zeros(out.r.shape))
    gap = value - affine
    r = float(out.r.reshape(-1)[flat])
    return gap.a >= -r and gap.b <= r


def unary_encloses(rng, fn, iv_fn, z, count=40) -> bool:
    out = fn(z)
    mp.prec = PREC
    with iv_prec():
        for e, t in zip(*samples(rng, z, count)):
            for flat in range(z.c.size):
                if not contains(out, flat, e, iv_fn(iv_value(z, flat, e, t))):
                    return False
    return True


class iv_prec:
    def __enter__(self):
        self.old = iv.prec
        iv.prec = PREC

    def __exit__(self, *exc):
        iv.prec = self.old


CASES = [(0.0, 1.0), (-3.0, 2.0), (2.0, 0.05), (-8.0, 4.0)]


@pytest.mark.parametrize("centre, spread", CASES)
def test_exp_encloses_exact_values(centre, spread):
    rng = np.random.default_rng(abs(int(10 * centre + spread)))
    assert unary_encloses(rng, zt.exp, iv.exp, random_zono(rng, (5,), 4, centre, spread))


@pytest.mark.parametrize("centre, spread", [(3.0, 1.0), (10.0, 4.0), (1.5, 0.01), (40.0, 30.0)])
def test_reciprocal_encloses_exact_values(centre, spread):
    rng = np.random.default_rng(int(centre))
    z = random_zono(rng, (5,), 4, centre, spread)
    z.c = z.c + np.maximum(0.0, 0.05 * centre - z.bounds()[0])  # every value > 0
    assert np.all(z.bounds()[0] > 0)
    assert unary_encloses(rng, zt.reciprocal, lambda v: 1 / v, z)


def test_product_linear_add_total_fresh_enclose_exact_values():
    rng = np.random.default_rng(5)
    x, y = random_zono(rng, (3, 4), 5, 0.5), random_zono(rng, (3, 4), 5, -0.2, 2.0)
    W = rng.normal(0, 1, (2, 4))
    ops = {"product": zt.product(x, y), "add": zt.add(x, y), "linear": zt.linear(W, x), "total": zt.total(x, axis=0)}
    with iv_prec():
        for e, t in zip(*samples(rng, x, 30)):
            _, u = samples(rng, y, 1)
            u = u[0]
            X = [iv_value(x, f, e, t) for f in range(12)]
            Y = [iv_value(y, f, e, u) for f in range(12)]
            assert all(contains(ops["product"], f, e, X[f] * Y[f]) for f in range(12))
            assert all(contains(ops["add"], f, e, X[f] + Y[f]) for f in range(12))
            for p in range(3):
                for m in range(2):
                    v = sum((iv.mpf(float(W[m, a])) * X[4 * p + a] for a in range(4)), iv.mpf(0))
                    assert contains(ops["linear"], 2 * p + m, e, v)
            assert all(contains(ops["total"], a, e, X[a] + X[4 + a] + X[8 + a]) for a in range(4))
    f = zt.fresh(x)
    assert f.symbols == x.symbols + 12 and np.all(f.r == 0)
    assert np.allclose(f.radius(), x.radius()) and np.array_equal(f.G[..., :5], x.G)


def test_zonotope_keeps_the_correlation_intervals_lose():
    """x - x is 0 whatever the symbols (an interval would give twice the width), and exp(x) - exp(x)
    is the relaxation's two remainders only."""
    rng = np.random.default_rng(8)
    x = zt.fresh(random_zono(rng, (3,), 4))
    lo, hi = zt.add(x, zt.neg(x)).bounds()
    assert np.all(hi - lo < 1e-9)
    ex = zt.exp(x)
    lo, hi = zt.add(ex, zt.neg(ex)).bounds()
    e_lo, e_hi = ex.bounds()
    assert np.all(hi - lo <= 4 * ex.r * (1 + 1e-9) + 1e-9) and np.all(hi - lo < 0.9 * 2 * (e_hi - e_lo))


# ---- plants: each transformer needs its remainder and its rounding allowance -------------


def test_dropped_relaxation_remainder_is_caught(monkeypatch):
    rng = np.random.default_rng(9)
    z = random_zono(rng, (5,), 4, 0.0, 1.0)
    real = zt.affine_map
    monkeypatch.setattr(zt, "affine_map", lambda lam, mu, x: real(lam, mu, zt.Zono(x.c, x.G, 0 * x.r)))
    assert not unary_encloses(rng, zt.exp, iv.exp, z)


def test_dropped_product_quadratic_part_is_caught(monkeypatch):
    rng = np.random.default_rng(10)
    x, y = random_zono(rng, (4,), 3, 0.0, 2.0, rem=0.0), random_zono(rng, (4,), 3, 0.0, 2.0, rem=0.0)
    x.G *= 3
    p = zt.product(x, y)
    dropped = zt.Zono(p.c, p.G, np.full_like(p.r, 1e-9))  # no remainders in x, y: only the quadratic part
    with iv_prec():
        found = False
        for e, t in zip(*samples(rng, x, 40)):
            for f in range(4):
                v = iv_value(x, f, e, t) * iv_value(y, f, e, np.zeros(4))
                assert contains(p, f, e, v)
                found |= not contains(dropped, f, e, v)
    assert found


def point_zono(rng, count, scale):
    """Zero-width values: only rounding separates the float relaxation from the exact one."""
    c = rng.uniform(-scale, scale, count)
    return zt.Zono(c, np.zeros((count, 1)), np.zeros(count))


@pytest.mark.parametrize("fn, iv_fn, offset", [(zt.exp, iv.exp, 0.0), (zt.reciprocal, lambda v: 1 / v, 3.0)])
def test_every_rounding_allowance_is_needed(fn, iv_fn, offset, monkeypatch):
    """Zero-width inputs: the relaxation is a point, so without the allowances (all three: they
    overlap, RELATIVE_SLACK alone exceeds a float exp's error) the float value misses the exact one."""
    rng = np.random.default_rng(11)
    z = point_zono(rng, 200, 2.0)
    z.c = z.c + offset
    assert unary_encloses(rng, fn, iv_fn, z, count=1)
    for name in ("FN_RTOL", "RELATIVE_SLACK", "TINY"):
        monkeypatch.setattr(zt, name, 0.0)
    assert not unary_encloses(rng, fn, iv_fn, z, count=1)


def test_numpy_exp_is_within_the_premise():
    """FN_RTOL's premise, measured: numpy's exp against mpmath, relative error far below FN_RTOL."""
    rng = np.random.default_rng(12)
    x = rng.uniform(-700, 700, 4000)
    mp.prec = PREC
    worst = max(abs(float((mp.mpf(float(v)) - mp.exp(mp.mpf(float(a)))) / mp.exp(mp.mpf(float(a))))) for a, v in zip(x, np.exp(x)))
    assert worst < zt.FN_RTOL / 100


# ---- adversarial points: where the relaxation's half-width meets the exact value -----------

# (lo, hi) of one-symbol inputs, each taken at its ends and centre. Wide intervals: the end of the
# relaxation farther from the tangent is reached by cancelling mid against a half-width many
# orders above the value there, so the half-width's own allowance decides it; zero- and ulp-wide
# ones: only rounding separates float from exact; tiny and huge values: near underflow and EXP_CAP.
EXP_INPUTS = [(-20.0, 20.0), (-421.40132095607373, -379.2837696829637), (-300.0, -257.0), (557.0, 599.9), (-745.0, -745.0), (-700.0, -700.0),
              (-1e-300, 1e-300), (1.0, float(np.nextafter(1.0, 2))), (100.0, float(np.nextafter(100.0, 200))),
              (599.9, 599.9), (0.0, 1.0)]
RECIPROCAL_INPUTS = [(1e200, 1e200), (1e300, 1.3e300), (1e307, 1e307), (1e300, float(np.nextafter(1e300, 2e300))),
                     (1e155, 1.3e155), (1e-150, 1e-150), (1.0, 1.0), (1.0, 3.0), (1e-10, float(np.nextafter(1e-10, 1)))]


def ends_enclosed(fn, iv_fn, inputs) -> list:
    """The inputs whose relaxation misses the exact (PREC-bit) value at an end or the centre."""
    missed = []
    with iv_prec():
        for lo, hi in inputs:
            z = zt.Zono(np.array([(lo + hi) / 2]), np.array([[(hi - lo) / 2]]), np.zeros(1))
            out = fn(z)
            for e in (np.array([-1.0]), np.array([1.0]), np.array([0.0])):
                if not contains(out, 0, e, iv_fn(iv_value(z, 0, e, np.zeros(1)))):
                    missed.append(((lo, hi), float(e[0])))
    return missed


def test_exp_encloses_exact_values_at_adversarial_points():
    assert ends_enclosed(zt.exp, iv.exp, EXP_INPUTS) == []


def test_reciprocal_encloses_exact_values_at_adversarial_points():
    assert ends_enclosed(zt.reciprocal, lambda v: 1 / v, RECIPROCAL_INPUTS) == []


def test_a_relaxation_that_overflows_is_refused_not_nan():
    """1 / x below ~1e-154: the slope -1 / t^2 overflows; a NaN zonotope would compare false with
    every level, so it is refused (as exp is above EXP_CAP)."""
    z = zt.Zono(np.array([1e-200]), np.array([[1e-210]]), np.zeros(1))
    with pytest.raises(ValueError, match="not a finite float"):
        zt.reciprocal(z)
