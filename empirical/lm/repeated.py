"""Gu et al.'s Propositions 1-4 on t repeated tokens: the first-token weight of every head is at
most e^(2 xi) / (e^(2 xi) + t - 1), measured against the model.

**xi, as computed here.** For one head on one sequence, with q_i and k_j the query and key
*after* the rotary embedding (float64, ``extract.projections``, from the layer's recorded input),

    xi = scaling * max_i ||q_i|| * max_j ||k_j||,

so that every score s_ij = scaling * q_i . k_j lies in [-xi, xi] (Cauchy-Schwarz). Then at query
i (t = i + 1 keys) a_i0 = e^(s_i0) / sum_j e^(s_ij) <= e^xi / (e^xi + i e^-xi), the bound above.

**Why it is valid, and what the proposition adds.** The inequality needs only that the scores
are bounded by xi, so it holds for any input and any position encoding, as computed from the
actual vectors. What the proposition adds is that xi does not grow with t: with RoPE the rotation
of q and k is orthogonal, so ||q_i|| = ||W_q x_i|| (times the RoPE attention scaling, 1 for
default RoPE, included here because the rotated vectors are measured), and on one token repeated
the attention input x_i is the same at every position and in every layer: the first layer's input
is one embedding at every position; attention over identical values returns that value whatever the
weights; RMSNorm and the MLP act per position; and the model adds no absolute position
embedding (SmolLM2, Llama, Gemma 3). So layer norms and MLPs between the attention layers do not
break the hypothesis here. ``input_spread`` measures max_i ||x_i - x_0|| / ||x_0|| per layer, the
float32 distance from that exact picture. With a prepended BOS, x_0 differs from the rest and the
proposition no longer applies; the bound as computed still holds.
"""

from __future__ import annotations

import numpy as np
import torch

from . import extract


def first_token_bound(xi: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    """e^(2 xi) / (e^(2 xi) + i): the largest softmax weight key 0 can take among i + 1 keys whose
    scores lie in [-xi, xi] (score xi on key 0, -xi on the others); written overflow-free."""
    return 1.0 / (1.0 + i * torch.exp(-2.0 * xi))


@torch.no_grad()
def layer_bound(model, layer: int, x: torch.Tensor, geo: extract.Geometry | None = None) -> dict[str, torch.Tensor]:
    """For the sequences ``x`` [B, T, D] (a layer's recorded attention input): per head and text
    xi [H, B], the bound and the measured first-token mass at queries 1..T-1 [H, B, T-1] (float64
    recomputation), and the input spread [B]."""
    geo = geo or extract.geometry(model)
    q, k, v = extract.projections(model, layer, x, geo)
    pattern, _ = extract.recompute(model, layer, x, geo)
    k_norm = k.norm(dim=-1).amax(dim=-1).repeat_interleave(geo.heads // geo.kv_heads, dim=1)  # [B, H]
    xi = abs(geo.scaling) * q.norm(dim=-1).amax(dim=-1) * k_norm  # [B, H]
    T = x.shape[1]
    i = torch.arange(1, T, dtype=torch.float64, device=x.device)  # query i sees t = i + 1 keys
    bound = first_token_bound(xi.unsqueeze(-1), i)  # [B, H, T-1]
    x64 = x.to(torch.float64)
    spread = ((x64 - x64[:, :1]).norm(dim=-1).amax(dim=-1) / x64[:, 0].norm(dim=-1).clamp(min=1e-300))
    return {"xi": xi.T, "bound": bound.transpose(0, 1), "mass": pattern[:, :, 1:, 0].transpose(0, 1),
            "input_spread": spread}


def stack(per_layer: list[dict[str, torch.Tensor]]) -> dict[str, np.ndarray]:
    """``layer_bound``'s per-layer results as arrays with the layer first: xi [L, H, N], bound and
    mass [L, H, N, T-1], input_spread [L, N]."""
    return {k: torch.stack([p[k] for p in per_layer]).cpu().numpy() for k in per_layer[0]}


def alpha0_bound(bound: np.ndarray) -> np.ndarray:
    """Gu's score alpha_0 = (1/T)(a_00 + sum_{i>=1} a_i0) with a_00 = 1 is at most
    (1 + sum_i bound_i) / T: [..., T-1] -> [...]."""
    return (1.0 + bound.sum(axis=-1)) / (bound.shape[-1] + 1)


def head_summary(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """[L, H] per head: xi (max over texts), the bound and the mean measured mass at the last query
    (t = T), max(mass - bound) over every (text, query), and the largest alpha_0 bound; [L] the
    largest input spread."""
    return {"xi_max": arrays["xi"].max(axis=-1), "bound_at_T_max": arrays["bound"][..., -1].max(axis=-1),
            "mass_at_T_mean": arrays["mass"][..., -1].mean(axis=-1),
            "mass_minus_bound_max": (arrays["mass"] - arrays["bound"]).max(axis=(-1, -2)),
            "alpha0_bound_max": alpha0_bound(arrays["bound"]).max(axis=-1),
            "input_spread_max": arrays["input_spread"].max(axis=-1)}
