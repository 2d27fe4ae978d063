"""The ``fused`` formulation's hand-written backward (empirical/fused.py): gradcheck in float64,
gradients equal to autograd of ``bmm`` (also through the pattern, and with the pattern alone),
the first layer's input without a gradient, the kinds it does not write out falling back to
``bmm``. Its values against the exact evaluator and ``bmm`` are in tests/test_formulations.py."""

import pytest
import torch

from empirical import formulations as F
from empirical import fused
from empirical import model as M

KINDS = sorted(fused.KINDS)


def _inputs(S, B, L, d, H, seed=0, scale=0.7):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(S, B, L, d, generator=g, dtype=torch.float64)
    Gt = torch.randn(S, d, H * d, generator=g, dtype=torch.float64) * scale
    Mt = torch.randn(S, H * d, d, generator=g, dtype=torch.float64) * scale
    return xs, Gt, Mt


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
def test_the_hand_written_backward_passes_gradcheck(kind, residual, x_grad):
    S, B, L, d, H = 2, 3, 4, 3, 2
    xs, Gt, Mt = _inputs(S, B, L, d, H, seed=3)
    bias = F.causal_bias(L, H, xs)[0]
    weights = torch.randn(S, B, L * H, L, generator=torch.Generator().manual_seed(5), dtype=torch.float64)

    def f(xs, Gt, Mt):  # the output and the pattern both reach the loss
        out, pattern = fused.layer(kind, xs, Gt, Mt, bias, residual)
        return out, pattern * weights

    assert torch.autograd.gradcheck(f, (xs.requires_grad_(x_grad), Gt.requires_grad_(), Mt.requires_grad_()))


def _grads(m, x, form, loss):
    m.zero_grad()
    out, cache = m(x, formulation=form)
    loss(out, cache).backward()
    return [None if p.grad is None else p.grad.clone() for p in m.parameters()]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["output", "output and pattern", "pattern"])
@pytest.mark.parametrize("block", [None, 2 * 16 * 64 * 16])
def test_gradients_equal_autograd_of_bmm_in_float64(kind, which, block, monkeypatch):
    """The 4 x 4, 5-member training shape; the loss reads the output, the patterns, or both; all
    members in one block, or blocks of 2, 2 and 1 members."""
    if block:
        monkeypatch.setattr(fused, "BLOCK", block)
        assert fused.members_per_block(5, 16, 64, 16) == 2
    m = M.AttentionModel(kind, 16, layers=4, heads=4, residual=True, ensemble=5, seeds=range(5), dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(10)  # past the 0.02 init, so the nonlinearities matter
    x = torch.rand(5, 16, 16, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = torch.rand(x.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    parts = {"output": lambda out, cache: (out - y).pow(2).mean(),
             "pattern": lambda out, cache: sum(cache[f"L{n}.pattern"][..., 0].pow(2).sum() for n in range(4))}
    loss = parts.get(which) or (lambda out, cache: parts["output"](out, cache) + parts["pattern"](out, cache))
    ref, got = _grads(m, x, "bmm", loss), _grads(m, x, "fused", loss)
    for g, r in zip(got, ref):
        assert (g is None) == (r is None)  # the pattern alone: the last W_V, W_O get none, as under autograd
        assert r is None or torch.allclose(g, r, rtol=1e-10, atol=1e-14 * r.abs().max())
    assert (which == "pattern") == any(r is None for r in ref)


def test_a_batch_shared_by_every_member_and_a_single_model():
    """x [B, L, d] broadcast to the members (a stride-0 member dimension), and no ensemble at all."""
    for ensemble in (3, None):
        m = M.AttentionModel("softmax", 6, layers=2, heads=2, residual=True, ensemble=ensemble,
                             seeds=range(ensemble or 1), dtype=torch.float64)
        x = torch.rand(4, 5, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        loss = lambda out, cache: out.pow(2).sum()  # noqa: E731
        for g, r in zip(_grads(m, x, "fused", loss), _grads(m, x, "bmm", loss)):
            assert torch.allclose(g, r, rtol=1e-10, atol=1e-16)


def test_other_kinds_run_bmm():
    assert set(fused.KINDS) == {"softmax", "relu"}
    m = M.AttentionModel("sigmoid_norm", 6, layers=1, heads=2, ensemble=2, seeds=range(2), dtype=torch.float64)
    x = torch.rand(2, 3, 5, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    out, cache = m(x, formulation="fused")
    ref, ref_cache = m(x, formulation="bmm")
    assert torch.equal(out, ref) and torch.equal(cache["L0.pattern"], ref_cache["L0.pattern"])
    assert out.grad_fn.name() == ref.grad_fn.name()  # bmm's graph, not the fused function's


def test_members_per_block():
    assert fused.BLOCK == 128 * 64 * 16
    assert [fused.members_per_block(5, 128, 16 * H, 16) for H in (4, 2, 1)] == [1, 2, 3]  # 3, not 4 + 1
    assert fused.members_per_block(1, 4096, 64, 16) == 1  # at least one member


def test_the_relu_divisor_is_max_of_position_and_one():
    div = fused.divisor(4, 2, torch.zeros((), dtype=torch.float64))
    assert div.flatten().tolist() == [1, 1, 1, 1, 2, 2, 3, 3]  # rows (query, head)
