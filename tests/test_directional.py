"""Directional remainders (``proofs.certify.stack.directional``): the back-substituted bound on
g . e_p against every grid input of tiny three-layer stacks (random and score directions) and
equal to the exact supremum on a linear record, the stack certificate that reads its remainders
along directions below every enumerated input; and a planted mistake in each piece caught."""

import numpy as np
import pytest

from proofs.certify.arithmetic import affine, heads
from proofs.certify.stack import affine_stack, directional
from test_certify_stack import SINKING, enumerated_minima, sinking_stack, violations
from test_linear_stack import STACKS, grid_streams

LAYERS = 3


def recorded(net, L, j):
    """The forms entering every layer of trigger position j, with their ``Record``."""
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    z, memo, rec = affine.inputs(net.d, L, j), {}, directional.Record()
    for n in range(len(maps) - 1):
        rec.streams.append(z)
        out, _ = affine_stack.layer_step(net.kind, maps[n], z, j, n, memo, record=rec)
        z = affine.add(z, out)
    rec.streams.append(z)
    return rec, maps


def directions(rng, maps, z, n, d, L):
    """Objectives (position, direction): random ones and the directions the scores of layer n
    read the query's and the keys' remainders along."""
    out = [(p, rng.normal(0, 1, d)) for p in range(L) for _ in range(2)]
    for hm in maps[n]:
        for i in range(1, L):
            out += [(i, hm.M @ (z.b[k] - z.b[0])) for k in range(1, i + 1)] + [(k, hm.M.T @ z.b[i]) for k in range(i)]
    return out


def escapes(key, plain=False, layers=(1, 2)):
    """The largest amount by which |g . e_p| over the grid inputs exceeds its bound (<= 0: every
    input enclosed), relative to |g| . r_p, over trigger positions, layers 1 and 2, and objectives; ``plain``: also how
    often the bound is below |g| . r_p (the fraction of objectives where it helps)."""
    d, L, seed, kind, beta = key
    net = sinking_stack(d, seed, kind, beta=beta, layers=LAYERS)
    rng = np.random.default_rng(seed)
    worst, helped, total = -np.inf, 0, 0
    for j in range(2, L):
        u, xs = grid_streams(net, L, j)
        rec, maps = recorded(net, L, j)
        for n in layers:
            z = rec.streams[n]
            e = xs[n] - (np.einsum("ldn,bn->bld", z.A, u) + z.b)  # [B, L, d] the remainders at the grid inputs
            objectives = directions(rng, maps, z, n, d, L)
            bounds = directional.backward(rec, n, _start(objectives, d))
            for (p, g), bound in zip(objectives, bounds):
                worst = max(worst, float(np.abs(e[:, p] @ g).max() - bound) / (np.abs(g) @ z.r[p] + 1e-6))
                helped += bound < np.abs(g) @ z.r[p] * (1 - 1e-6)
                total += 1
    return (worst, helped / total) if plain else worst


def _start(objectives, d):
    start = {}
    for t, (p, g) in enumerate(objectives):
        start.setdefault(p, np.zeros((len(objectives), d)))[t] = g
    return start


IDS = [f"d{d}-L{L}-seed{s}" for d, L, s, _, _ in STACKS]


@pytest.mark.parametrize("key", STACKS, ids=IDS)
def test_directional_bound_encloses_every_grid_input(key):
    assert escapes(key) <= 1e-9


def test_directional_bound_is_below_the_coordinatewise_one_somewhere():
    """Not a no-op: on a tiny stack the back-substituted bound beats |g| . r_p on some objectives."""
    worst, helped = escapes(STACKS[0], plain=True)
    assert worst <= 1e-9 and helped > 0.05


@pytest.mark.parametrize("key", STACKS[:3] + [SINKING[3]], ids=IDS[:3] + ["sigmoid_norm"])
def test_stack_read_along_directions_below_every_enumerated_input(key):
    d, L, seed, kind, beta = key
    net = sinking_stack(d, seed, kind, beta=beta, layers=LAYERS)
    cert = affine_stack.certify_stack(net, L, exact_first=False, along=True)
    assert violations(cert, enumerated_minima(net, L)) == []


def synthetic(seed):
    """A two-layer ``Record`` whose remainders are exactly known: layer 0's outputs at each query q
    are sum_k delta_k w_k - shift_q with constant values w and delta free in a box with sum 0 (the
    deviations' programme, exact), layer 1 mixes its keys' remainders with fixed weights m (no
    deviation). Returns the record, a direction g at position p, and the exact supremum of
    |g . e_p| over every choice of the deltas (sums of linear programmes, in Fractions)."""
    from fractions import Fraction

    from test_linear_stack import lp_maximum

    rng = np.random.default_rng(seed)
    L, d, N = 4, 3, 3
    const = lambda: affine.Forms(np.zeros((L, d, N)), rng.normal(0, 1, (L, d)), np.zeros((L, d)))
    rec = directional.Record(streams=[const(), const(), const()])
    w0, w1, V1 = const(), const(), np.round(rng.normal(0, 1, (d, d)) * 8) / 8
    rec.V = {(0, 0): np.eye(d), (1, 0): V1}
    rec.values = {(0, 0): directional.Values.of(w0), (1, 0): directional.Values.of(w1)}
    boxes, weights = {}, {}
    for q in range(1, L):
        K = q + 1
        m0 = np.full(K, 1.0 / K)
        d_lo, d_hi = -np.round(rng.uniform(0, 0.3, K) * 64) / 64, np.round(rng.uniform(0, 0.3, K) * 64) / 64
        shift = np.round(rng.normal(0, 1, d) * 8) / 8
        boxes[q] = (d_lo, d_hi, shift)
        rec.mixtures[(0, 0, q)] = directional.Mixture([directional.Group(np.ones(d, bool), m0, d_lo, d_hi, 0.0, shift)], np.zeros(d))
        m1 = rng.dirichlet(np.ones(K))
        weights[q] = m1
        rec.mixtures[(1, 0, q)] = directional.Mixture([directional.Group(np.ones(d, bool), m1, np.zeros(K), np.zeros(K), 0.0,
                                                                         np.zeros(d))], np.zeros(d))
    p, g = L - 1, np.round(rng.normal(0, 1, d) * 8) / 8
    reach = {q: (p == q) * g + weights[p][q] * (g @ V1) for q in range(1, p + 1)}  # e^2_p = e^1_p + sum_q m_q V1 e^1_q

    def sup(sign):
        total = Fraction(0)
        for q, D in reach.items():
            d_lo, d_hi, shift = boxes[q]
            y = [Fraction(sign * float(D @ w0.b[k])) for k in range(q + 1)]
            total += lp_maximum(y, y, d_lo, d_hi) - Fraction(sign * float(D @ shift))
        return total
    return rec, p, g, max(sup(1), sup(-1))


@pytest.mark.parametrize("seed", range(4))
def test_backward_equals_the_exact_supremum_on_a_linear_record(seed):
    rec, p, g, exact = synthetic(seed)
    bound = directional.backward(rec, 2, {p: g[None]})[0]
    assert bound >= float(exact) and bound <= float(exact) * (1 + 1e-5) + 1e-6


@pytest.mark.parametrize("seed", range(2))
def test_backward_terms_put_each_deviation_at_its_layer(seed):
    """The split by layer (what ``bench_where_lost`` reports): on the linear record only layer 0's
    weights deviate, so layer 1's part is zero, and the parts add up to ``backward``'s bound."""
    rec, p, g, exact = synthetic(seed)
    low, high, allow = directional.backward_terms(rec, 2, {p: g[None]})
    assert abs(low[1, 0]) < 1e-12 and abs(high[1, 0]) < 1e-12
    assert high[0, 0] - low[0, 0] > 0.01
    whole = directional.backward(rec, 2, {p: g[None]})[0]
    assert whole == pytest.approx(max(high[:, 0].sum(), -low[:, 0].sum()) + allow[0], rel=1e-6)
    assert whole >= float(exact)


# ---- planted mistakes, each caught ---------------------------------------------------------


def planted_caught():
    """Whether ``test_backward_equals_the_exact_supremum_on_a_linear_record`` fails on some seed."""
    for seed in range(4):
        rec, p, g, exact = synthetic(seed)
        bound = directional.backward(rec, 2, {p: g[None]})[0]
        if not (bound >= float(exact) and bound <= float(exact) * (1 + 1e-5) + 1e-6):
            return True
    return False


def test_dropped_deviation_term_is_caught(monkeypatch):
    monkeypatch.setattr(directional, "_deviations", lambda grp, w, g: (np.zeros(len(g)), np.zeros(len(g))))
    assert planted_caught()
    assert any(escapes(key) > 1e-6 for key in STACKS)


def test_dropped_residual_path_is_caught(monkeypatch):
    real = directional.backward

    def without_residual(rec, layer, start):
        rec.residual = False
        return real(rec, layer, start)
    monkeypatch.setattr(directional, "backward", without_residual)
    assert planted_caught()


def test_dropped_back_substitution_is_caught(monkeypatch):
    """The weights' constant part not passed down to the keys' remainders."""
    monkeypatch.setattr(directional, "_pass_down", lambda passed, m, back: None)
    assert planted_caught()


def test_shift_with_the_wrong_sign_is_caught(monkeypatch):
    real = directional._deviations

    def flipped(grp, w, g):
        grp.shift = -grp.shift
        out = real(grp, w, g)
        grp.shift = -grp.shift
        return out
    monkeypatch.setattr(directional, "_deviations", flipped)
    assert planted_caught()


def test_directional_slack_is_pinned():
    """The rounding allowance: 100 x the forms' own at the widest products (a few hundred terms)."""
    assert directional.SLACK == 1e-7
    assert directional.SLACK >= 100 * affine.RELATIVE_SLACK * 400


def test_score_row_without_its_directional_bound_is_caught(monkeypatch):
    """The score's remainder row read along a direction, with the bound on |g . e| dropped."""
    from proofs.certify.stack import scores

    real = scores._remainder_row
    monkeypatch.setattr(scores, "_remainder_row", lambda g, G, r, along: (real(g, G, r, along)[0], 0.0))
    d, L, seed, kind, beta = STACKS[2]
    net = sinking_stack(d, seed, kind, beta=beta, layers=LAYERS)
    cert = affine_stack.certify_stack(net, L, exact_first=False, along=True)
    assert violations(cert, enumerated_minima(net, L)) != []


def test_rounding_turned_inward_is_caught(monkeypatch):
    """The allowance subtracted instead of added: the bound falls below the exact supremum."""
    monkeypatch.setattr(directional, "SLACK", -1e-3)
    assert planted_caught()
