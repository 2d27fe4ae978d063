"""The two edits of a head's attention to BOS that the sink ablations make, on staged tensors.

- ``remove_bos``: a head's weight on BOS set to 0 at chosen queries, each such row rescaled to
  keep its total mass (for softmax: BOS taken out of the softmax);
- ``zero_bos_value``: BOS's value vector in a head set to 0.

They act on the layouts of ``empirical.training.staged`` (``attn.hook_pattern``, ``attn.hook_v``)
and are shared by the trained models' ablations (``empirical.analysis.ablation``) and the LM
probe's (``empirical.lm.ablate``), whose patterns have the same [..., H, L, L] layout.
"""

from __future__ import annotations

import torch

ABLATIONS = ("removed", "value_zeroed")


def remove_bos(pattern: torch.Tensor, head: int, queries: torch.Tensor | None = None) -> torch.Tensor:
    """``pattern`` [*E, B, H, L, L] with head ``head``'s BOS weight zeroed at the ``queries``
    ([B, L] bool; default every query >= 1) and each such row rescaled to keep its total (a row
    whose other keys carry nothing becomes 0). Query 0 is never changed (no other key).

    The other keys' mass is their own sum, not total - a_i0: for a head whose BOS weight is
    within an ulp of 1 that difference cancels (in float32 a real LM's sinking head has rows
    whose a_i0 is exactly 1.0 while the other keys hold ~1e-8; the difference was then 0 or off
    by up to 100 %), while each small weight is itself exact to its relative precision
    (``tests/test_ablation.py``; found by ``empirical/lm/crosscheck``)."""
    L = pattern.shape[-1]
    if queries is None:
        queries = (torch.arange(L, device=pattern.device) >= 1).expand(pattern.shape[-4], L)
    queries = queries & (torch.arange(L, device=pattern.device) >= 1)
    a = pattern[..., head, :, :]  # [*E, B, L, L]
    total = a.sum(dim=-1, keepdim=True)
    rest = a[..., 1:].sum(dim=-1, keepdim=True)
    scale = torch.where(rest > 0, total / rest.where(rest > 0, torch.ones_like(rest)), torch.zeros_like(rest))
    ablated = torch.cat([torch.zeros_like(a[..., :1]), a[..., 1:] * scale], dim=-1)
    out = pattern.clone()
    out[..., head, :, :] = torch.where(queries.unsqueeze(-1), ablated, a)
    return out


def zero_bos_value(v: torch.Tensor, head: int) -> torch.Tensor:
    """``v`` [*E, B, L, H, d] with BOS's (position 0) value in head ``head`` set to 0."""
    out = v.clone()
    out[..., 0, head, :] = 0
    return out
