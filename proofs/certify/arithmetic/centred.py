"""A head's mixture o_i = sum_k a_ik w_k around central weights: the weights' correlation with the
values kept for a whole central share, not only for the certified lower ends.

``affine.mixture`` writes o_i = (1 - sum_{k>=1} lo_k) w_0 + sum_{k>=1} lo_k w_k + a remainder:
at a query whose weights spread (an averaging head, lo_k near 0) nearly the whole mixture lands in
the remainder, where each key's value is an independent interval. Here, for any coefficients m
with sum m = 1 (the head's weights at one input of the class, say),

    o_i = sum_k m_k w_k  +  sum_k delta_k w_k,    delta_k = a_ik - m_k in [lo_k - m_k, hi_k - m_k],

and sum_k delta_k = 0, so for every scalar lambda the second sum equals sum_k delta_k (w_k - lambda)
and each term is bounded on its own box (the corners of delta_k times the ends of w_k - lambda).
That is the Lagrangian dual of the linear programme over the box and the simplex: every lambda
gives an upper bound (``dual_bound`` takes the best of the terms' kinks and the values' ends; the
figure is sound whichever lambda wins). With m = (1 - sum lo, lo_1, ...) it reproduces
``affine.mixture``'s knapsack (the knapsack's threshold is the optimal lambda); ``mixture`` takes
per coordinate the narrower of the two enclosures.

Float64 with the same a-priori allowances as ``affine`` (RELATIVE_SLACK of each product's
magnitude; the coefficients' sum 1 is met up to (i + 1) u, whose effect |eps| |lambda| is added).
"""

from __future__ import annotations

import numpy as np

from .affine import RELATIVE_SLACK, TINY, Forms, mixture as box_mixture


def dual_bound(y_lo: np.ndarray, y_hi: np.ndarray, d_lo: np.ndarray, d_hi: np.ndarray,
               eps: float = 0.0) -> np.ndarray:
    """Per coordinate, an upper bound on sum_k delta_k y_k over y_k in [y_lo_k, y_hi_k] [K, d] and
    delta_k in [d_lo_k, d_hi_k] [K] with |sum_k delta_k| <= eps: min over candidate lambdas of
    sum_k max over the corners of delta_k (y_k - lambda), plus eps |lambda|."""
    dl, dh = d_lo[:, None], d_hi[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        kink = (dh * y_hi - dl * y_lo) / (dh - dl)  # where delta = d_hi's and d_lo's lines cross
    kink = np.where(np.isfinite(kink), kink, y_hi)
    cands = np.concatenate([kink, y_lo, y_hi, np.zeros((1, y_lo.shape[1]))])  # [C, d]
    lam = cands[:, None, :]  # [C, 1, d]
    corners = np.stack([dl * (y_lo - lam), dl * (y_hi - lam), dh * (y_lo - lam), dh * (y_hi - lam)])
    terms = corners.max(axis=0)  # [C, K, d]
    size = (np.abs(dl) + np.abs(dh)) * (np.abs(y_lo) + np.abs(y_hi) + np.abs(lam))
    total = terms.sum(axis=1) + RELATIVE_SLACK * size.sum(axis=1) + eps * np.abs(cands) + TINY
    return total.min(axis=0)


def deviation_box(i: int, lo: np.ndarray, hi: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(m, d_lo, d_hi, eps) for the keys 0..i: the coefficients with m_0 = 1 - sum_{k>=1} m_k, the box
    of the deviations delta = a - m over lo <= a <= hi (clipped to [0, 1], rounded outward), and
    the bound eps on |sum_k delta_k| (sum a = 1, sum m = 1 up to the float sum)."""
    lo = np.clip(lo[:i + 1], 0.0, 1.0)
    hi = np.clip(np.maximum(hi[:i + 1], lo), 0.0, 1.0)
    m = np.array(m[:i + 1], dtype=float)
    m[0] = 1.0 - m[1:].sum()
    eps = 4 * (i + 2) * 2.0 ** -53 * (1.0 + np.abs(m).sum())  # |sum m - 1| after the float sum
    d_lo = (lo - m) - RELATIVE_SLACK * (1 + np.abs(m))  # outward: the differences' rounding
    d_hi = (hi - m) + RELATIVE_SLACK * (1 + np.abs(m))
    return m, d_lo, d_hi, eps


def centred(w: Forms, i: int, lo: np.ndarray, hi: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A [d, N], b [d], r [d]) enclosing o_i = sum_{k<=i} a_ik w_k for every a with lo <= a <= hi
    and sum a = 1, written around the coefficients m [i + 1] (m_0 is taken as 1 - sum_{k>=1} m_k)."""
    keys = slice(0, i + 1)
    m, d_lo, d_hi, eps = deviation_box(i, lo, hi, m)
    A = np.einsum("k,kdn->dn", m, w.A[keys])
    b = m @ w.b[keys]
    mag = w.magnitude()[keys]
    rad = w.radius()[keys]
    y_lo, y_hi = w.b[keys] - rad, w.b[keys] + rad
    up = dual_bound(y_lo, y_hi, d_lo, d_hi, eps)
    down = dual_bound(-y_hi, -y_lo, d_lo, d_hi, eps)
    r = np.abs(m) @ w.r[keys] + (up + down) / 2
    b = b + (up - down) / 2
    r = r + RELATIVE_SLACK * (np.abs(m) @ mag + up + down + np.abs(b)) * (i + 2) + TINY
    return A, b, r


def mixture(w: Forms, i: int, lo: np.ndarray, hi: np.ndarray, m: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per coordinate the narrower (smaller remainder) of ``affine.mixture`` and ``centred`` around
    m (None: ``affine.mixture`` alone)."""
    box = box_mixture(w, i, lo, hi)
    return box if m is None else narrower(box, centred(w, i, lo, hi, m))[0]


def narrower(f: tuple, g: tuple) -> tuple[tuple, np.ndarray]:
    """Per coordinate the enclosure (A, b, r) with the smaller remainder (both are sound), and
    where g's was picked [d]."""
    pick = g[2] < f[2]
    return (np.where(pick[:, None], g[0], f[0]), np.where(pick, g[1], f[1]), np.where(pick, g[2], f[2])), pick
