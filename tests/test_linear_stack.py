"""The linearised mixtures of the stack certificate (``certify_stack(linear=True)``): the centred
mixture's dual bound against the exact linear programme, the softmax Taylor remainder against
sampled score vectors, a head's output form against every grid input of tiny stacks (layers 0
and 1), the certified minima below every enumerated input; and a planted mistake in each piece
caught."""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from proofs.certify.arithmetic import affine, centred, heads, linear_softmax
from proofs.certify.stack import affine_stack
from test_certify_stack import SINKING, WEAK, enumerated_minima, grid_inputs, sinking_stack, violations

STACKS = [key for key in SINKING if key[3] == "softmax"] + [WEAK]


def lp_maximum(y_lo, y_hi, d_lo, d_hi):
    """max sum_k delta_k y_k over delta in the box with sum 0 and y in its box, exactly (Fractions):
    convex in delta, so at a vertex (every delta_k at an end but one), y_k at the end of delta_k's sign."""
    K = len(d_lo)
    best = None
    for free in range(K):
        for ends in itertools.product((0, 1), repeat=K - 1):
            others = [k for k in range(K) if k != free]
            delta = {k: Fraction(d_hi[k] if e else d_lo[k]) for k, e in zip(others, ends)}
            delta[free] = -sum(delta.values())
            if not Fraction(d_lo[free]) <= delta[free] <= Fraction(d_hi[free]):
                continue
            value = sum(x * Fraction(y_hi[k] if x >= 0 else y_lo[k]) for k, x in delta.items())
            best = value if best is None else max(best, value)
    return best


def dual_case(seed, points):
    rng = np.random.default_rng(seed)
    K = 5
    y_lo = np.round(rng.normal(0, 1, K) * 64) / 64
    y_hi = y_lo if points else y_lo + np.round(rng.uniform(0, 1, K) * 64) / 64
    d_lo, d_hi = -np.round(rng.uniform(0, 0.3, K) * 64) / 64, np.round(rng.uniform(0, 0.3, K) * 64) / 64
    return y_lo, y_hi, d_lo, d_hi


@pytest.mark.parametrize("seed", range(6))
def test_dual_bound_above_the_exact_programme_and_equal_on_points(seed):
    for points in (False, True):
        y_lo, y_hi, d_lo, d_hi = dual_case(seed, points)
        bound = centred.dual_bound(y_lo[:, None], y_hi[:, None], d_lo, d_hi)[0]
        exact = lp_maximum(y_lo, y_hi, d_lo, d_hi)
        assert Fraction(bound) >= exact
        if points:  # fixed values: a linear programme, and its dual's optimum is among the kinks
            assert bound - float(exact) < 1e-9


def test_centred_mixture_encloses_weights_on_the_simplex():
    rng = np.random.default_rng(4)
    L, d, N, i = 4, 4, 3, 3
    A = rng.normal(0, 1, (L, d, N))
    A[0] = 0
    w = affine.Forms(A, rng.normal(0, 1, (L, d)), np.abs(rng.normal(0, 0.2, (L, d))))
    lo, hi = np.array([0.1, 0.2, 0.15, 0.2]), np.array([0.3, 0.4, 0.35, 0.3])
    m = np.array([0.2, 0.3, 0.25, 0.25])
    Ac, bc, rc = centred.centred(w, i, lo, hi, m)
    for _ in range(400):
        a = rng.uniform(lo, hi)
        a[0] = 1 - a[1:].sum()
        if not lo[0] <= a[0] <= hi[0]:
            continue
        u = rng.choice([-1.0, 1.0], N)
        values = np.einsum("kdn,n->kd", w.A[:i + 1], u) + w.b[:i + 1] + rng.choice([-1, 1], (i + 1, d)) * w.r[:i + 1]
        assert np.all(np.abs(a @ values - (Ac @ u + bc)) <= rc + 1e-12)


def softmax(t):
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("seed", range(4))
def test_taylor_remainder_holds_over_the_score_box(seed):
    rng = np.random.default_rng(seed)
    K = 6
    tau, D = rng.normal(0, 1.5, K), rng.uniform(0, 1.2, K)
    tau[0], D[0] = 0.0, 0.0
    lo, hi = linear_softmax.taylor_remainder(tau, D)
    ahat = softmax(tau)
    J = np.diag(ahat) - np.outer(ahat, ahat)
    t = tau + D * rng.choice([-1.0, 1.0, 0.3, -0.7], (4000, K))
    R = softmax(t) - ahat - (t - tau) @ J.T
    assert np.all(R >= lo - 1e-12) and np.all(R <= hi + 1e-12)
    assert np.max(hi - lo) < 2 * np.max(D) ** 2  # second order, not a box on the weights


def grid_streams(net, L, j):
    """(contents u [B, N], streams [layers + 1, B, L, d]) of every grid input, float64."""
    contents, x = grid_inputs(net.d, L, j)
    x = x.numpy()
    out = [x]
    for n, layer in enumerate(net.layers):
        o = np.zeros_like(x)
        for h in range(layer.heads):
            hm = heads.head_maps(net, n, h)
            s = np.einsum("bid,de,bke->bik", x, hm.M, x) + np.triu(np.full((L, L), -np.inf), 1)
            o = o + np.einsum("bik,bkd->bid", softmax(s), x @ hm.V.T)
        x = x + o
        out.append(x)
    return contents.reshape(len(contents), -1), np.array(out)


def head_outputs(hm, x, L):
    s = np.einsum("bid,de,bke->bik", x, hm.M, x) + np.triu(np.full((L, L), -np.inf), 1)
    return np.einsum("bik,bkd->bid", softmax(s), x @ hm.V.T)


def output_escapes(key, layers=(0, 1)):
    """The largest amount by which a grid input's head output leaves ``linear_softmax.output``'s form
    (<= 0: enclosed), over both heads, every query and trigger position, at ``layers``."""
    d, L, seed, kind, beta = key
    net = sinking_stack(d, seed, kind, beta=beta)
    worst = -np.inf
    for j in range(2, L):
        u, xs = grid_streams(net, L, j)
        z = affine.inputs(d, L, j)
        for n in range(max(layers) + 1):
            maps = [heads.head_maps(net, n, h) for h in range(net.layers[n].heads)]
            if n in layers:
                for hm in maps:
                    o = head_outputs(hm, xs[n], L)
                    w = affine.linear(hm.V, z)
                    for i in range(1, L):
                        A, b, r, _, _ = linear_softmax.output(hm.M, w, z, i, affine_stack.key_bounds("softmax", hm.M, z, i) if i % 2 else None)
                        worst = max(worst, float((np.abs(o[:, i] - (u @ A.T + b)) - r).max()))
            out, _ = affine_stack.layer_step(kind, maps, z, j, n, {}, linear=True)
            z = affine.add(z, out)
    return worst


@pytest.mark.parametrize("key", STACKS, ids=[f"d{d}-L{L}-seed{s}" for d, L, s, _, _ in STACKS])
def test_output_form_encloses_every_grid_input(key):
    assert output_escapes(key) <= 1e-9


@pytest.mark.parametrize("key", STACKS, ids=[f"d{d}-L{L}-seed{s}" for d, L, s, _, _ in STACKS])
def test_linear_stack_below_every_enumerated_input(key):
    d, L, seed, kind, beta = key
    net = sinking_stack(d, seed, kind, beta=beta, layers=3)  # its first two layers are the 2-layer stack's
    cert = affine_stack.certify_stack(net, L, exact_first=False, linear=True)
    assert violations(cert, enumerated_minima(net, L)) == []


def intersect_escapes(seed):
    """The largest amount by which a weight's deviation delta = a - ahat - g, with a in [lo, hi], |g| <= g1
    and delta in the Taylor range, leaves ``intersect_box``'s narrowed range (<= 0: kept)."""
    rng = np.random.default_rng(seed)
    K = 6
    ahat, g1 = rng.uniform(0.05, 0.3, K), rng.uniform(0, 0.1, K)
    lo, hi = ahat - rng.uniform(0, 0.05, K), ahat + rng.uniform(0, 0.05, K)
    d_lo, d_hi = -rng.uniform(0, 0.2, K), rng.uniform(0, 0.2, K)
    n_lo, n_hi = linear_softmax.intersect_box(d_lo, d_hi, ahat, g1, lo, hi, 0.0)
    a = rng.uniform(lo, hi, (4000, K))
    g = g1 * rng.choice([-1.0, 1.0, 0.5], (4000, K))
    delta = a - ahat - g
    ok = (delta >= d_lo) & (delta <= d_hi)
    return float(np.max(np.where(ok, np.maximum(n_lo - delta, delta - n_hi), -np.inf)))


def test_box_narrowing_keeps_every_deviation():
    assert max(intersect_escapes(seed) for seed in range(5)) <= 0


# ---- planted mistakes, each caught ---------------------------------------------------------


def test_dropped_taylor_remainder_is_caught(monkeypatch):
    monkeypatch.setattr(linear_softmax, "taylor_remainder", lambda tau, D: (np.zeros_like(D), np.zeros_like(D)))
    assert any(output_escapes(key, layers=(0,)) > 1e-6 for key in STACKS)


def test_dropped_quadratic_part_is_caught(monkeypatch):
    monkeypatch.setattr(linear_softmax, "quadratic_range", lambda B: (np.zeros(B.shape[:-2]), np.zeros(B.shape[:-2])))
    assert any(output_escapes(key, layers=(0,)) > 1e-6 for key in STACKS)


def test_a_slope_off_the_tangent_is_caught(monkeypatch):
    """J without its -ahat ahat^T part: no longer softmax's derivative, so the Taylor remainder does
    not cover the error of the line."""
    monkeypatch.setattr(linear_softmax, "jacobian", lambda ahat: np.diag(ahat))
    assert any(output_escapes(key, layers=(0,)) > 1e-6 for key in STACKS)


def test_dual_rounding_turned_inward_is_caught(monkeypatch):
    real = centred.dual_bound
    monkeypatch.setattr(centred, "RELATIVE_SLACK", -1e-6)  # the allowance subtracted instead of added
    caught = False
    for seed in range(6):
        y_lo, y_hi, d_lo, d_hi = dual_case(seed, True)
        caught |= Fraction(real(y_lo[:, None], y_hi[:, None], d_lo, d_hi)[0]) < lp_maximum(y_lo, y_hi, d_lo, d_hi)
    assert caught


def test_box_narrowing_without_the_linear_part_is_caught(monkeypatch):
    """lo - ahat <= delta would hold only where the weights' linear part G . u is 0: a slope left out."""
    real = linear_softmax.intersect_box
    monkeypatch.setattr(linear_softmax, "intersect_box",
                        lambda d_lo, d_hi, ahat, g1, lo, hi, fl: real(d_lo, d_hi, ahat, 0 * g1, lo, hi, fl))
    assert max(intersect_escapes(seed) for seed in range(5)) > 0
