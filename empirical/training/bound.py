"""Certified lower bounds on the sink mass of softmax heads (constructions/SPEC.md section 3).

At a query i of one head with weights a_i on the simplex, write u_k for the value image of key
k (u_k = W_O^h W_V^h x_k) and o_i = sum_k a_ik u_k for the head's output. Let delta_i be the
distance from the origin to the convex hull of the non-BOS images {u_1..u_i}. Then

    o_i = a_i0 u_0 + (1 - a_i0) p  with p in that hull, so  ||o_i|| >= (1 - a_i0) delta_i - a_i0 ||u_0||,
    hence  a_i0 >= (delta_i - ||o_i||) / (delta_i + ||u_0||).

The right side increases with delta_i, so any certified LOWER bound on delta_i gives a valid
bound on a_i0. We compute one by duality: for every unit vector w, min_k w . u_k <= delta_i
(the hull lies in the half-space w . p >= min_k w . u_k). We solve the min-norm-point problem
min ||sum_k lam_k u_k|| over the simplex approximately (batched accelerated projected
gradient with adaptive restart, float64), take w = x*/||x*|| at the found point x*, and report
``delta_lower = max(0, min_k w . u_k)`` and ``delta_upper = ||x*||`` (a point of the hull); their
difference is the duality gap, so the solver's accuracy only affects tightness, never validity.

Where the bound says something:

- Single layer, single head: o_i is the model's output and the target at a non-trigger query is
  0, so ||o_i|| is the task error there; the bound tends to 1 as the error and ||u_0|| go to 0
  while delta_i stays away from 0. This is the T1 bound.
- A head inside a multi-layer stack: the inequality holds for every head (x_k are that layer's
  inputs and o_i the head's own output), but the target constrains only the sum of all heads'
  outputs over all layers, not one head's output, so ||o_i|| need not be small and the bound
  may be vacuous (<= 0). It is reported per head with the fraction of queries where it is > 0.
- It needs weights on the simplex: kinds with ``normalised=True`` (softmax, sum-normalised
  sigmoid; their weights are also non-negative). ReLU rows are not on the simplex: no bound.
"""

from __future__ import annotations

import math

import torch

from constructions import attention
from empirical.training import metrics

SOLVER_ITERS = 300
CHECK_EVERY = 20
SOLVER_GAP_TOL = 1e-9  # a problem is retired once its duality gap is below this
VIOLATION_TOL = 1e-9  # measured - bound below -VIOLATION_TOL counts as a violation (float64 rounding above it)


def applies(kind: str) -> bool:
    """The bound needs attention rows on the simplex."""
    return attention.get(kind).normalised


def project_simplex(v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row of ``v`` [..., K] onto the simplex over the keys where
    ``mask`` [..., K] is True (zero elsewhere; every row needs one True). Sort-based, batched."""
    K = v.shape[-1]
    # Hidden keys get a finite sentinel, so they sort last and the cumulative sums over the
    # kept prefix are the same numbers with no clean-up pass: at a hidden position p, with m
    # hidden keys in the prefix (m < p), the support test is about -HIDDEN * (1 - m / p) < 0.
    s, _ = torch.sort(torch.where(mask, v, _HIDDEN), dim=-1, descending=True)
    cs = torch.cumsum(s, dim=-1)
    k = torch.arange(1, K + 1, device=v.device, dtype=v.dtype)
    support = s - (cs - 1) / k > 0  # a prefix of the sorted kept keys
    rho = support.sum(dim=-1, keepdim=True)  # [..., 1], >= 1: the largest kept key is in it
    theta = (torch.gather(cs, -1, rho - 1) - 1) / rho.to(v.dtype)
    return (v - theta).clamp(min=0) * mask


_HIDDEN = -1e30  # far below any kept value (|v| is O(1) to O(1e6) here)


def min_norm_distance(points: torch.Tensor, mask: torch.Tensor, iters: int = SOLVER_ITERS,
                      gap_tol: float = SOLVER_GAP_TOL, chunk: int = 16384) -> tuple[torch.Tensor, torch.Tensor]:
    """Distance from the origin to the convex hull of ``points`` [N, K, d] where ``mask`` [N, K]
    (every row needs one True). Returns (certified lower bound, upper bound), each [N].
    Problems are solved ``chunk`` at a time to bound memory. ``min_norm_weights`` and
    ``certificate`` also take Q problems per point set (mask [N, Q, K])."""
    lam = min_norm_weights(points, mask, iters, gap_tol, chunk)
    return _certificate(points.to(torch.float64), mask, lam)


def min_norm_weights(points: torch.Tensor, mask: torch.Tensor, iters: int = SOLVER_ITERS,
                     gap_tol: float = SOLVER_GAP_TOL, chunk: int = 16384,
                     floor: torch.Tensor | None = None, rel_tol: float = 0.0) -> torch.Tensor:
    """The solver's simplex weights (zero off ``mask``) of its approximate min-norm points, [N, K]
    for ``mask`` [N, K] or [N, Q, K] for ``mask`` [N, Q, K] (Q problems on each point set, over
    subsets of its keys: the queries of one sequence). Any such weights give a valid certificate
    (``certificate``), in this basis or in any other that preserves inner products.

    ``floor`` (shaped like the problems, [N] or [N, Q]): a caller that only needs to know whether
    the distance exceeds it; a problem is also done once a hull point at most that far is found.
    ``rel_tol``: a problem is also done once its gap is below ``rel_tol`` times its upper bound."""
    single = mask.dim() == 2
    mask = mask.unsqueeze(-2) if single else mask
    if floor is None:
        floor = torch.full(mask.shape[:-1], float("-inf"), dtype=torch.float64, device=mask.device)
    elif single:
        floor = floor.unsqueeze(-1)
    lam = torch.cat([_solve(points[s:s + chunk], mask[s:s + chunk], iters, gap_tol, floor[s:s + chunk], rel_tol)
                     for s in range(0, len(points), chunk)])
    return lam.squeeze(-2) if single else lam


def _solve(points: torch.Tensor, mask: torch.Tensor, iters: int, gap_tol: float, floor: torch.Tensor,
           rel_tol: float = 0.0) -> torch.Tensor:
    # FISTA with gradient-based adaptive restart (O'Donoghue & Candes 2015), per problem, on
    # points [N, K, d] with Q problems each (mask [N, Q, K]); every CHECK_EVERY steps the point
    # sets whose problems all have a duality gap below gap_tol (or a hull point within floor
    # [N, Q] of the origin) are retired.
    points = points.to(torch.float64)
    maskf = mask.to(points.dtype)
    gram = points @ points.transpose(-1, -2)  # [N, K, K]; y is 0 off its mask, so G y is the masked product
    used = maskf.amax(dim=-2)  # [N, K]: keys some problem of the set sees
    top = torch.linalg.eigvalsh(gram * (used.unsqueeze(-1) * used.unsqueeze(-2)))[..., -1:]  # [N, 1]
    # A problem over a subset of the keys has a smaller Lipschitz constant: the Frobenius norm of
    # its masked Gram matrix bounds it (exact for one problem per set, where top is smaller).
    frobenius = ((maskf @ gram.square()) * maskf).sum(dim=-1).sqrt()  # [N, Q]
    step = (1.0 / (2 * torch.minimum(top, frobenius).clamp(min=1e-300))).unsqueeze(-1)  # [N, Q, 1]
    lam = maskf / maskf.sum(dim=-1, keepdim=True)  # [N, Q, K], uniform start
    final = lam.clone()
    live = torch.arange(len(points), device=points.device)  # point sets still being solved
    # The live sets' data are compacted only when some retire, not gathered at every step:
    # each problem's arithmetic is the same, so are its numbers.
    pts, m, g, s, lo = points, mask, gram, step, floor
    y, t = lam, torch.ones_like(step)
    for it in range(iters):
        grad = 2 * (y @ g)  # [n, Q, K]; the Gram matrix is symmetric
        new = project_simplex(y - s * grad, m)
        restart = ((y - new) * (new - lam)).sum(dim=-1, keepdim=True) > 0  # momentum points uphill
        t = torch.where(restart, torch.ones_like(t), t)
        t_next = (1 + torch.sqrt(1 + 4 * t * t)) / 2
        y = new + ((t - 1) / t_next) * (new - lam)
        lam, t = new, t_next
        if it % CHECK_EVERY == CHECK_EVERY - 1 or it == iters - 1:
            final[live] = lam
            lower, upper = certificate(pts, m, lam)
            open_gap = (upper - lower) >= torch.clamp(rel_tol * upper, min=gap_tol)
            keep = (open_gap & (upper > lo)).any(dim=-1)
            if bool(keep.all()):
                continue
            live, lam, y, t = live[keep], lam[keep], y[keep], t[keep]
            if len(live) == 0:
                break
            pts, m, g, s, lo = pts[keep], m[keep], g[keep], s[keep], lo[keep]
    return final


def _certificate(points: torch.Tensor, mask: torch.Tensor, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lower, upper = certificate(points, mask.unsqueeze(-2), lam.unsqueeze(-2))
    return lower.squeeze(-1), upper.squeeze(-1)


def certificate(points: torch.Tensor, mask: torch.Tensor, lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(certified lower bound, upper bound) [..., Q] on the distance from 0 to the hull of the
    ``points`` [..., K, d] where ``mask`` [..., Q, K], for Q problems that share one point set
    (the queries of one sequence), from simplex weights ``lam`` [..., Q, K]: the point
    x = sum_k lam_k p_k is in the hull (upper = ||x||) and w = x / ||x|| bounds every hull point's
    norm from below by min_k w . p_k."""
    x = lam @ points  # [..., Q, d], a point of each hull
    upper = x.norm(dim=-1)
    w = x / upper.clamp(min=1e-300).unsqueeze(-1)
    lower = (w @ points.transpose(-1, -2)).masked_fill(~mask, float("inf")).amin(dim=-1)
    lower = torch.where(upper > 0, lower.clamp(min=0), torch.zeros_like(lower))
    return lower, upper


def head_bound(images: torch.Tensor, pattern: torch.Tensor, trigger: torch.Tensor,
               iters: int = SOLVER_ITERS) -> dict[str, torch.Tensor]:
    """The bound at every (sequence, non-trigger query) of one head.

    ``images`` [..., B, L, d]: u_k for every position; ``pattern`` [..., B, L, L]: the head's
    weights (query x key); ``trigger`` [B]. Returns flat tensors over the non-trigger pairs
    (shape [..., P]) of the measured a_i0, the bound, delta (lower, upper), ||o_i|| and ||u_0||.
    """
    images, pattern = images.to(torch.float64), pattern.to(torch.float64)
    L = pattern.shape[-1]
    out = pattern @ images  # [..., B, L, d]: the head's output o_i
    q_mask = metrics.query_masks(trigger, L)["nontrigger"]  # [B, L]
    lead = pattern.shape[:-3]
    B = pattern.shape[-3]
    # One problem per (leading index, sequence, non-trigger query): keys 1..L-1, those <= i valid.
    keys = images[..., 1:, :]  # [..., B, L-1, d]
    pts = keys.unsqueeze(-3).expand(*lead, B, L, L - 1, keys.shape[-1])  # [..., B, Lq, L-1, d]
    key_ok = torch.arange(1, L, device=trigger.device) <= torch.arange(L, device=trigger.device).unsqueeze(-1)  # [Lq, L-1]
    sel = q_mask.expand(*lead, B, L)  # [..., B, Lq]
    P = int(q_mask.sum())
    delta_lo, delta_hi = min_norm_distance(
        pts[sel].reshape(-1, L - 1, keys.shape[-1]),
        key_ok.expand(*lead, B, L, L - 1)[sel].reshape(-1, L - 1),
        iters=iters,
    )
    shape = (*lead, P)
    o_norm = out.norm(dim=-1)[sel].reshape(shape)
    u0_norm = images[..., 0, :].norm(dim=-1).unsqueeze(-1).expand(*lead, B, L)[sel].reshape(shape)
    measured = pattern[..., 0][sel].reshape(shape)
    delta_lo, delta_hi = delta_lo.reshape(shape), delta_hi.reshape(shape)
    denom = delta_lo + u0_norm
    bound = torch.where(denom > 0, (delta_lo - o_norm) / denom.clamp(min=1e-300), torch.zeros_like(denom))
    return {"measured": measured, "bound": bound, "delta_lower": delta_lo, "delta_upper": delta_hi,
            "output_norm": o_norm, "bos_image_norm": u0_norm}


def summarise(result: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per-problem tensors [..., P] -> summary numbers [...] (means, mins, worst slack)."""
    slack = result["measured"] - result["bound"]
    return {
        "bound_mean": result["bound"].mean(dim=-1),
        "bound_min": result["bound"].amin(dim=-1),
        "bound_positive_fraction": (result["bound"] > 0).to(torch.float64).mean(dim=-1),
        "measured_mean": result["measured"].mean(dim=-1),
        "measured_min": result["measured"].amin(dim=-1),
        "min_slack": slack.amin(dim=-1),  # measured - bound; a theorem says >= 0
        "violations": (slack < -VIOLATION_TOL).sum(dim=-1),
        "delta_lower_mean": result["delta_lower"].mean(dim=-1),
        "delta_lower_min": result["delta_lower"].amin(dim=-1),
        "duality_gap_max": (result["delta_upper"] - result["delta_lower"]).amax(dim=-1),
        "output_norm_max": result["output_norm"].amax(dim=-1),
        "bos_image_norm_mean": result["bos_image_norm"].mean(dim=-1),
    }


def head_images(layer, x: torch.Tensor, head: int) -> torch.Tensor:
    """u_k = W_O^h W_V^h x_k for every position: ``x`` [*E, B, L, d] -> [*E, B, L, d]."""
    d = layer.d
    W_O_h = layer.W_O[..., :, head * d:(head + 1) * d]  # [*E, d, d]
    value_map = W_O_h @ layer.W_V[..., head, :, :]  # [*E, d, d]
    return torch.einsum("...ed,...bld->...ble", value_map, x)


@torch.no_grad()
def model_bounds(model, x: torch.Tensor, trigger: torch.Tensor,
                 iters: int = SOLVER_ITERS) -> list[list[dict[str, torch.Tensor]]]:
    """Per layer and head, the bound summary ([*E] tensors) of ``model`` on inputs ``x`` [B, L, d].

    The model should be float64 (the caller converts); heads of kinds not on the simplex are
    skipped (the list holds ``None`` for them)."""
    if not model.kind.normalised:
        return [[None] * model.n_heads for _ in model.layers]
    _, cache = model(x)
    report = []
    for n, layer in enumerate(model.layers):
        inputs = cache[f"L{n}.input"]
        if model.ensemble is not None and inputs.dim() == 3:
            inputs = inputs.expand(model.ensemble, *inputs.shape)
        pattern = cache[f"L{n}.pattern"]  # [*E, B, H, L, L]
        report.append([
            summarise(head_bound(head_images(layer, inputs, h), pattern[..., h, :, :], trigger, iters))
            for h in range(model.n_heads)
        ])
    return report
