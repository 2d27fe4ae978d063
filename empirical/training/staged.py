"""The model's forward pass in named stages, each passed through a hook that may read or replace
it: what TransformerLens hooks (``empirical.weights.lens``) and the sink ablations
(``empirical.analysis.ablation``) act on, without TransformerLens.

``run(model, x, hook)`` computes exactly ``AttentionModel.forward(x)[0]`` from the model's
public parameters (``layer.W_Q`` ... ``layer.W_O``, ``layer.kind_extras``, ``layer.kind.torch``),
calling ``hook(name, tensor)`` at every stage and continuing with what it returns. Names and
layouts are TransformerLens's (``*E`` is the ensemble dimension of an ensemble model, if any):

    blocks.{l}.hook_resid_pre         [*E, B, L, d]       the layer's input
    blocks.{l}.attn.hook_q / _k / _v  [*E, B, L, H, d]    per-head projections W x
    blocks.{l}.attn.hook_attn_scores  [*E, B, H, L, L]    s_ik = q_i . k_k, NOT masked (the kind masks)
    blocks.{l}.attn.hook_pattern      [*E, B, H, L, L]    the kind's weights a_ik (query x key)
    blocks.{l}.attn.hook_z            [*E, B, L, H, d]    sum_k a_ik v_k per head
    blocks.{l}.hook_attn_out          [*E, B, L, d]       W_O [z_1; ...; z_H]
    blocks.{l}.hook_resid_post        [*E, B, L, d]       x + attn_out (residual) or attn_out

A test holds ``run`` with the identity hook equal to the model's own forward.
"""

from __future__ import annotations

from typing import Callable

import torch

Hook = Callable[[str, torch.Tensor], torch.Tensor]
STAGES = ("hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_attn_scores",
          "attn.hook_pattern", "attn.hook_z", "hook_attn_out", "hook_resid_post")


def no_hook(name: str, t: torch.Tensor) -> torch.Tensor:
    return t


def hook_names(layers: int) -> list[str]:
    return [f"blocks.{n}.{stage}" for n in range(layers) for stage in STAGES]


def kind_pattern(layer, x: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """The kind's weights [*E, B, H, L, L] for ``scores`` in that layout, computed in the model's
    own layout (scores [S, B, L, H, L], extras from ``layer.kind_extras``, mask [L, 1, L])."""
    E = layer.W_Q.shape[:-3]
    B, L, d = x.shape[-3:]
    H = scores.shape[-3]
    xs = x.expand(*E, B, L, d).reshape(-1, B, L, d)  # [S, B, L, d]
    mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril().unsqueeze(1)  # key <= query
    pattern = layer.kind.weights_torch(scores.reshape(-1, B, H, L, L).transpose(2, 3), mask, layer.kind_extras(xs))
    return pattern.transpose(2, 3).reshape(scores.shape)


def attention_stage(layer, x: torch.Tensor, hook: Hook, prefix: str) -> torch.Tensor:
    """One layer's attention output [*E, B, L, d] from its input ``x``, hooked at every stage."""
    def project(W):  # [*E, H, d, d] x [*E, B, L, d] -> [*E, B, L, H, d]
        return torch.einsum("...hed,...bld->...blhe", W, x)

    q = hook(f"{prefix}attn.hook_q", project(layer.W_Q))
    k = hook(f"{prefix}attn.hook_k", project(layer.W_K))
    v = hook(f"{prefix}attn.hook_v", project(layer.W_V))
    scores = hook(f"{prefix}attn.hook_attn_scores", torch.einsum("...qhe,...khe->...hqk", q, k))
    pattern = hook(f"{prefix}attn.hook_pattern", kind_pattern(layer, x, scores))
    z = hook(f"{prefix}attn.hook_z", torch.einsum("...hqk,...khe->...qhe", pattern, v))
    return hook(f"{prefix}hook_attn_out", torch.einsum("...oc,...blc->...blo", layer.W_O, z.flatten(-2)))


def run(model, x: torch.Tensor, hook: Hook = no_hook) -> torch.Tensor:
    """The model's output on ``x`` [*E, B, L, d] (or [B, L, d]), every stage through ``hook``."""
    for n, layer in enumerate(model.layers):
        prefix = f"blocks.{n}."
        x = hook(f"{prefix}hook_resid_pre", x)
        out = attention_stage(layer, x, hook, prefix)
        x = hook(f"{prefix}hook_resid_post", x + out if model.residual else out)
    return x
