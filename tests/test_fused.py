"""The ``fused`` formulation (empirical/training/fused.py): its function against the exact evaluator, its
hand-written backward by gradcheck in float64 and against autograd of ``bmm`` (through the output,
the pattern, both; the first layer's input without a gradient; uneven blocks of members), and
where it runs ``bmm`` instead (other kinds, patterns smaller than a block). tests/test_formulations.py
holds the formulation as chosen (the function at 4 x 4, bmm at its small shapes) to bmm in float32."""

import pytest
import torch

from constructions import attention
from empirical.training import formulations as F
from empirical.training import fused
from empirical.training import model as M

import test_formulations
from test_formulations import restore_choice  # noqa: F401 (a fixture)

KINDS = sorted(fused.KINDS)


@pytest.fixture
def always():
    """The fused function at every shape (not only where a member's pattern fills a block)."""
    saved = fused.BLOCK
    fused.BLOCK = 1
    yield
    fused.BLOCK = saved


@pytest.mark.parametrize("kind", attention.names())
@pytest.mark.parametrize("layers, heads, ensemble", [(1, 1, None), (2, 3, 2)])
def test_the_fused_function_equals_the_exact_reference(kind, layers, heads, ensemble, always):
    assert fused.pays(1, 1, 1)
    test_formulations.test_every_formulation_equals_the_exact_reference("fused", kind, layers, heads, ensemble)


def _inputs(S, B, L, d, H, seed=0, scale=0.7, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(S, B, L, d, generator=g, dtype=dtype)
    Gt = torch.randn(S, d, H * d, generator=g, dtype=dtype) * scale
    Mt = torch.randn(S, H * d, d, generator=g, dtype=dtype) * scale
    return xs, Gt, Mt


def test_an_ensemble_member_trained_with_the_fused_function_equals_its_single_run(always, restore_choice):  # noqa: F811
    test_formulations.test_an_ensemble_member_trained_with_each_formulation_equals_its_single_run("fused", None)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
@pytest.mark.parametrize("block", [1, 2 * 2 * 8 * 4])
def test_the_hand_written_backward_passes_gradcheck(kind, residual, x_grad, block, monkeypatch):
    """Members one by one, or in blocks of 2 and 1."""
    monkeypatch.setattr(fused, "BLOCK", block)
    assert fused.members_per_block(3, 2, 8, 4) == (1 if block == 1 else 2)
    S, B, L, d, H = 3, 2, 4, 3, 2
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
def test_gradients_equal_autograd_of_bmm_in_float64(kind, which, monkeypatch):
    """The 4 x 4, 5-member training shape (16 sequences, a block per member); the loss reads the
    output, the patterns, or both."""
    monkeypatch.setattr(fused, "BLOCK", 16 * 64 * 16)
    assert fused.pays(16, 64, 16) and fused.members_per_block(5, 16, 64, 16) == 1
    assert_gradients_equal_bmms("fused", kind, which)


def assert_gradients_equal_bmms(form, kind, which):
    """``form``'s gradients against autograd of bmm on the 4 x 4, 5-member shape in float64 (16
    sequences), the loss reading the output, the patterns, or both."""
    m = M.AttentionModel(kind, 16, layers=4, heads=4, residual=True, ensemble=5, seeds=range(5), dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(10)  # past the 0.02 init, so the nonlinearities matter
    x = torch.rand(5, 16, 16, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = torch.rand(x.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    parts = {"output": lambda out, cache: (out - y).pow(2).mean(),
             "pattern": lambda out, cache: sum(cache[f"L{n}.pattern"][..., 0].pow(2).sum() for n in range(4))}
    loss = parts.get(which) or (lambda out, cache: parts["output"](out, cache) + parts["pattern"](out, cache))
    ref, got = _grads(m, x, "bmm", loss), _grads(m, x, form, loss)
    for g, r in zip(got, ref):
        assert (g is None) == (r is None)  # the pattern alone: the last W_V, W_O get none, as under autograd
        assert r is None or torch.allclose(g, r, rtol=1e-10, atol=1e-14 * r.abs().max())
    assert (which == "pattern") == any(r is None for r in ref)


def test_a_batch_shared_by_every_member_and_a_single_model(always):
    """x [B, L, d] broadcast to the members (a stride-0 member dimension), and no ensemble at all."""
    assert_shared_batch_gradients_equal_bmms("fused", L=5, d=6, node="_LayerBackward")


def assert_shared_batch_gradients_equal_bmms(form, L, d, node):
    """``form`` (whose last layer's autograd node is ``node``) on x [4, L, d] shared by 3 members,
    and on a model without an ensemble: the gradients of bmm's autograd."""
    for ensemble in (3, None):
        m = M.AttentionModel("softmax", d, layers=2, heads=2, residual=True, ensemble=ensemble,
                             seeds=range(ensemble or 1), dtype=torch.float64)
        x = torch.rand(4, L, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        loss = lambda out, cache: out.pow(2).sum()  # noqa: E731
        out, _ = m(x, formulation=form)
        assert node in str(out.grad_fn.next_functions)
        for g, r in zip(_grads(m, x, form, loss), _grads(m, x, "bmm", loss)):
            assert torch.allclose(g, r, rtol=1e-10, atol=1e-16)


@pytest.mark.parametrize("kind, heads, batch, runs", [
    ("softmax", 4, 128, "fused"), ("relu", 4, 128, "fused"),  # the 4 x 4 reference shape
    ("softmax", 2, 128, "bmm"), ("softmax", 1, 128, "bmm"),  # 2 x 2, 1 x 1: smaller than a block
    ("softmax", 2, 256, "fused"),  # a member's pattern fills a block again
    ("sigmoid_norm", 4, 128, "bmm"),  # a kind the function does not write out
])
def test_where_the_fused_function_runs(kind, heads, batch, runs):
    assert set(fused.KINDS) == {"softmax", "relu"} and fused.BLOCK == 128 * 64 * 16
    m = M.AttentionModel(kind, 16, layers=1, heads=heads, ensemble=2, seeds=range(2))
    x = torch.rand(2, batch, 16, 16, generator=torch.Generator().manual_seed(0))
    out, _ = m(x, formulation="fused")
    node = out.grad_fn.next_functions[0][0]  # under the model's view of the layer's output
    assert out.grad_fn.name() == "ViewBackward0" and (node.name() == "_LayerBackward") == (runs == "fused")


def test_members_per_block():
    assert [fused.members_per_block(5, 128, 16 * H, 16) for H in (4, 2, 1)] == [1, 2, 3]  # 3, not 4 + 1
    assert fused.members_per_block(1, 4096, 64, 16) == 1  # at least one member


def test_the_relu_divisor_is_max_of_position_and_one():
    div = fused.divisor(4, 2, torch.zeros((), dtype=torch.float64))
    assert div.flatten().tolist() == [1, 1, 1, 1, 2, 2, 3, 3]  # rows (query, head)
