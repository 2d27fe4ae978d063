"""The batched head ablations of ``empirical.lm.ablate`` (many (head, kind) variants in the batch
dimension of one replay) against the one-head-at-a-time ablation, on tiny random Llamas."""

from __future__ import annotations

import pytest
import torch

from empirical.lm import ablate, load

from tests.test_lm_probe import ids, tiny_llama

needs_lm = pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")
TOL = 1e-5  # float32 losses of the same arithmetic in another batch layout


@needs_lm
@pytest.mark.parametrize("texts,max_tokens", [(1, 10_000), (3, 10_000), (3, 30)])
def test_batched_ablation_equals_one_head_at_a_time(texts, max_tokens):
    """Every (head, kind) of every layer; max_tokens=30 forces one variant per replay."""
    model = tiny_llama(kv_heads=2, layers=3)
    x_ids = ids(n=texts, T=10)
    clean = ablate.clean_run(model, x_ids)
    variants = [(h, kind) for kind in ablate.KINDS for h in range(4)]
    moved = 0.0
    for layer in range(3):
        got = ablate.batched_losses(model, clean, x_ids, layer, variants, max_tokens=max_tokens)
        assert got.shape == (len(variants), texts)
        for v, (h, kind) in enumerate(variants):
            want = ablate.ablated_loss(model, clean, x_ids, layer, h, kind)
            assert (got[v] - want).abs().max().item() <= TOL
            moved = max(moved, (want - clean.loss).abs().max().item())
    assert moved > 1e-3  # the ablations change the loss, so equality is not between two clean runs


@needs_lm
def test_batched_ablation_sees_a_wrong_head():
    """Negative control: the batch layout is variant-major; a variant's row read as another
    head's differs from that head's one-at-a-time loss."""
    model = tiny_llama(kv_heads=2, layers=2)
    x_ids = ids(n=3, T=10)
    clean = ablate.clean_run(model, x_ids)
    got = ablate.batched_losses(model, clean, x_ids, 0, [(0, "removed"), (3, "removed")])
    want = ablate.ablated_loss(model, clean, x_ids, 0, 3, "removed")
    assert (got[1] - want).abs().max().item() <= TOL
    assert (got[0] - want).abs().max().item() > 1e-4


@needs_lm
def test_chunked_loss_equals_the_whole_batch():
    model = tiny_llama(layers=2)
    x_ids = ids(n=5, T=10)
    clean = ablate.clean_run(model, x_ids)
    hidden = ablate.replay_hidden(model, clean, 0)
    assert (ablate.chunked_loss(model, hidden, x_ids, rows=2) - clean.loss).abs().max().item() <= TOL


def test_token_loss_equals_float64_cross_entropy():
    """The logsumexp form against torch's own cross-entropy of the float64 logits, next-token shift
    included (a target read one position off, or the logsumexp left out, is far from it)."""
    gen = torch.Generator().manual_seed(0)
    logits = 4 * torch.randn(3, 7, 50, generator=gen)
    x_ids = torch.randint(0, 50, (3, 7), generator=gen)
    want = torch.stack([torch.nn.functional.cross_entropy(logits[b, :-1].double(), x_ids[b, 1:]) for b in range(3)])
    got = ablate.token_loss(logits, x_ids)
    assert got.dtype == torch.float64 and (got - want).abs().max().item() <= 1e-12
    shifted = torch.stack([torch.nn.functional.cross_entropy(logits[b, :-1].double(), x_ids[b, :-1]) for b in range(3)])
    assert (got - shifted).abs().max().item() > 1e-2


def test_qr_runs_on_one_thread_and_restores_the_count():
    from empirical.lm import heads

    before = torch.get_num_threads()
    W = torch.randn(3, 20, 4, dtype=torch.float64)
    Q, R = heads._qr_one_thread(W)
    assert torch.get_num_threads() == before
    assert (Q @ R - W).abs().max().item() <= 1e-12
