"""The bilinear score bound of a stack (``scores.bilinear``) against the exact
layer-1 scores over every input of a tiny stack, and a planted drop of either side's remainder.

At a deeper layer the query's stream is x(c) + eta and a key's y + zeta; the first-order terms
with a remainder are (M y) . e (the query's interval part multiplied into the key side) and
(M^T x) . e' (the key's interval part multiplied into the query side). Each test below encloses
s_ik - s_i0 at every content on a grid and every trigger position, and fails when either term is
left out of the bound.
"""

import numpy as np
import pytest

from proofs.certify.arithmetic import affine, heads
from proofs.certify.stack import affine_stack, scores
from tests.test_certify_stack import GRID, grid_inputs, sinking_stack

# (d, L, seed, kind, beta): a stack whose layer 0 does not sink (its mixtures carry large
# remainders into layer 1) and one whose layer 0 sinks.
CASES = [(4, 5, 0, "softmax", 3.0), (4, 5, 1, "softmax", 4.0)]


def layer1_streams(net, L, j, grid=GRID):
    """(contents [B, L-1, n], layer-1 input streams [B, L, d]) of every grid input, trigger at j
    (the float64 torch model, held equal to the exact reference by tests/test_model.py)."""
    import torch

    from empirical.training.model import from_network

    contents, x = grid_inputs(net.d, L, j, grid)
    with torch.no_grad():
        _, cache = from_network(net, dtype=torch.float64)(x)
    return contents, cache["L1.input"].numpy()


def layer1_forms(net, L, j):
    """The stack's own affine forms of the layer-1 stream, trigger at j."""
    maps = [heads.head_maps(net, 0, h) for h in range(net.layers[0].heads)]
    z = affine.inputs(net.d, L, j)
    out, _ = affine_stack.layer_step(net.kind, maps, z, j, 0)
    return affine.add(z, out)


def escapes(net, L):
    """Worst excess of the exact score difference s_ik - s_i0 over its bound, at every layer-1 head,
    query, key, trigger position and grid input (<= 0: enclosed)."""
    worst = -np.inf
    for j in range(2, L):
        contents, streams = layer1_streams(net, L, j)
        z = layer1_forms(net, L, j)
        for h in range(net.layers[1].heads):
            M = heads.head_maps(net, 1, h).M
            s = np.einsum("nqa,ab,nkb->nqk", streams, M, streams)  # every score
            for i in range(1, L):
                c = contents[:, i - 1, :]
                for k, (up, lo) in enumerate(scores.key_exponents(M, z, i, scores.bos_reference(z))):
                    if k == 0:
                        continue  # BOS minus itself: 0 at every input, its bound +-rounding
                    diff = s[:, i, k] - s[:, i, 0]
                    worst = max(worst, float(np.max(diff - up.value(c))), float(np.max(lo.value(c) - diff)))
    return worst


def drop_remainder(monkeypatch, side):
    """Plant: ``scores.bilinear`` without the first-order term of the query's ("query") or the
    key's ("key") interval remainder. Its rows are [u rows, (M^T x, key remainder), (M y, query
    remainder)]; for the query's own key [u rows, (both, the shared query remainder), (M^T x, the
    reference's remainder)]."""
    original = scores.bilinear

    def bilinear(M, x, y, own=False):
        real = scores._exponents

        def exponents(a, p, S, rows, low, high):
            drop = {("query", False): 2, ("key", False): 1, ("query", True): 1, ("key", True): 2}[(side, own)]
            return real(a, p, S, [r for n, r in enumerate(rows) if n != drop], low, high)

        monkeypatch.setattr(scores, "_exponents", exponents)
        try:
            return original(M, x, y, own)
        finally:
            monkeypatch.setattr(scores, "_exponents", real)

    monkeypatch.setattr(scores, "bilinear", bilinear)


def net_L(case):
    d, L, seed, kind, beta = case
    return sinking_stack(d, seed, kind, beta=beta), L


@pytest.mark.parametrize("case", CASES, ids=[f"seed{c[2]}" for c in CASES])
def test_score_bound_encloses_every_grid_input(case):
    assert escapes(*net_L(case)) <= 1e-9  # nearest grid input: 0.67 (seed 0), 0.018 (seed 1) below


# Measured (worst excess on the grid with the term dropped): query side 4.16 (seed 0) and 1.41
# (seed 1); key side 0.188 (seed 1). On seed 0 the key-side drop stays enclosed (its worst grid
# input is unchanged, 0.67 below): there the worst inputs are where the key's remainder does not count.
PLANTS = [(CASES[0], "query"), (CASES[1], "query"), (CASES[1], "key")]


@pytest.mark.parametrize("case, side", PLANTS, ids=[f"seed{c[2]}-{s}" for c, s in PLANTS])
def test_score_bound_needs_each_sides_remainder(case, side, monkeypatch):
    drop_remainder(monkeypatch, side)
    assert escapes(*net_L(case)) > 1e-3
