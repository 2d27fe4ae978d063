"""A sharper bound at one trigger query whose content is fixed: each key's weight tied to its own
content (issue 17, item 2; a diagnostic of eta_up's relaxation, not part of eta_up).

``error.trigger_bound_box`` relaxes each content key's weight and its content independently.
On the trained single-layer heads that is most of the gap between eta_up and eta_lo: with the
key weights frozen the same bound falls to about half of eta_lo, so the worst inputs live on
the correlation between a key's score and its value. This module bounds the error at trigger
query j over every input whose trigger token has the fixed content q (the j - 1 content keys
free in [-1, 1]^n), keeping that correlation. Softmax only.

Scores are taken relative to the content-free content-key score (softmax is shift-invariant), so
a content key with content c has weight w = e^u, u = beta . c, beta = M[1, C] + M[C, C]^T q;
BOS and the trigger's own key have fixed weights w_0, w_o (q is fixed). For coordinate r and
sign s the error is s E = (w_0 s v_0 + w_o s v_o + sum_k w_k s v_k) / D - s t, with D the sum of
the weights and t the target (1/j)(x_o,r + sum_k x_k,r). For every real lambda and rho = 1/D,

    s E = lambda D + w_0 (s v_0 rho - lambda) + w_o (s v_o rho - lambda) - s x_o,r / j
          + sum_k [ w_k (s v_k rho - lambda) - s x_k,r / j ]                    (an identity),

and each key's bracket is at most K(rho, lambda), the same maximum over one key's content for
every key. For D in a cell [D_a, D_b] with one lambda the right-hand side is convex in rho
(affine in rho, plus lambda / rho, which is convex for lambda >= 0 and is replaced by its tangent
at the cell's middle, an upper bound, for lambda < 0), so its maximum over the cell is at an end:

    s E <= max over rho in {1/D_a, 1/D_b} of [ P(rho, lambda) + lambda-term + (j - 1) K(rho, lambda) ].

lambda is chosen per cell by a golden-section search (any lambda gives a valid bound; the function
is convex in lambda). The key's maximum K: with alpha = s rho V[r, flag] - lambda, g = s rho V[r, C]
and h the target's coefficients, max over c of e^{beta.c} (alpha + g.c) + h.c. Its u-range
[-U, U] (U = ||beta||_1 plus rounding) is cut into ``slices``; in each, for every mu (Lagrange
multiplier of u = beta.c),

    max  <=  max over u in the slice of  e^u alpha + mu u + ||e^u g + h - mu beta||_1 + |mu| eps,

eps covering the rounding of beta. In y = e^u every term is convex except mu log y for mu > 0,
replaced by its tangent at the slice's middle (an upper bound), so the maximum over the slice is
at its ends; the result is piecewise linear and convex in mu, minimised exactly over the
breakpoints and the crossings of the two ends. Float64, with an a-priori rounding allowance of
64 (n + 8) u per term times the largest sum of absolute values met (``_allowance``).

What it certifies: at trigger position j and trigger content q, every input's max-abs error is at
most the bound (the smaller of this bound and ``error.trigger_bound_box`` at the same query; the
box relaxation is the sharper one when the worst keys need no weight-content trade-off). It says
nothing about other trigger contents: the query content moves every key's score through
M[C, C], and that coupling is what a bound over all contents still relaxes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from constructions import task

from . import error, heads

CELLS = 64  # cells of the normaliser D, one lambda each (the bound tightens about like 1 / CELLS)
SLICE_WIDTH = 0.002  # width of a slice of a key's score range (the bound tightens about like the width)
MAX_SLICES = 128
CHUNK = 2_000_000  # batch x slices x candidates x n per evaluation of the key bound (memory)
GOLDEN_STEPS = 48  # golden-section steps for lambda per cell


def _key_bound(beta: np.ndarray, eps: float, U: float, alpha: np.ndarray, g: np.ndarray, h: np.ndarray,
               slices: int, sizes: bool = False, multipliers: bool = False) -> tuple[np.ndarray, ...]:
    """Upper bounds [B] on max over c in [-1, 1]^n of e^{u}(alpha + g.c) + h.c with |u - beta.c| <= eps,
    |u| <= U, for a batch of (alpha [B], g [B, n], h [B, n]); the largest absolute sum met [B]; and
    with ``multipliers`` the minimising mu per slice [B, slices] (in chunks of the batch, to bound
    the memory)."""
    per = max(1, CHUNK // (slices * (2 * len(beta) + 1) * len(beta)))
    if len(alpha) > per:
        parts = [_key_bound(beta, eps, U, alpha[i:i + per], g[i:i + per], h[i:i + per], slices, sizes, multipliers)
                 for i in range(0, len(alpha), per)]
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(len(parts[0])))
    return _key_bound_chunk(beta, eps, U, alpha, g, h, slices, sizes, multipliers)


def _key_bound_chunk(beta, eps, U, alpha, g, h, slices, sizes, multipliers=False):
    edges = np.linspace(-U, U, slices + 1)
    y = np.exp(edges)
    ym = (y[:-1] + y[1:]) / 2
    ends = []
    for k in (0, 1):
        ye, le = y[k:slices + k], edges[k:slices + k]
        ends.append((ye, le, np.log(ym) + (ye - ym) / ym))  # [S] each: y, log y, the tangent of log at ym
    nz = beta != 0
    cand = [np.zeros(alpha.shape + (slices, 1))]
    for ye, _, _ in ends:
        cand.append((g[:, None, nz] * ye[None, :, None] + h[:, None, nz]) / beta[nz])
    mu = np.sort(np.concatenate(cand, axis=-1), axis=-1)  # [B, S, K]

    def G(end, m):
        ye, le, te = end
        T = np.where(m <= 0, m * le[None, :, None], m * te[None, :, None])
        A = g[:, None, :] * ye[None, :, None] + h[:, None, :]  # [B, S, n]
        inner = np.abs(A[:, :, None, :] - m[..., None] * beta).sum(-1)
        val = alpha[:, None, None] * ye[None, :, None] + T + inner + np.abs(m) * eps
        if not sizes:
            return val, val
        size = (np.abs(alpha)[:, None, None] * ye[None, :, None] + np.abs(T) + np.abs(m) * (1 + eps)
                + (np.abs(A)[:, :, None, :] + np.abs(m[..., None] * beta)).sum(-1))  # |m|: y's and log's roundings
        return val, size

    (ga, sa), (gb, sb) = G(ends[0], mu), G(ends[1], mu)
    top, size, mus = np.maximum(ga, gb), np.maximum(sa, sb), mu
    diff = ga - gb
    cross = diff[..., :-1] * diff[..., 1:] < 0
    if cross.any():  # between two breakpoints both ends are linear in mu: their crossing
        t = np.where(cross, diff[..., :-1] / np.where(cross, diff[..., :-1] - diff[..., 1:], 1), 0)
        mx = mu[..., :-1] + t * (mu[..., 1:] - mu[..., :-1])
        (xa, xsa), (xb, xsb) = G(ends[0], mx), G(ends[1], mx)
        top, size = np.concatenate([top, np.maximum(xa, xb)], -1), np.concatenate([size, np.maximum(xsa, xsb)], -1)
        mus = np.concatenate([mu, mx], -1)
    k = top.argmin(axis=-1)[..., None]
    best = np.take_along_axis(top, k, -1)[..., 0]  # [B, S]
    big = np.take_along_axis(size, k, -1)[..., 0]
    if multipliers:
        return best.max(axis=1), big.max(axis=1), np.take_along_axis(mus, k, -1)[..., 0]
    return best.max(axis=1), big.max(axis=1)


class _Query:
    """The fixed pieces at one trigger query: weights, value rows, target coefficients."""

    def __init__(self, h: heads.Head, j: int, q: np.ndarray):
        d, n = h.d, h.n
        C, fl = list(range(task.CONTENT_START, d - 1)), task.content_flag(d)
        M, V = h.M, h.V
        N = M[np.ix_(C, C)]
        self.beta = M[task.TRIGGER_FLAG, C] + N.T @ q
        u = heads.UNIT_ROUNDOFF
        spread = np.abs(M[task.TRIGGER_FLAG, C]) + np.abs(N).T @ np.abs(q)
        self.eps = float(4 * (n + 3) * u * spread.sum())  # M's rounding and beta's formation
        self.U = float(np.abs(self.beta).sum() * (1 + 4 * n * u) + self.eps)
        w = error.raw_weights(h, q, q)  # rigorous enclosures of BOS and own weights at this content
        self.w0, self.wo = w["bos"], w["own"]
        lo = self.w0[0] + self.wo[0] + (j - 1) * np.exp(-self.U)
        hi = self.w0[1] + self.wo[1] + (j - 1) * np.exp(self.U)
        self.D = (lo * (1 - 1e-12), hi * (1 + 1e-12))
        rows = [(r, s) for r in range(d) for s in (1, -1)]
        self.r = np.array([r for r, _ in rows])
        self.s = np.array([s for _, s in rows], dtype=float)
        er = np.eye(d)[self.r]  # [R, d]
        self.v0, self.v1, self.vf = V[self.r, task.BOS_FLAG], V[self.r, task.TRIGGER_FLAG], V[self.r, fl]
        self.vC = V[np.ix_(self.r, C)]  # [R, n]
        self.vo = self.v1 + self.vC @ q  # own value
        self.to = er[:, task.TRIGGER_FLAG] + er[:, C] @ q  # own target feature
        self.tf, self.tC = er[:, fl], er[:, C]
        self.j = j
        self.lam_max = 2 * (np.abs(V).sum(axis=1).max() + 1) / self.D[0]

    def value(self, rows, lam, D, Dm, slices, sizes=False):
        """The bound [B] for rows [B] (indices of (coordinate, sign)) at multiplier lam [B],
        normaliser D [B] and cell middle Dm [B], and the largest absolute sum met."""
        s, j = self.s[rows], self.j
        rho, rm = 1 / D, 1 / Dm
        P = np.maximum(*(w * (s * self.v0[rows] * rho - lam) for w in self.w0))
        P = P + np.maximum(*(w * (s * self.vo[rows] * rho - lam) for w in self.wo)) - s * self.to[rows] / j
        Lt = np.where(lam >= 0, lam / rho, lam / rm - lam * (rho - rm) / rm ** 2)
        alpha = s * rho * self.vf[rows] - lam
        K, big = _key_bound(self.beta, self.eps, self.U, alpha, (s * rho)[:, None] * self.vC[rows],
                            -(s / j)[:, None] * self.tC[rows], slices, sizes)
        total = P + Lt + (j - 1) * (K - s * self.tf[rows] / j)
        size = (self.w0[1] * (np.abs(self.v0[rows]) * rho + np.abs(lam)) + self.wo[1] * (np.abs(self.vo[rows]) * rho + np.abs(lam))
                + np.abs(self.to[rows]) / j + np.abs(lam) / rm * 3 + (j - 1) * (big + np.abs(self.tf[rows]) / j))
        return total, size


def _golden(f, lo: np.ndarray, hi: np.ndarray, steps: int) -> np.ndarray:
    """Per batch element, the point with the smallest value of f met by a golden-section search on
    [lo, hi] (f is convex in it; any point gives a valid bound, so an inexact minimum is only less
    tight)."""
    g = (np.sqrt(5) - 1) / 2
    a, b = lo.copy(), hi.copy()
    c, e = b - g * (b - a), a + g * (b - a)
    fc, fe = f(c), f(e)
    arg, best = np.where(fc <= fe, c, e), np.minimum(fc, fe)
    for _ in range(steps):
        left = fc < fe  # the minimum lies in [a, e]: drop (e, b]; else drop [a, c)
        a, b = np.where(left, a, c), np.where(left, e, b)
        probe = np.where(left, b - g * (b - a), a + g * (b - a))
        fp = f(probe)
        c, fc, e, fe = (np.where(left, probe, e), np.where(left, fp, fe),
                        np.where(left, c, probe), np.where(left, fc, fp))
        better = fp < best
        arg, best = np.where(better, probe, arg), np.where(better, fp, best)
    return arg


def _allowance(size: float, n: int, j: int) -> float:
    """Rounding allowance: every bound is a sum of at most (j + 2)(n + 8) rounded operations per
    term on numbers whose absolute values sum to at most ``size`` (Higham, Thm 3.1), and numpy's
    exp / log are within a few ulps; 64 (n + 8) u per term leaves a wide margin."""
    return 64 * (n + 8) * (j + 2) * heads.UNIT_ROUNDOFF * (1 + size)


def _row_bounds(Q: _Query, rows: np.ndarray, cells: int, slices: int, steps: int) -> tuple[np.ndarray, float]:
    """Each row's bound (its worst cell) and the largest absolute sum met, for ``rows``."""
    edges = np.linspace(Q.D[0], Q.D[1], cells + 1)
    R = len(rows)
    idx = np.tile(rows, cells)
    Da, Db = np.repeat(edges[:-1], R), np.repeat(edges[1:], R)  # [cells * R], rows fastest
    Dm = (Da + Db) / 2

    def at_ends(lam, sizes=False):
        (fa, sa), (fb, sb) = (Q.value(idx, lam, Da, Dm, slices, sizes), Q.value(idx, lam, Db, Dm, slices, sizes))
        return (np.maximum(fa, fb), np.maximum(sa, sb)) if sizes else np.maximum(fa, fb)

    lim = np.full(len(idx), Q.lam_max)
    best, size = at_ends(_golden(at_ends, -lim, lim, steps), sizes=True)
    return best.reshape(cells, R).max(axis=0), float(size.max())


def fixed_query_bound(h: heads.Head, j: int, q, cells: int = CELLS, slices: int | None = None,
                      steps: int = GOLDEN_STEPS) -> dict[str, Any]:
    """Certified bound on the max-abs error at trigger query ``j`` over every input whose trigger
    content is ``q`` (softmax head); which coordinate and sign attain it.

    Every (coordinate, sign) row first gets a coarse bound (cells / 8 cells); rows are then refined
    at ``cells`` in order of their coarse bound until no unrefined row's coarse bound exceeds the
    largest refined one. A row's figure is the smaller of its two bounds (both are valid)."""
    if h.kind != "softmax":
        raise ValueError(f"the fixed-query bound is for softmax heads, not {h.kind}")
    q = np.asarray(q, dtype=float)
    Q = _Query(h, j, q)
    slices = slices or int(np.clip(np.ceil(2 * Q.U / SLICE_WIDTH), 4, MAX_SLICES))
    every = np.arange(len(Q.r))
    bound, size = _row_bounds(Q, every, max(1, cells // 8), slices, steps)
    refined = np.zeros(len(every), dtype=bool)
    while True:
        top = bound[refined].max() if refined.any() else -np.inf
        todo = every[~refined & (bound > top)]
        if not len(todo):
            break
        todo = todo[np.argsort(-bound[todo])][:4]
        fine, s = _row_bounds(Q, todo, cells, slices, steps)
        bound[todo], refined[todo], size = np.minimum(bound[todo], fine), True, max(size, s)
    k = int(bound.argmax())
    dual = float(bound[k]) + _allowance(size, h.n, j)
    box = error.trigger_bound_box(h, j, q, q)  # the independent relaxation at the same query, also valid
    return {"bound": min(dual, box), "dual": dual, "box": box, "coordinate": int(Q.r[k]), "sign": int(Q.s[k]),
            "trigger": j, "content": [float(v) for v in q], "cells": cells, "slices": slices, "score_range": Q.U,
            "rows_refined": int(refined.sum())}


def at_witness(h: heads.Head, eta: dict[str, Any], cells: int = CELLS) -> dict[str, Any] | None:
    """The fixed-query bound over every input that shares eta_lo's witness's trigger position and
    trigger content, with bound / eta_lo as ``ratio``; None when the head is not softmax or the
    witness sits at a non-trigger query (``eta`` is ``error.eta_upper`` + ``eta_lower``'s dict)."""
    if h.kind != "softmax" or eta.get("case") != "trigger":
        return None
    j = eta["trigger"]
    out = fixed_query_bound(h, j, eta["contents"][j - 1], cells)  # contents[k] is position k + 1's
    out["ratio"] = out["bound"] / eta["eta_lo"] if eta["eta_lo"] > 0 else None
    return out
