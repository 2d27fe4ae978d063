"""The zonotope stack certificate (``proofs.certify.stack.zono_stack``) against every input of
tiny stacks on a content grid: its per-head bounds below every input's BOS mass, its layer-1
stream containing every input's exact stream at that input's own contents, and plants (a
transformer's remainder dropped) that the stream check catches."""

import numpy as np
import pytest

from proofs.certify.arithmetic import heads
from proofs.certify.stack import zono_stack
from proofs.certify.arithmetic import zonotope as zt
from tests.test_certify_stack import SINKING, WEAK, enumerated_minima, sinking_stack, violations
from tests.test_stack_score_remainders import layer1_streams

SOFTMAX = [key for key in SINKING if key[3] == "softmax"] + [WEAK]


def net_of(key):
    d, L, seed, kind, beta = key
    return sinking_stack(d, seed, kind, beta=beta), L


@pytest.mark.parametrize("key", SOFTMAX, ids=[f"d{k[0]}-L{k[1]}-seed{k[2]}" for k in SOFTMAX])
def test_zonotope_bound_below_every_enumerated_input(key):
    net, L = net_of(key)
    cert = zono_stack.certify_stack(net, L)
    assert violations(cert, enumerated_minima(net, L)) == []
    # not vacuous: layer 0 within 0.05 of the grid's minimum on the sinking stacks' heads
    worst = enumerated_minima(net, L)
    if key != WEAK:
        assert all(min(worst[(0, hd["head"], i)] for i in range(1, L)) - hd["min_bos_certified"] < 0.05
                   for hd in cert["heads"] if hd["layer"] == 0)


def layer1_zono(net, L, j):
    maps = [heads.head_maps(net, 0, h) for h in range(net.layers[0].heads)]
    z = zono_stack.inputs(net.d, L, j)
    out, _ = zono_stack.layer_step(maps, z)
    return zt.fresh(zt.add(z, out))


def stream_escape(net, L) -> float:
    """Worst excess of an input's exact layer-1 stream over the zonotope at that input's contents
    (the first N symbols; the fresh ones and the remainder free): <= 0 when enclosed."""
    worst = -np.inf
    for j in range(2, L):
        contents, streams = layer1_streams(net, L, j)
        z = layer1_zono(net, L, j)
        u = contents.reshape(len(contents), -1)
        N = u.shape[1]
        at = z.c[None] + np.einsum("lde,be->bld", z.G[..., :N], u)
        slack = np.abs(z.G[..., N:]).sum(axis=-1) + z.r
        worst = max(worst, float(np.max(np.abs(streams - at) - slack[None])))
    return worst


@pytest.fixture(scope="module")
def weak_net():
    return net_of(WEAK)


def test_layer1_stream_encloses_every_grid_input(weak_net):
    assert stream_escape(*weak_net) <= 1e-9


def _no_remainder(fn):
    def dropped(*args, **kwargs):
        out = fn(*args, **kwargs)
        return zt.Zono(out.c, out.G, np.zeros_like(out.r))
    return dropped


@pytest.mark.parametrize("name", ["product", "exp", "reciprocal"])
def test_dropped_transformer_remainder_is_caught(weak_net, name, monkeypatch):
    monkeypatch.setattr(zt, name, _no_remainder(getattr(zt, name)))
    assert stream_escape(*weak_net) > 1e-3


def test_dropped_score_remainder_is_caught(weak_net, monkeypatch):
    """Without the scores' quadratic part and remainder the weights are too narrow: some head's
    bound exceeds a grid input's BOS mass (on this stack already at layer 0, by 0.0095 at most)."""
    net, L = weak_net
    monkeypatch.setattr(zono_stack, "scores", _no_remainder(zono_stack.scores))
    assert violations(zono_stack.certify_stack(net, L), enumerated_minima(net, L))


def test_branch_and_bound_stays_below_every_input_and_tightens():
    """Splitting the contents keeps every bound below the grid (each class is a sub-box) and lifts
    the deeper layer's loosest heads (seed 5: L1H0 0.24 -> 0.37, L1H1 0.12 -> 0.20 at 16 classes)."""
    net, L = net_of(SINKING[1])
    worst = enumerated_minima(net, L)
    one, split = zono_stack.certify_stack(net, L), zono_stack.certify_stack(net, L, boxes=16)
    assert violations(split, worst) == []
    assert split["classes_run"] > one["classes_run"]
    deep = [(a["min_bos_certified"], b["min_bos_certified"]) for a, b in zip(one["heads"], split["heads"]) if a["layer"] == 1]
    assert all(b >= a for a, b in deep) and any(b > a + 0.05 for a, b in deep)


def test_centre_bos_is_the_models_bos_mass():
    """The float forward that steers the splits is the model's (the float64 torch model)."""
    import torch

    from constructions import task
    from empirical.training.model import from_network

    net, L = net_of(WEAK)
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    z = zono_stack.box_inputs(net.d, L, 2, np.full((L - 1) * (net.d - 3), 0.25), np.full((L - 1) * (net.d - 3), 0.75))
    assert np.all(z.G.sum(axis=-1) >= 0) and z.c[1, task.CONTENT_START] == 0.5
    with torch.no_grad():
        _, cache = from_network(net, dtype=torch.float64)(torch.tensor(z.c)[None])
    model = np.array([cache[f"L{n}.pattern"][0, :, :, 0].numpy() for n in range(len(net.layers))])
    assert np.allclose(zono_stack.centre_bos(maps, z.c, net.residual), model, atol=1e-12)
