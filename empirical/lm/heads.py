"""The theory's per-head quantities at every (text, query) of one layer.

For head h of a layer, at query i of a text (float64, from ``extract.recompute``):

- the first-token mass a_i0 at every query i >= 1 (query 0 sees only the first token, a_00 = 1,
  and says nothing; it is left out of every mass statistic, but Gu et al.'s score includes it);
- Gu et al.'s score of key 0, alpha_0 = (1 / T) sum_{i=0}^{T-1} a_i0: the score
  ``compute_attention_sink`` of sail-sg/Attention-Sink computes for key k (each a_ik divided by
  the T - k queries that see key k, summed over queries), at k = 0, per text and head; a head
  sinks on a text when alpha_0 > eps, and Sink^eps is the percentage of (text, layer, head)
  triples that sink, the mean their code takes over samples, layers and heads;
- the value images u_k = W_O^h v_k (its slice of o_proj on the values of the key/value head it
  reads) and the head's own output o_i = sum_k a_ik u_k, with their norms;
- the SPEC section 3 bound. delta_i is the distance from 0 to the convex hull of the non-first
  images {u_1..u_i}; then a_i0 >= (delta_i - ||o_i||) / (delta_i + ||u_0||), and a certified
  lower bound on delta_i keeps it valid. The QP is ``empirical.training.bound``'s (accelerated projected
  gradient on the simplex, duality certificate). It is solved in the head's d_h coordinates:
  u_k = W_O^h v_k = Q (R v_k) with W_O^h = Q R (QR, Q with orthonormal columns), so the hull of
  the R v_k has the same distances; the solver's weights are then certified in the model's
  D-dimensional space on the u_k themselves (``bound.certificate``), so the lower bound does
  not depend on Q being orthonormal to rounding. A query's problem stops once its gap is below
  ``REL_TOL`` of delta or once a hull point nearer than ||o_i|| shows the bound vacuous there;
  either way the reported delta_lower is certified.

Shapes: per layer, arrays [H, B, T-1] over (head, text, query 1..T-1) and [H, B] per text.
"""

from __future__ import annotations

import numpy as np
import torch

from empirical.training import bound

from . import extract

GU_EPS = (0.3, 0.8)  # Gu et al.'s default threshold and the stricter one of Barbero et al.
REL_TOL = 1e-3  # a delta known to 0.1 % moves the bound by less than 0.001 of its value
PAIR_FIELDS = ("mass", "output_norm", "bound", "delta_lower", "delta_upper")


def gu_scores(pattern: torch.Tensor) -> torch.Tensor:
    """alpha_k per text and head: ``pattern`` [B, H, T, T] -> [B, H, T], each weight a_ik divided
    by T - k (the queries that see key k under the causal mask) and summed over queries i."""
    T = pattern.shape[-1]
    seen_by = torch.arange(T, 0, -1, dtype=pattern.dtype, device=pattern.device)  # key k: T - k queries
    return (pattern / seen_by).sum(dim=-2)


def sink_percentage(alpha0: torch.Tensor, eps: float) -> float:
    """Sink^eps: the percentage of (text, layer, head) entries of ``alpha0`` above ``eps``."""
    return 100.0 * float(np.mean(np.asarray(alpha0) > eps))


@torch.no_grad()
def layer_quantities(model, layer: int, pattern: torch.Tensor, v: torch.Tensor,
                     geo: extract.Geometry | None = None, iters: int = bound.SOLVER_ITERS) -> dict[str, torch.Tensor]:
    """Everything the probe records for one layer from its float64 recomputation
    (``extract.recompute``: pattern [B, H, T, T], values v [B, H_kv, T, d_h]). Returns float64
    tensors: per pair [H, B, T-1] the fields of ``PAIR_FIELDS``; per text [H, B] ``u0_norm``,
    ``value_norm_mean`` and ``gu_alpha0``."""
    geo = geo or extract.geometry(model)
    B, H, T, _ = pattern.shape
    slices = torch.stack([extract.output_slice(model, layer, h, geo) for h in range(H)])  # [H, D, dh]
    _, Rs = _qr_one_thread(slices)
    images, reduced = [], []
    for h in range(H):
        v_h = v[:, geo.kv_head(h)]  # [B, T, dh]
        images.append(v_h @ slices[h].T)  # [B, T, D]: u_k
        reduced.append(v_h @ Rs[h].T)  # [B, T, dh]: R v_k, same Gram matrix
    U = torch.stack(images)  # [H, B, T, D]
    a = pattern.transpose(0, 1)  # [H, B, T, T]
    out_norm = (a @ U).norm(dim=-1)[..., 1:]  # [H, B, T-1]: ||o_i||, queries 1..T-1
    lower, upper = _delta_bounds(torch.stack(reduced), U, out_norm, iters)
    u0_norm = U[:, :, 0].norm(dim=-1)  # [H, B]
    denom = lower + u0_norm.unsqueeze(-1)
    spec = torch.where(denom > 0, (lower - out_norm) / denom.clamp(min=1e-300), torch.zeros_like(denom))
    return {"mass": a[..., 1:, 0], "output_norm": out_norm, "bound": spec, "delta_lower": lower,
            "delta_upper": upper, "u0_norm": u0_norm, "value_norm_mean": U[:, :, 1:].norm(dim=-1).mean(dim=-1),
            "gu_alpha0": gu_scores(pattern)[..., 0].transpose(0, 1)}


def _qr_one_thread(matrices: torch.Tensor):
    """Batched QR on one thread. The [576, 64] factorisations are too small for LAPACK's threads:
    on SmolLM2 at 2 threads they cost 10x the CPU of one (0.06-0.1 s a layer against 6 ms,
    measured on the shared 2-core host), 27 of the measure stage's CPU seconds."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return torch.linalg.qr(matrices)
    finally:
        torch.set_num_threads(threads)


def _delta_bounds(reduced: torch.Tensor, images: torch.Tensor, out_norm: torch.Tensor,
                  iters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Certified (lower, upper) bounds [H, B, T-1] on delta_i: query i's problem is the hull of
    keys 1..i, one point set per (head, text) shared by its T-1 queries."""
    H, B, T, dh = reduced.shape
    keys = torch.arange(1, T)
    mask = (keys <= keys.unsqueeze(-1)).expand(H * B, T - 1, T - 1)  # [N, query, key]
    lam = bound.min_norm_weights(reduced[:, :, 1:].reshape(H * B, T - 1, dh), mask, iters=iters,
                                 floor=out_norm.reshape(H * B, T - 1), rel_tol=REL_TOL, chunk=1024)
    lower, upper = bound.certificate(images[:, :, 1:].reshape(H * B, T - 1, -1), mask, lam)
    return lower.view(H, B, T - 1), upper.view(H, B, T - 1)
