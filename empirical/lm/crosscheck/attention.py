"""A replacement for transformers' eager attention function, written here, with an optional
edit of one head's weights, and the plain forwards the checks read.

``patched(model, edit)`` swaps the module-level ``eager_attention_forward`` of the model's
modelling module (the function each attention layer looks up at call time when
``_attn_implementation`` is "eager") for ``attention``: scores q k^T x scaling (Gemma's soft cap
if the layer passes one), the layer's mask plus a causal mask of its own, softmax in the
query's dtype (transformers' own casts to float32, so a float64 model gets a float64 softmax
only here), then ``edit(layer, weights)``, then weights @ values, query head h reading key/value
head h // (H / H_kv). The whole model then runs its own forward: no replay, no added output.

``remove_first(layer, head)``: at queries i >= 1, head ``head``'s weight on position 0 set to 0
and the row renormalised over keys 1..i (the probe's ``removed`` ablation, written again);
``renormalise=False`` is the planted defect the tests use.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable

import torch

Edit = Callable[[int, torch.Tensor], torch.Tensor]  # (layer, weights [B, H, T, T]) -> weights


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, softcap=None,
              edit: Edit | None = None, **kwargs):
    groups = query.shape[1] // key.shape[1]
    key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = (query @ key.transpose(-1, -2)) * scale
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    T, S = scores.shape[-2:]
    future = torch.ones(T, S, dtype=torch.bool, device=scores.device).triu(S - T + 1)
    scores = scores.masked_fill(future, float("-inf"))
    if attention_mask is not None:
        mask = attention_mask[..., :S]
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.to(scores.dtype)
    weights = torch.softmax(scores, dim=-1)
    if edit is not None:
        weights = edit(module.layer_idx, weights)
    return (weights @ value).transpose(1, 2).contiguous(), weights


@contextlib.contextmanager
def patched(model, edit: Edit | None = None):
    """Every attention layer of ``model`` computes with ``attention`` (and ``edit``) inside."""
    if model.config._attn_implementation != "eager":
        raise ValueError("the model must be loaded with attn_implementation='eager'")
    module = sys.modules[type(_layers(model)[0].self_attn).__module__]
    original = module.eager_attention_forward
    module.eager_attention_forward = lambda *a, **k: attention(*a, edit=edit, **k)
    try:
        yield
    finally:
        module.eager_attention_forward = original


def remove_first(layer: int, head: int, renormalise: bool = True) -> Edit:
    def edit(n: int, weights: torch.Tensor) -> torch.Tensor:
        if n != layer:
            return weights
        weights = weights.clone()
        rows = weights[:, head, 1:]  # queries 1..T-1
        rows[..., 0] = 0
        if renormalise:
            rows /= rows.sum(dim=-1, keepdim=True)
        weights[:, head, 1:] = rows
        return weights
    return edit


def _layers(model):
    return model.model.layers


def token_losses(model, ids: torch.Tensor, batch: int = 8) -> torch.Tensor:
    """Mean next-token cross-entropy per text [N] (float64) from the model's own full forward."""
    out = []
    with torch.no_grad():
        for s in range(0, len(ids), batch):
            x = ids[s:s + batch]
            logp = torch.log_softmax(model(input_ids=x, use_cache=False).logits[:, :-1].to(torch.float64), dim=-1)
            out.append(-logp.gather(-1, x[:, 1:, None])[..., 0].mean(dim=-1))
    return torch.cat(out)


@contextlib.contextmanager
def in_float64(model):
    """The model's parameters in float64 inside (float32 -> float64 -> float32 is exact)."""
    model.to(torch.float64)
    try:
        yield model
    finally:
        model.to(torch.float32)


@torch.no_grad()
def head_outputs(model, ids: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One forward's attention weights (``output_attentions``, per layer [B, H, T, T]) and each
    head's own output o_i = W_O^h (a v)_h (per layer [B, H, T, D]), from a hook on o_proj's
    input: the concatenated head outputs, each head's slice times its slice of o_proj."""
    inputs: list[torch.Tensor] = []
    handles = [layer.self_attn.o_proj.register_forward_pre_hook(lambda m, a: inputs.append(a[0]))
               for layer in _layers(model)]
    try:
        weights = model.model(input_ids=ids, output_attentions=True, use_cache=False).attentions
    finally:
        for h in handles:
            h.remove()
    outputs = []
    for layer, x in zip(_layers(model), inputs):
        W = layer.self_attn.o_proj.weight  # [D, H * dh]
        H = weights[0].shape[1]
        dh = W.shape[1] // H
        outputs.append(torch.einsum("bthd,ehd->bhte", x.view(*x.shape[:2], H, dh), W.view(W.shape[0], H, dh)))
    return list(weights), outputs
