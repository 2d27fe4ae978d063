"""Per-key attention-weight bounds searched jointly over the query's content
(``proofs.certify.stack.joint_weights``, ``sinks certify --stack-method joint``): every grid input's
weights of tiny three-layer stacks inside them at every layer, narrower than the keys' separate
ranges somewhere, the stack certificate with them below every enumerated input; and a planted
mistake in each piece caught."""

import numpy as np
import pytest

from proofs.certify.stack import affine_stack, directional, joint_weights
from test_certify_stack import enumerated_minima, sinking_stack, violations
from test_directional import IDS, LAYERS, recorded
from test_linear_stack import STACKS, grid_streams, softmax


def weight_escapes(key):
    """(the largest amount by which a grid input's weight a_ik leaves its joint bounds, over
    layers, heads, queries, keys and trigger positions (<= 0: every input inside); the fraction of
    keys whose joint box is narrower than ``key_bounds``' without the search)."""
    d, L, seed, kind, beta = key
    net = sinking_stack(d, seed, kind, beta=beta, layers=LAYERS)
    worst, narrower, total = -np.inf, 0, 0
    for j in range(2, L):
        _, xs = grid_streams(net, L, j)
        rec, maps = recorded(net, L, j)
        for n in range(LAYERS):
            z, along = rec.streams[n], directional.Cached(rec, n) if n > 0 else None
            for hm in maps[n]:
                s = np.einsum("bid,de,bke->bik", xs[n], hm.M, xs[n]) + np.triu(np.full((L, L), -np.inf), 1)
                a = softmax(s)
                for i in range(1, L):
                    lo, hi = affine_stack.key_bounds(kind, hm.M, z, i, along=along, joint=True)
                    p_lo, p_hi = affine_stack.key_bounds(kind, hm.M, z, i, along=along)
                    seen = a[:, i, :i + 1]
                    worst = max(worst, float((lo - seen).max()), float((seen - hi).max()))
                    narrower += int(((hi - lo) < (p_hi - p_lo) - 1e-9).sum())
                    total += i + 1
    return worst, narrower / total


@pytest.mark.parametrize("key", STACKS, ids=IDS)
def test_every_grid_input_inside_the_joint_bounds(key):
    worst, narrower = weight_escapes(key)
    assert worst <= 1e-12
    assert narrower > 0.2  # not a no-op: the search narrows a fifth of the boxes or more


@pytest.mark.parametrize("key", STACKS[:3], ids=IDS[:3])
def test_stack_with_joint_weights_below_every_enumerated_input(key):
    d, L, seed, kind, beta = key
    net = sinking_stack(d, seed, kind, beta=beta, layers=LAYERS)
    cert = affine_stack.certify_stack(net, L, exact_first=False, along=True, joint=True)
    assert violations(cert, enumerated_minima(net, L)) == []
    assert "jointly" in cert["method"]


def test_joint_nodes_pinned():
    """The search's budget per key: every figure is certified at any budget, so it trades CPU for
    tightness only (measured on a 4 x 4 stack's layer-2 class: 4 nodes 0.872, 8 nodes 0.879, 20
    nodes 0.882, 40 nodes 0.888)."""
    assert joint_weights.NODES == 20


# ---- planted mistakes, each caught ---------------------------------------------------------


def test_key_rows_dropped_is_caught(monkeypatch):
    """The difference without the bottom exponent's support rows: each key's own contents and
    remainders ignored."""
    from proofs.certify.arithmetic.heads import Exponent

    def top_rows_only(top, bottom, sign):
        return Exponent(top.a - bottom.a, top.p - bottom.p, top.S - bottom.S, sign, top.b, top.K, top.weights)
    monkeypatch.setattr(joint_weights, "difference", top_rows_only)
    assert any(weight_escapes(key)[0] > 1e-6 for key in STACKS)


def test_lower_sum_searched_from_above_is_caught(monkeypatch):
    """hi_k from the sum's upper bound instead of its lower one."""
    real = joint_weights._sum_bound
    monkeypatch.setattr(joint_weights, "_sum_bound", lambda terms, n, sign, search: real(terms, n, +1, search)
                        if sign < 0 else real(terms, n, sign, search))
    assert any(weight_escapes(key)[0] > 1e-6 for key in STACKS)
