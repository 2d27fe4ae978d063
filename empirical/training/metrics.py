"""Sink metrics of constructions/SPEC.md section 5: pure functions on attention patterns.

Every function takes patterns laid out as the model caches them, ``pattern`` [..., B, H, L, L]
(B sequences, H heads, query x key), and the trigger position of each sequence, ``trigger`` [B].
Leading dimensions ``...`` (ensemble members, layers) are kept; the functions reduce over the
sequences and queries they name and return tensors [..., H].

Which queries count as "non-trigger": positions 1..L-1 except the trigger. Query 0 is BOS
itself; it sees only key 0, so a softmax row there puts all its mass on BOS whatever the weights
and says nothing about sinks. Its row is reported separately (``bos_query_row_mass``).
"""

from __future__ import annotations

import torch

GU_EPS = 0.3  # Gu et al. (ICLR 2025) default threshold on the head score alpha_0
GU_EPS_STRICT = 0.8  # the stricter threshold used by Barbero et al. (2025)
# A single-layer head "sinks" at a query when its BOS mass there is above this level: the level
# of the reports' T1 claims, observed (mean over the evaluation set) and certified (every input).
SINK_MASS = 0.99
# A head of a trained stack counts as sinking in the T2 claims when its mean non-trigger BOS mass
# is above this level (constructions/SPEC.md section 4 reports the heads above 0.94 / below 0.52).
STACK_SINK_MASS = 0.9
# ReLU heads form "no sink" when their non-trigger BOS mass is at most this (constructions/SPEC.md section 4: <= 0.002).
NO_SINK_MASS = 0.002


def query_masks(trigger: torch.Tensor, L: int) -> dict[str, torch.Tensor]:
    """Boolean masks [B, L] over queries: non-trigger (1..L-1 without j), before and after j."""
    i = torch.arange(L, device=trigger.device)
    j = trigger.unsqueeze(-1)  # [B, 1]
    return {
        "nontrigger": (i >= 1) & (i != j),
        "pre_trigger": (i >= 1) & (i < j),
        "post_trigger": i > j,
        "trigger": i == j,
    }


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` [..., B, H, L] over (B, L) where ``mask`` [B, L]; nan if empty."""
    m = mask.unsqueeze(-2).to(values.dtype)  # [B, 1, L]
    return (values * m).sum(dim=(-3, -1)) / m.sum(dim=(-3, -1))


def _masked_min(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return values.masked_fill(~mask.unsqueeze(-2), float("inf")).amin(dim=(-3, -1))


def _masked_max(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return values.masked_fill(~mask.unsqueeze(-2), float("-inf")).amax(dim=(-3, -1))


def bos_mass(pattern: torch.Tensor, trigger: torch.Tensor) -> dict[str, torch.Tensor]:
    """Sink mass a_i0 per head [..., H]: mean and min over (sequence, non-trigger query) pairs,
    the means before and after the trigger, and the mean / min at the trigger query."""
    a0 = pattern[..., 0]  # [..., B, H, L]: each query's weight on BOS
    masks = query_masks(trigger, pattern.shape[-1])
    return {
        "nontrigger_mean": _masked_mean(a0, masks["nontrigger"]),
        "nontrigger_min": _masked_min(a0, masks["nontrigger"]),
        "pre_trigger_mean": _masked_mean(a0, masks["pre_trigger"]),
        "post_trigger_mean": _masked_mean(a0, masks["post_trigger"]),
        "trigger_mean": _masked_mean(a0, masks["trigger"]),
        "trigger_max": _masked_max(a0, masks["trigger"]),
    }


def row_mass(pattern: torch.Tensor, trigger: torch.Tensor) -> dict[str, torch.Tensor]:
    """Total row mass sum_k a_ik per head [..., H] (for kinds whose rows need not sum to one):
    mean and max over non-trigger queries, mean at the trigger, and the BOS query's row."""
    total = pattern.sum(dim=-1)  # [..., B, H, L]
    masks = query_masks(trigger, pattern.shape[-1])
    return {
        "nontrigger_mean": _masked_mean(total, masks["nontrigger"]),
        "nontrigger_max": _masked_max(total, masks["nontrigger"]),
        "trigger_mean": _masked_mean(total, masks["trigger"]),
        "bos_query_row_mass": total[..., 0].mean(dim=-2),
    }


def trigger_spread_error(pattern: torch.Tensor, trigger: torch.Tensor) -> torch.Tensor:
    """How far the trigger row is from the exact mean's weights (1/j on keys 1..j, 0 elsewhere):
    max over keys of |a_jk - target_k|, averaged over sequences; [..., H]."""
    L = pattern.shape[-1]
    idx = trigger.view(-1, 1, 1, 1).expand(*pattern.shape[:-2], 1, L)  # [..., B, H, 1, L]
    row = torch.gather(pattern, -2, idx).squeeze(-2)  # [..., B, H, L]
    k = torch.arange(L, device=pattern.device)
    j = trigger.unsqueeze(-1)  # [B, 1]
    ideal = ((k >= 1) & (k <= j)).to(pattern.dtype) / j.to(pattern.dtype)  # [B, L]
    return (row - ideal.unsqueeze(-2)).abs().amax(dim=-1).mean(dim=-2)


def head_scores(pattern: torch.Tensor) -> torch.Tensor:
    """Gu et al.'s score alpha_k = mean over the queries that see key k (i >= k) of a_ik,
    averaged over sequences: [..., H, L] (one score per key)."""
    L = pattern.shape[-1]
    seen_by = torch.arange(L, 0, -1, device=pattern.device, dtype=pattern.dtype)  # key k: L-k queries
    per_sequence = pattern.sum(dim=-2) / seen_by  # causal: a_ik = 0 for i < k
    return per_sequence.mean(dim=-3)


def sinking_heads(pattern: torch.Tensor, eps: float = GU_EPS) -> torch.Tensor:
    """Boolean [..., H]: the head sinks on key 0 when alpha_0 > eps."""
    return head_scores(pattern)[..., 0] > eps


def sinking_fraction(sinking: torch.Tensor, dims: int = 1) -> torch.Tensor:
    """Fraction of sinking heads over the last ``dims`` dimensions (heads, or layers x heads)."""
    return sinking.to(torch.float64).flatten(-dims).mean(dim=-1)


def head_report(pattern: torch.Tensor, trigger: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every per-head metric of one layer in one dict of [..., H] tensors."""
    out = {f"bos_{k}": v for k, v in bos_mass(pattern, trigger).items()}
    out.update({f"row_{k}": v for k, v in row_mass(pattern, trigger).items()})
    out["trigger_spread_error"] = trigger_spread_error(pattern, trigger)
    out["gu_alpha0"] = head_scores(pattern)[..., 0]
    out["sinks_gu"] = out["gu_alpha0"] > GU_EPS
    out["sinks_gu_strict"] = out["gu_alpha0"] > GU_EPS_STRICT
    return out
