"""Functional sinks in a real LM: the next-token loss when one head's first-token attention is
ablated, applied through forward hooks on the model's own modules.

For head h of layer l, two ablations (``empirical.analysis.ablation``'s, on a language model):

- ``removed``: at every query i >= 1 the head's weight on position 0 is set to 0 and the row is
  renormalised over keys 1..i (``bos_edits.remove_bos``); query 0, which sees only position 0,
  is left alone;
- ``value_zeroed``: the first token's value is zeroed for this query head only (other query
  heads that share its key/value head keep it): its output at query i loses a_i0 u_0.
- ``zeroed`` (``ZEROED``, not a first-token ablation): the head's whole output W_O^h a V_h is
  removed at every query, query 0 included (``empirical.lm.zeroing``'s verdict: zeroable at no loss).

A forward hook on v_proj keeps the layer's values, and a forward hook on the attention module
adds the head's change to the module's output, W_O^h (a' - a) V_h, computed from the weights
the eager kernel returned; nothing else of the model is re-implemented. Only layers l..L-1
change, so each ablation replays the decoder layers from l on, from the inputs (and keyword
arguments: mask, rotary embeddings) those layers received in the clean run; a test holds a
replay without a hook equal to the clean forward.

The loss is the mean next-token cross-entropy over positions 0..T-2 of each text (nats per
token). ``FUNCTIONAL_LOSS_INCREASE``, 0.05 nats per token, is the threshold a head's loss rise
must clear to call its sink functional: a 5 % rise in perplexity, which is large for one head of
270 (whole-model differences between adjacent model sizes are a few tenths of a nat) and far
above float32 rounding of the loss (~1e-6). The verdict over many texts (its bootstrap interval
above the threshold) is ``functional``'s. Pinned by ``tests/test_lm_probe.py``.

``batched_losses`` runs many (head, ablation) variants of one layer in the batch dimension of one
replay (the same arithmetic per slice as ``ablated_loss``, which stays as the one-at-a-time
reference the tests and the run compare it with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from empirical.training import bos_edits

from . import extract

FUNCTIONAL_LOSS_INCREASE = 0.05  # nats per token; see the module docstring
ABLATIONS = bos_edits.ABLATIONS  # ("removed", "value_zeroed"): the first-token ablations
ZEROED = "zeroed"  # the head's whole output removed (``empirical.lm.zeroing``'s verdict)
KINDS = (*ABLATIONS, ZEROED)  # every head change ``head_change`` applies
BATCH_TOKENS = 8192  # tokens per batched replay: large enough for efficient matrix products, small in memory
LOSS_ENTRIES = 1 << 25  # logits per lm_head call (texts x T x vocab): 256 MB as float64 (SmolLM2: 10 texts of 64)


@dataclass
class CleanRun:
    """The clean forward of the ablation texts: per layer the decoder layer's call, and the loss."""

    calls: list[tuple[tuple, dict]]  # per layer (args, kwargs) as the model called it
    loss: torch.Tensor  # [B], mean next-token loss per text
    final: torch.Tensor  # [B, T, D]: the final norm's output, what lm_head reads


def token_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy per text: logits [B, T, V], ids [B, T] -> [B], in float64:
    logsumexp of the logits less the target's logit, the same figure as the log_softmax at the
    target without materialising the whole [B, T, V] log_softmax (a second float64 copy)."""
    logits = logits[:, :-1]
    target = logits.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).to(torch.float64)
    return (torch.logsumexp(logits.to(torch.float64), dim=-1) - target).mean(dim=-1)


@torch.no_grad()
def clean_run(model, ids: torch.Tensor) -> CleanRun:
    calls: list[Any] = [None] * len(extract.layers(model))

    def keep(i):
        def hook(module, args, kwargs):
            calls[i] = (args, dict(kwargs))
        return hook

    handles = [layer.register_forward_pre_hook(keep(i), with_kwargs=True)
               for i, layer in enumerate(extract.layers(model))]
    try:
        final = model.model(input_ids=ids, use_cache=False).last_hidden_state
    finally:
        for h in handles:
            h.remove()
    return CleanRun(calls, chunked_loss(model, final, ids, normed=True), final)


def logits(model, final: torch.Tensor) -> torch.Tensor:
    """The model's logits from the final norm's output (with its final soft cap, if it has one)."""
    out = model.lm_head(final)
    cap = getattr(model.config, "final_logit_softcapping", None)
    return out if not cap else torch.tanh(out / cap) * cap


def replay(model, clean: CleanRun, start: int) -> torch.Tensor:
    """Logits [B, T, V] from decoder layer ``start`` on, fed what it received in ``clean``."""
    return logits(model, model.model.norm(replay_hidden(model, clean, start)))


def head_change(weights: torch.Tensor, values: torch.Tensor, W_h: torch.Tensor, head: int, kv_head: int,
                head_dim: int, kind: str) -> torch.Tensor:
    """The change [B, T, D] of the attention module's output when head ``head`` is ablated
    (``kind``): W_O^h (a' - a) V_h, in the weights' dtype; for ``zeroed`` a' = 0, so the head's
    whole output W_O^h a V_h is removed."""
    B, H, T, _ = weights.shape
    v_h = values.view(B, T, -1, head_dim)[:, :, kv_head]  # [B, T, dh]
    a = weights[:, head]  # [B, T, T]
    if kind == "removed":
        change = bos_edits.remove_bos(weights, head)[:, head] - a
    elif kind == "value_zeroed":
        change = torch.zeros_like(a)
        change[..., 0] = -a[..., 0]  # the head reads nothing at position 0
    elif kind == ZEROED:
        change = -a  # every query, query 0 included: the head writes nothing
    else:
        raise ValueError(f"unknown ablation {kind!r}; valid: {', '.join(KINDS)}")
    return (change @ v_h) @ W_h.T.to(v_h.dtype)


@torch.no_grad()
def ablated_loss(model, clean: CleanRun, ids: torch.Tensor, layer: int, head: int, kind: str,
                 geo: extract.Geometry | None = None) -> torch.Tensor:
    """Mean next-token loss per text [B] with head ``head`` of ``layer`` ablated (``kind``)."""
    geo = geo or extract.geometry(model)
    attn = extract.layers(model)[layer].self_attn
    W_h = attn.o_proj.weight[:, head * geo.head_dim:(head + 1) * geo.head_dim]  # [D, dh]
    seen: dict[str, torch.Tensor] = {}

    def keep_values(module, args, output):
        seen["v"] = output

    def change_output(module, args, output):
        out, weights = output[0], output[1]
        return (out + head_change(weights, seen["v"], W_h, head, geo.kv_head(head), geo.head_dim, kind),
                weights, *output[2:])

    handles = [attn.v_proj.register_forward_hook(keep_values), attn.register_forward_hook(change_output)]
    try:
        logits = replay(model, clean, layer)
    finally:
        for h in handles:
            h.remove()
    return token_loss(logits, ids)


@torch.no_grad()
def batched_losses(model, clean: CleanRun, ids: torch.Tensor, layer: int, variants: list[tuple[int, str]],
                   geo: extract.Geometry | None = None, max_tokens: int = BATCH_TOKENS) -> torch.Tensor:
    """Mean next-token loss per text [len(variants), A] with each (head, kind) of ``variants``
    ablated alone at ``layer``: the variants ride in the batch dimension (variant-major: row
    v * A + a is variant v on text a), about ``max_tokens`` tokens per replay; the same arithmetic
    as ``ablated_loss`` on each slice (a test holds the two equal)."""
    geo = geo or extract.geometry(model)
    A, T = ids.shape
    per_replay = max(1, max_tokens // (A * T))
    out = [_replay_variants(model, clean, ids, layer, variants[s:s + per_replay], geo)
           for s in range(0, len(variants), per_replay)]
    return torch.cat(out)


def _replay_variants(model, clean: CleanRun, ids: torch.Tensor, layer: int, variants, geo) -> torch.Tensor:
    attn = extract.layers(model)[layer].self_attn
    A, V = ids.shape[0], len(variants)
    seen: dict[str, torch.Tensor] = {}

    def keep_values(module, args, output):
        seen["v"] = output

    def change_output(module, args, output):
        out, weights = output[0].clone(), output[1]
        for n, (head, kind) in enumerate(variants):
            rows = slice(n * A, (n + 1) * A)
            W_h = attn.o_proj.weight[:, head * geo.head_dim:(head + 1) * geo.head_dim]
            out[rows] += head_change(weights[rows], seen["v"][rows], W_h, head, geo.kv_head(head), geo.head_dim, kind)
        return (out, weights, *output[2:])

    handles = [attn.v_proj.register_forward_hook(keep_values), attn.register_forward_hook(change_output)]
    try:
        hidden = replay_hidden(model, clean, layer, repeat=V)
    finally:
        for h in handles:
            h.remove()
    return chunked_loss(model, hidden, ids.repeat(V, 1)).view(V, A)


@torch.no_grad()
def replay_hidden(model, clean: CleanRun, start: int, repeat: int = 1) -> torch.Tensor:
    """The last decoder layer's output [repeat * B, T, D] from layer ``start`` on, each layer fed
    the other arguments it received in ``clean`` (mask and rotary embeddings can differ by layer:
    Gemma 3's local and global layers), tiled ``repeat`` times along the batch (copy-major)."""
    args, kwargs = clean.calls[start]
    hidden = args[0] if args else kwargs["hidden_states"]
    B = hidden.shape[0]

    def tile(t):  # tensors with the texts' batch dimension; batch-1 ones (positions, shared masks) broadcast
        if repeat > 1 and torch.is_tensor(t) and t.dim() and t.shape[0] == B:
            return t.repeat(repeat, *([1] * (t.dim() - 1)))
        return tuple(tile(u) for u in t) if isinstance(t, tuple) else t

    hidden = tile(hidden)
    for n in range(start, len(extract.layers(model))):
        args, kwargs = clean.calls[n]
        rest = tuple(tile(a) for a in args[1:])
        kwargs = {k: tile(v) for k, v in kwargs.items() if k != "hidden_states"}
        out = extract.layers(model)[n](hidden, *rest, **kwargs)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


def chunked_loss(model, hidden: torch.Tensor, ids: torch.Tensor, rows: int | None = None,
                 normed: bool = False) -> torch.Tensor:
    """``token_loss`` of the final norm (unless ``normed``) and the output layer on ``hidden``
    [B, T, D], ``rows`` texts at a time (default: ``LOSS_ENTRIES`` logits) so the logits stay small."""
    rows = rows or max(1, LOSS_ENTRIES // (hidden.shape[1] * model.lm_head.out_features))
    norm = (lambda h: h) if normed else model.model.norm
    return torch.cat([token_loss(logits(model, norm(hidden[s:s + rows])), ids[s:s + rows])
                      for s in range(0, len(hidden), rows)])


def is_functional(loss_change: float) -> bool:
    return loss_change > FUNCTIONAL_LOSS_INCREASE
