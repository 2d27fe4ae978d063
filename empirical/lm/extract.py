"""Attention of a Llama-style causal LM, read from the model and recomputed from its weights.

``record(model, ids)`` runs the model once (eager attention, ``output_attentions=True``) with a
forward hook on every layer's attention module, which keeps what the module was given (the
normalised residual stream x, the input of q/k/v) and the attention weights it returned. Those
weights are what the probe reads; transformers' ``output_attentions`` is kept beside them for
the cross-check.

``recompute(model, layer, x)`` rebuilds the same layer's attention in float64 from the model's
own projection weights: q = W_Q x (+ b), k, v likewise, rotary embeddings applied with the
frequencies computed here from the config (default RoPE; other RoPE types take the model's
own frequencies), query head h reading key/value head h // (H / H_kv) (grouped-query attention:
transformers' ``repeat_kv`` order), scores q . k / sqrt(head_dim), the causal mask and a
float64 softmax. The probe's quantities are computed from this float64 recomputation (rows sum
to 1 to rounding, as the SPEC bound needs); a test holds it equal to the model's weights and to
``output_attentions`` to 1e-5.

Shapes: ids [B, T]; x [B, T, D]; pattern [B, H, T(query), T(key)]; v [B, H_kv, T, d_h].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from constructions.errors import BadInput

from .load import head_dim


@dataclass
class Recording:
    """One forward pass of the decoder (no output layer): per layer the attention input x and the
    model's weights."""

    inputs: list[torch.Tensor]  # per layer [B, T, D], float32: what q/k/v are computed from
    weights: list[torch.Tensor]  # per layer [B, H, T, T], float32: the eager module's output
    output_attentions: list[torch.Tensor]  # per layer [B, H, T, T]: transformers' own


def layers(model):
    return model.model.layers


@torch.no_grad()
def record(model, ids: torch.Tensor) -> Recording:
    n = len(layers(model))
    inputs, weights = [None] * n, [None] * n

    def hook_for(i):
        def hook(module, args, kwargs, output):
            inputs[i] = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
            weights[i] = output[1]
        return hook

    handles = [layer.self_attn.register_forward_hook(hook_for(i), with_kwargs=True)
               for i, layer in enumerate(layers(model))]
    try:
        out = model.model(input_ids=ids, output_attentions=True, use_cache=False)  # the logits are not needed
    finally:
        for h in handles:
            h.remove()
    if any(w is None for w in weights):
        raise BadInput("the model's attention returned no weights (needs attn_implementation='eager')")
    return Recording(inputs, weights, list(out.attentions))


@dataclass(frozen=True)
class Geometry:
    heads: int
    kv_heads: int
    head_dim: int
    scaling: float
    inv_freq: torch.Tensor  # [d_h / 2], float64
    rope_scale: float  # multiplies cos and sin (1 for default RoPE)
    layer_inv_freq: tuple[torch.Tensor, ...] | None = None  # per layer, where layer types differ (Gemma 3)
    windows: tuple[int | None, ...] | None = None  # per layer, the sliding window (None: full attention)

    def kv_head(self, h: int) -> int:
        """The key/value head query head ``h`` reads (repeat_kv: each kv head serves a block)."""
        return h // (self.heads // self.kv_heads)

    def freq(self, layer: int) -> torch.Tensor:
        return self.inv_freq if self.layer_inv_freq is None else self.layer_inv_freq[layer]


# q_norm / k_norm modules the recomputation knows: the offset added to the weight (Gemma: x (1 + w)).
QK_NORM_OFFSET = {"Gemma3RMSNorm": 1.0, "Qwen3RMSNorm": 0.0, "LlamaRMSNorm": 0.0}


def geometry(model) -> Geometry:
    c = model.config
    dh = head_dim(c)
    params = getattr(c, "rope_parameters", None) or {}
    attn = layers(model)[0].self_attn
    types = getattr(c, "layer_types", None)
    if types and all(t in params for t in set(types)):  # one RoPE per layer type (Gemma 3: local and global)
        by_type = {t: _default_rope(params[t], dh, t) for t in set(types)}
        window = getattr(c, "sliding_window", None)
        return Geometry(c.num_attention_heads, c.num_key_value_heads, dh, float(attn.scaling), by_type[types[0]], 1.0,
                        tuple(by_type[t] for t in types), tuple(window if "sliding" in t else None for t in types))
    rope_type = params.get("rope_type") or (getattr(c, "rope_scaling", None) or {}).get("rope_type", "default")
    if rope_type == "default":
        inv_freq = _default_rope({"rope_theta": params.get("rope_theta", getattr(c, "rope_theta", None))}, dh, "")
        scale = 1.0
    else:  # scaled variants (llama3, yarn, ...): the model's own frequencies, not re-derived here
        rotary = model.model.rotary_emb
        inv_freq, scale = rotary.inv_freq.to(torch.float64), float(rotary.attention_scaling)
    return Geometry(c.num_attention_heads, c.num_key_value_heads, dh, float(attn.scaling), inv_freq.cpu(), scale)


def _default_rope(params: dict, dh: int, layer_type: str) -> torch.Tensor:
    if params.get("rope_type", "default") != "default":
        raise BadInput(f"the recomputation reads default RoPE per layer type, not {params['rope_type']!r} ({layer_type})")
    return 1.0 / (float(params["rope_theta"]) ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))


def _qk_norm(attn, name: str, t: torch.Tensor) -> torch.Tensor:
    """The attention module's per-head RMSNorm of q or k (Gemma 3, Qwen 3), in float64; t as is
    where the module has none."""
    norm = getattr(attn, name, None)
    if norm is None:
        return t
    kind = type(norm).__name__
    if kind not in QK_NORM_OFFSET:
        raise BadInput(f"the recomputation does not know the {name} module {kind}")
    w = norm.weight.detach().to(torch.float64) + QK_NORM_OFFSET[kind]
    eps = getattr(norm, "eps", getattr(norm, "variance_epsilon", 1e-6))
    return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * w


def _rotate(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE in the half-split layout: (t1, t2) -> (t1 cos - t2 sin, t2 cos + t1 sin)."""
    half = t.shape[-1] // 2
    rotated = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
    return t * cos + rotated * sin


def _linear64(x: torch.Tensor, lin) -> torch.Tensor:
    bias = None if lin.bias is None else lin.bias.detach().to(torch.float64)
    return torch.nn.functional.linear(x, lin.weight.detach().to(torch.float64), bias)


@torch.no_grad()
def recompute(model, layer: int, x: torch.Tensor, geo: Geometry | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(pattern [B, H, T, T], v [B, H_kv, T, d_h]) of ``layer`` in float64 from its weights and its
    input ``x`` [B, T, D] (positions 0..T-1)."""
    geo = geo or geometry(model)
    q, k, v = projections(model, layer, x, geo)
    T = x.shape[1]
    k = k.repeat_interleave(geo.heads // geo.kv_heads, dim=1)  # [B, H, T, dh]: head h reads kv head h // rep
    scores = (q @ k.transpose(-1, -2)) * geo.scaling  # [B, H, T, T]
    causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    pattern = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    return pattern, v


@torch.no_grad()
def projections(model, layer: int, x: torch.Tensor, geo: Geometry | None = None):
    """(q [B, H, T, d_h], k [B, H_kv, T, d_h], v [B, H_kv, T, d_h]) of ``layer`` in float64 from its
    input ``x`` [B, T, D], q and k with their rotary embeddings applied (positions 0..T-1)."""
    geo = geo or geometry(model)
    attn = layers(model)[layer].self_attn
    x = x.to(torch.float64)
    B, T, _ = x.shape
    window = geo.windows[layer] if geo.windows else None
    if window is not None and T > window:
        raise BadInput(f"--tokens {T} exceeds layer {layer}'s sliding window {window}; the recomputation "
                       "reads full causal attention only")
    if getattr(attn, "attn_logit_softcapping", None) or getattr(attn, "v_norm", None) is not None:
        raise BadInput("the recomputation reads no attention soft cap and no value norm")
    q = _qk_norm(attn, "q_norm", _linear64(x, attn.q_proj).view(B, T, geo.heads, geo.head_dim)).transpose(1, 2)
    k = _qk_norm(attn, "k_norm", _linear64(x, attn.k_proj).view(B, T, geo.kv_heads, geo.head_dim)).transpose(1, 2)
    v = _linear64(x, attn.v_proj).view(B, T, geo.kv_heads, geo.head_dim).transpose(1, 2)  # [B, Hkv, T, dh]
    angles = torch.arange(T, dtype=torch.float64).unsqueeze(-1) * geo.freq(layer).to(x.device)  # [T, dh/2]
    angles = torch.cat([angles, angles], dim=-1)  # [T, dh]
    cos, sin = angles.cos() * geo.rope_scale, angles.sin() * geo.rope_scale
    return _rotate(q, cos, sin), _rotate(k, cos, sin), v


def head_images(model, layer: int, v: torch.Tensor, head: int, geo: Geometry | None = None) -> torch.Tensor:
    """u_k = W_O^h v_k for every key: the head's slice of o_proj applied to the values of the
    key/value head it reads; [B, T, D], float64. o_proj's bias (none in Llama) is not the head's."""
    geo = geo or geometry(model)
    return v[:, geo.kv_head(head)] @ output_slice(model, layer, head, geo).T


def output_slice(model, layer: int, head: int, geo: Geometry | None = None) -> torch.Tensor:
    """W_O^h [D, d_h] in float64."""
    geo = geo or geometry(model)
    W = layers(model)[layer].self_attn.o_proj.weight.detach().to(torch.float64)  # [D, H*dh]
    return W[:, head * geo.head_dim:(head + 1) * geo.head_dim]


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.to(torch.float64) - b.to(torch.float64)).abs().max().item()
