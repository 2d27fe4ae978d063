"""Head zeroing (``empirical.lm.zeroing``, ``ablate.ZEROED``): the zeroing against the model with the
head's o_proj slice zeroed, on tiny random Llamas (batched against one head at a time:
``tests/test_lm_ablate.py``, whose ``ablate.KINDS`` includes it); the pinned no-loss threshold and
screen; the verdict and the overlaps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from empirical.lm import ablate, load, zeroing

from tests.test_lm_probe import ids, tiny_llama

needs_lm = pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")
TOL = 1e-5  # float32 losses of the same arithmetic in another batch layout


def _zero_slice(model, layer: int, head: int, head_dim: int = 8) -> None:
    with torch.no_grad():
        model.model.layers[layer].self_attn.o_proj.weight[:, head * head_dim:(head + 1) * head_dim] = 0.0


@needs_lm
def test_zeroing_equals_the_model_without_the_heads_output_slice():
    """Independent of the hooks: zeroing head h equals the clean loss of a copy whose o_proj
    columns of head h are zero; zeroing another head does not (negative control)."""
    model = tiny_llama(kv_heads=2, layers=2)
    x_ids = ids(n=3, T=10)
    clean = ablate.clean_run(model, x_ids)
    got = ablate.batched_losses(model, clean, x_ids, 1, [(2, ablate.ZEROED), (0, ablate.ZEROED)])
    _zero_slice(model, 1, 2)
    want = ablate.token_loss(model(input_ids=x_ids).logits, x_ids)
    assert (got[0] - want).abs().max().item() <= TOL
    assert (got[1] - want).abs().max().item() > 1e-4


@needs_lm
def test_zeroing_a_head_with_a_zero_output_slice_changes_nothing():
    model = tiny_llama(kv_heads=2, layers=2)
    _zero_slice(model, 0, 1)
    x_ids = ids(n=3, T=10)
    clean = ablate.clean_run(model, x_ids)
    got = ablate.batched_losses(model, clean, x_ids, 0, [(1, ablate.ZEROED), (3, ablate.ZEROED)])
    assert (got[0] - clean.loss).abs().max().item() == 0.0
    assert (got[1] - clean.loss).abs().max().item() > 1e-4  # another head's zeroing moves it


def test_no_loss_threshold_is_pinned(monkeypatch):
    """0.005 nats: an upper end of 0.003 is zeroable and 0.007 is not; halving the threshold
    drops 0.003, doubling it admits 0.007."""
    assert zeroing.NO_LOSS_INCREASE == 0.005
    uppers = np.array([0.003, 0.007])
    assert zeroing.is_zeroable(uppers).tolist() == [True, False]
    monkeypatch.setattr(zeroing, "NO_LOSS_INCREASE", 0.0025)
    assert zeroing.is_zeroable(uppers).tolist() == [False, False]
    monkeypatch.setattr(zeroing, "NO_LOSS_INCREASE", 0.01)
    assert zeroing.is_zeroable(uppers).tolist() == [True, True]


def test_screen_is_pinned(monkeypatch):
    """4 x 0.005 = 0.02: a screen change of 0.015 continues, 0.03 stops; at 2 x, 0.015 stops; at
    8 x, 0.03 continues. The smallest screen value decides."""
    assert zeroing.SCREEN_FACTOR == 4.0
    assert zeroing.continues(np.array([[0.015], [0.03]])).tolist() == [True, False]
    assert zeroing.continues(np.array([[0.03, 0.001]])).tolist() == [True]
    monkeypatch.setattr(zeroing, "SCREEN_FACTOR", 2.0)
    assert zeroing.continues(np.array([[0.015], [0.03]])).tolist() == [False, False]
    monkeypatch.setattr(zeroing, "SCREEN_FACTOR", 8.0)
    assert zeroing.continues(np.array([[0.015], [0.03]])).tolist() == [True, True]


def test_zeroable_only_with_every_text_and_the_interval_below():
    steady = np.full(8, 0.001)  # interval at 0.001: zeroable
    negative = np.full(8, -0.02)  # the head hurt these texts: no loss
    noisy = np.array([0.0, 0.009] * 4)  # mean 0.0045 < 0.005, upper end above it: not shown zeroable
    screened = np.array([0.001] + [np.nan] * 7)  # stopped at the screen: never zeroable
    v = zeroing.verdicts(np.stack([steady, negative, noisy, screened]))
    assert v["mean"][2] < zeroing.NO_LOSS_INCREASE < v["upper"][2]
    assert v["zeroable"].tolist() == [True, True, False, False]
    assert v["screened_out"].tolist() == [False, False, False, True]


def test_summary_overlaps():
    def row(name, zeroable, dormant, alpha0, screened=False):
        return {"name": name, "dormant_fraction": dormant, "gu_alpha0_mean": alpha0,
                "ablation": {"zeroed": {"zeroable": zeroable, "screened_out": screened}}}

    rows = [row("a", True, 0.8, 0.9), row("b", True, 0.1, 0.9), row("c", False, 0.9, 0.1),
            row("d", False, 0.0, 0.0, screened=True)]
    s = zeroing.summary(rows)
    assert s["zeroable"] == ["a", "b"] and s["zeroable_fraction"] == 0.5
    assert s["mostly_dormant_heads"] == 2 and s["zeroable_and_mostly_dormant"] == 1
    assert s["sinking_heads"] == 2 and s["zeroable_and_sinking"] == 2 and s["zeroable_fraction_of_sinking"] == 1.0
    assert s["not_shown_zeroable_screened_out"] == 1
