"""The torch model equals the exact reference evaluator; causal masking; initialisation."""

from fractions import Fraction

import pytest
import torch

from constructions import attention, reference, task
from constructions.errors import BadInput, NotExpressible
from empirical.training import model as M

KINDS = attention.names()


def _random_model(kind, d, layers, heads, residual, seed, scale=0.7):
    m = M.AttentionModel(kind, d, layers=layers, heads=heads, residual=residual, seeds=seed, dtype=torch.float64)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for p in m.parameters():  # larger than the 0.02 init so every kind's nonlinearity matters
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * scale)
    return m


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("layers, heads, residual", [(1, 1, False), (2, 3, True)])
def test_torch_model_equals_exact_reference(kind, layers, heads, residual):
    cfg = task.TaskConfig(d=5, L=6, residual=residual)
    m = _random_model(kind, cfg.d, layers, heads, residual, seed=layers * 10 + heads)
    net = M.to_network(m)
    batch = task.sample(cfg, 4, torch.Generator().manual_seed(2), dtype=torch.float64)
    out, cache = m(batch.x)
    for b in range(batch.x.shape[0]):
        Y, patterns = reference.forward(net, batch.x[b].tolist(), "float")
        assert torch.allclose(out[b], torch.tensor(Y, dtype=torch.float64), atol=1e-12, rtol=1e-10)
        for n in range(layers):
            assert torch.allclose(cache[f"L{n}.pattern"][b], torch.tensor(patterns[n], dtype=torch.float64),
                                  atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("kind", KINDS)
def test_pattern_shapes_and_names(kind):
    m = M.AttentionModel(kind, 6, layers=3, heads=2, residual=True)
    x = task.sample(task.TaskConfig(d=6, L=7), 5, torch.Generator().manual_seed(0)).x
    out, cache = m(x)
    assert out.shape == (5, 7, 6)
    for n in range(3):
        assert cache[f"L{n}.pattern"].shape == (5, 2, 7, 7)


@pytest.mark.parametrize("kind", KINDS)
def test_causal_masking(kind):
    cfg = task.TaskConfig(d=6, L=8, trigger=3)
    m = _random_model(kind, cfg.d, 2, 2, True, seed=4)
    x = task.sample(cfg, 3, torch.Generator().manual_seed(1), dtype=torch.float64).x
    out, cache = m(x)
    for i in range(1, cfg.L):
        x2 = x.clone()
        x2[:, i:, 2:-1] = torch.randn(x2[:, i:, 2:-1].shape, dtype=torch.float64)
        out2, cache2 = m(x2)
        assert torch.equal(out[:, :i], out2[:, :i])
        assert not torch.allclose(out[:, i:], out2[:, i:])
        for n in range(2):
            assert torch.all(cache[f"L{n}.pattern"][..., :i, i:] == 0)


def test_initialisation_is_n_0_002_and_seeded():
    m = M.AttentionModel("softmax", 16, layers=4, heads=4, residual=True, seeds=0)
    w = torch.cat([p.flatten() for p in m.parameters()])
    assert abs(w.std().item() - 0.02) < 0.0005 and abs(w.mean().item()) < 0.0005
    again = M.AttentionModel("softmax", 16, layers=4, heads=4, residual=True, seeds=0)
    other = M.AttentionModel("softmax", 16, layers=4, heads=4, residual=True, seeds=1)
    assert all(torch.equal(p, q) for p, q in zip(m.parameters(), again.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(m.parameters(), other.parameters()))


def test_ensemble_members_match_single_models():
    seeds = [3, 7, 11]
    ens = M.AttentionModel("softmax", 6, layers=2, heads=2, residual=True, ensemble=3, seeds=seeds, dtype=torch.float64)
    x = task.sample(task.TaskConfig(d=6, L=7), 4, torch.Generator().manual_seed(0), dtype=torch.float64).x
    out, cache = ens(x)
    assert out.shape == (3, 4, 7, 6) and cache["L1.pattern"].shape == (3, 4, 2, 7, 7)
    for m, seed in enumerate(seeds):
        single = M.AttentionModel("softmax", 6, layers=2, heads=2, residual=True, seeds=seed, dtype=torch.float64)
        assert torch.equal(single.layers[1].W_O, ens.layers[1].W_O[m])
        assert torch.allclose(single(x)[0], out[m], atol=1e-14)


def test_exact_round_trip_through_torch():
    d = 4
    W = [[Fraction(i - j, 3) for j in range(d)] for i in range(d)]
    net = reference.single_head("relu", W, W, W, reference.identity(d))
    m = M.from_network(net)
    back = M.to_network(m)
    assert back.layers[0].W_Q[0] == tuple(tuple(float(v) for v in r) for r in W)


def test_unknown_kind_and_unexpressible_backend():
    with pytest.raises(BadInput, match="unknown attention kind 'softermax'.*softmax"):
        attention.get("softermax")
    with pytest.raises(BadInput, match="unknown attention kind"):
        M.AttentionModel("softermax", 6)
    one = reference.identity(4)
    net = reference.single_head("softmax", one, one, one, one)
    X = task.make_sequence([[Fraction(1)], [Fraction(0)], [Fraction(1)]], j=2)
    for backend in ("fraction", "z3"):
        with pytest.raises(NotExpressible, match="exp"):
            reference.forward(net, X, backend)


def test_exact_evaluator_over_sympy_and_z3():
    import sympy
    import z3

    one = reference.identity(4)
    X = task.make_sequence([[Fraction(1)], [Fraction(-1)], [Fraction(1, 2)]], j=2)
    Y, P = reference.forward(reference.single_head("softmax", one, one, one, one), X, "sympy")
    for row in P[0][0]:
        assert sympy.simplify(sum(row) - 1) == 0  # rows on the simplex, exactly
    relu = reference.single_head("relu", one, one, one, one)
    Yf, Pf = reference.forward(relu, X, "fraction")
    Yz, _ = reference.forward(relu, X, "z3")
    for rf, rz in zip(Yf, Yz):
        for a, b in zip(rf, rz):
            assert z3.simplify(b).as_fraction() == a
    # ReLU divides by max(i, 1): query 3 = (0,0,1/2,1) sees 3 non-BOS keys; key 1 = (0,0,1,1)
    # scores 1/2 * 1 + 1 * 1 = 3/2, so its weight is (3/2) / 3; BOS scores 0.
    assert Pf[0][0][3][1] == Fraction(3, 2) / 3
    assert Pf[0][0][3][0] == 0 and Pf[0][0][0][0] == 1  # BOS . BOS = 1, divided by max(0, 1)
