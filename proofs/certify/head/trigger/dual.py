"""A bound at one trigger query whose content is fixed, each key's weight tied to its own content:
``fixed_query_bound`` at one trigger content (the report's witness-slice
column), and the pieces ``vertices`` evaluates at every point of its grid of contents.

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
is convex in lambda). The bound loses about in proportion to a cell's width, and only near the
worst D does that matter: ``refine_cells`` starts from ``CELLS`` equal cells and halves the worst
ones (``SPLITS`` times), which reaches what many times more equal cells give.

The key's maximum K: with alpha = s rho V[r, flag] - lambda, g = s rho V[r, C] and h the target's
coefficients, max over c of e^{beta.c} (alpha + g.c) + h.c. Its u-range [-U, U] (U = ||beta||_1
plus rounding) is cut into slices; in each, for every mu (Lagrange multiplier of u = beta.c),

    max  <=  max over u in the slice of  e^u alpha + mu u + ||e^u g + h - mu beta||_1 + |mu| eps,

eps covering the rounding of beta. In y = e^u every term is convex except mu log y for mu > 0,
replaced by its tangent at the slice's middle (an upper bound), so the maximum over the slice is
at its ends; the result is piecewise linear and convex in mu, minimised exactly over the
breakpoints, 0, and the crossings of the two ends (``dual_min``: also beyond the outermost
breakpoints, where the crossing can lie). Float64, with an a-priori rounding allowance of
64 (n + 8) u per term times the largest sum of absolute values met (``_allowance``).
``dual_min`` runs compiled where it can (``native``; the same operations).

What ``fixed_query_bound`` certifies: at trigger position j and trigger content q, every input's
max-abs error is at most the bound (the smaller of this bound and ``error.trigger_bound_box`` at
the same query). ``vertices`` extends it over every trigger content.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from constructions import task

from .. import error
from ...arithmetic import heads, native

CELLS = 8  # equal cells of the normaliser D to start from, one lambda each
SPLITS = 24  # halvings of a row's worst cell (the bound loses about in proportion to a cell's width)
SLICE_WIDTH = 0.01  # width of a slice of a key's score range
MIN_SLICES, MAX_SLICES = 2, 32
CHUNK = 2_000_000  # batch x slices x candidates x n per evaluation of the key bound (memory)
GOLDEN_STEPS = 24  # golden-section steps for lambda per cell (half that for a halved cell's)
PER_ROUND = 4  # cells halved at once per row (fewer, larger evaluations)


def _key_bound(beta: np.ndarray, eps: float, U: float, alpha: np.ndarray, g: np.ndarray, h: np.ndarray,
               slices: int, sizes: bool = False, multipliers: bool = False) -> tuple[np.ndarray, ...]:
    """Upper bounds [B] on max over c in [-1, 1]^n of e^{u}(alpha + g.c) + h.c with |u - beta.c| <= eps,
    |u| <= U, for a batch of (alpha [B], g [B, n], h [B, n]) and beta [n] (one key score form for
    the batch) or [B, n] (one each); the largest absolute sum met [B]; and with ``multipliers`` the
    minimising mu per slice [B, slices] (in chunks of the batch, to bound the memory)."""
    n = beta.shape[-1]
    per = max(1, CHUNK // (slices * (2 * n + 3) * n))
    if len(alpha) > per:
        cut = (lambda b, i: b[i:i + per]) if beta.ndim == 2 else (lambda b, i: b)
        parts = [_key_bound(cut(beta, i), eps, U, alpha[i:i + per], g[i:i + per], h[i:i + per], slices, sizes, multipliers)
                 for i in range(0, len(alpha), per)]
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(len(parts[0])))
    return dual_min(beta if beta.ndim == 2 else beta[None], eps, np.zeros_like(alpha), alpha, g, h,
                    *slice_ends(U, slices), sizes, multipliers)


@functools.lru_cache(maxsize=256)
def slice_ends(U: float, slices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A key's score range [-U, U] in ``slices`` slices, for ``dual_min``: per slice and end
    (each [1, S, 2]) y = e^u, and the coefficient of mu for mu <= 0 (u itself: mu u is convex in
    y there) and for mu > 0 (the tangent of log y at the slice's middle y: an upper bound).
    Cached (read-only arrays)."""
    edges = np.linspace(-U, U, slices + 1)
    y = np.exp(edges)
    ym = (y[:-1] + y[1:]) / 2
    Y = np.stack([y[:-1], y[1:]], axis=-1)
    Tn = np.stack([edges[:-1], edges[1:]], axis=-1)
    Tp = np.log(ym)[:, None] + (Y - ym[:, None]) / ym[:, None]
    out = (Y[None], Tn[None], Tp[None])
    for a in out:
        a.setflags(write=False)
    return out


def dual_min(beta, eps, alpha0, alpha1, g, h, Y, Tn, Tp, sizes=False, multipliers=False):
    """Per element b [B] and slice s: min over mu of max over the slice's two ends k of

        G_k(mu) = alpha0 + alpha1 Y_k + T_k(mu) mu + sum_l |Y_k g_l + h_l - mu beta_l| + |mu| eps,

    T_k(mu) = Tn_k for mu <= 0, Tp_k for mu > 0; then the largest over the slices. beta [B or 1, n];
    alpha0, alpha1 [B]; g, h [B, n]; Y, Tn, Tp [B or 1, S, 2]. Returns the bounds [B], the largest
    absolute sums met [B] and with ``multipliers`` the minimising mu [B, S].

    Each G_k is convex and piecewise linear in mu with breakpoints at x_kl = (Y_k g_l + h_l) / beta_l
    and at 0 (the terms with beta_l = 0 are constant). The minimum of max(G_0, G_1) is at one of
    those breakpoints or where G_0 and G_1 cross, and both are linear between consecutive
    breakpoints. So the breakpoints of both ends and 0 are sorted together, with one far candidate
    on each side (beyond the outermost breakpoints both ends are still linear, with slopes that
    differ by T_1 - T_0, so their crossing lies within (|alpha1| + |g|_1 + |h|_1) |Y_1 - Y_0| /
    |T_1 - T_0| + |x| of them); each G_k at every candidate comes from prefix sums of the weights
    |beta_l| and of |beta_l| x_kl in that order, and a crossing's value is the linear interpolation
    between its two candidates."""
    compiled = native.kernels()
    if compiled is not None:  # the same computation compiled (proofs/certify/arithmetic/dual.c; tests/test_native.py)
        best, size, mu = compiled.dual_min(beta, eps, alpha0, alpha1, g, h, Y, Tn, Tp, multipliers)
        return (best, size, mu) if multipliers else (best, size)
    B, n = alpha1.shape[0], g.shape[1]
    S = Y.shape[1]
    Y, Tn, Tp = (np.broadcast_to(a, (B, S, 2)) for a in (Y, Tn, Tp))
    w = np.broadcast_to(np.abs(beta)[:, None, :], (B, S, n))  # [B, S, n]
    live = w > 0
    safe = np.where(beta != 0, beta, 1.0)[:, None, :]
    xs, consts, Ssum = [], [], []
    for k in (0, 1):
        A = g[:, None, :] * Y[..., k:k + 1] + h[:, None, :]  # [B, S, n]
        x = np.where(live, A / safe, 0.0)
        xs.append(x)
        consts.append(np.where(live, 0.0, np.abs(A)).sum(-1))  # |A_l| where beta_l = 0
        Ssum.append((w * x).sum(-1))
    dY = np.abs(Y[..., 1] - Y[..., 0])
    dT = np.minimum(np.abs(Tn[..., 1] - Tn[..., 0]), np.abs(Tp[..., 1] - Tp[..., 0]))
    ratio = np.where(dT > 0, dY / np.where(dT > 0, dT, 1.0), 1e300)
    reach = 2 * (np.abs(alpha1) + np.abs(g).sum(-1) + np.abs(h).sum(-1))[:, None] * ratio + 1
    both = np.concatenate(xs, axis=-1)
    far = np.minimum(reach + 2 * np.abs(both).max(axis=-1), 1e300)  # [B, S]
    zero = np.zeros((B, S, 1))
    vals = np.concatenate([both, zero, (-far)[..., None], far[..., None]], axis=-1)  # [B, S, 2n + 3]
    z = np.zeros((B, S, n + 3))
    order = np.argsort(vals, axis=-1)
    mu = np.take_along_axis(vals, order, -1)
    W = w.sum(-1)[..., None]
    G, size = [], []
    for k, wk in ((0, np.concatenate([w, np.zeros((B, S, n)), z[..., :3]], -1)),
                  (1, np.concatenate([np.zeros((B, S, n)), w, z[..., :3]], -1))):
        ws = np.take_along_axis(wk, order, -1)
        below_w = np.cumsum(ws, -1)
        below_s = np.cumsum(ws * mu, -1)
        inner = mu * (2 * below_w - W) - 2 * below_s + Ssum[k][..., None] + consts[k][..., None]
        ye = Y[..., k:k + 1]
        T = np.where(mu <= 0, mu * Tn[..., k:k + 1], mu * Tp[..., k:k + 1])
        G.append(alpha0[:, None, None] + alpha1[:, None, None] * ye + T + inner + np.abs(mu) * eps)
        if sizes:
            absA = (np.abs(g[:, None, :] * ye + h[:, None, :])).sum(-1)[..., None]
            size.append(np.abs(alpha0)[:, None, None] + np.abs(alpha1)[:, None, None] * ye + np.abs(T)
                        + np.abs(mu) * (1 + eps + W) + absA)
    top = np.maximum(*G)
    big = np.maximum(*size) if sizes else None
    diff = G[0] - G[1]
    cross = diff[..., :-1] * diff[..., 1:] < 0
    mus = mu
    if cross.any():  # between two candidates both ends are linear in mu: their crossing
        t = np.where(cross, diff[..., :-1] / np.where(cross, diff[..., :-1] - diff[..., 1:], 1), 0)
        mx = mu[..., :-1] + t * (mu[..., 1:] - mu[..., :-1])
        at = G[0][..., :-1] + t * (G[0][..., 1:] - G[0][..., :-1])
        at = np.where(cross, at, np.inf)
        top, mus = np.concatenate([top, at], -1), np.concatenate([mu, mx], -1)
        if sizes:
            big = np.concatenate([big, np.maximum(big[..., :-1], big[..., 1:])], -1)  # sizes are convex in mu
    k = top.argmin(axis=-1)[..., None]
    best = np.take_along_axis(top, k, -1)[..., 0]  # [B, S]
    big = np.take_along_axis(big, k, -1)[..., 0] if sizes else best
    # the dual falling without bound (its least value at a far candidate) means no content reaches
    # the slice's scores: it holds no input, and adds nothing
    empty = np.abs(np.take_along_axis(mus, k, -1)[..., 0]) >= far
    best, big = np.where(empty, -np.inf, best), np.where(empty, 0.0, big)
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


def _cell_bounds(Q: _Query, rows, lam, Da, Db, slices: int, sizes: bool = False):
    """The bound of each cell [Da, Db] (the larger over its two ends) at multiplier ``lam``, for
    rows ``rows`` (all [B]); with ``sizes``, also the largest absolute sums met [B]."""
    Dm = (Da + Db) / 2
    (fa, sa), (fb, sb) = (Q.value(rows, lam, Da, Dm, slices, sizes), Q.value(rows, lam, Db, Dm, slices, sizes))
    return (np.maximum(fa, fb), np.maximum(sa, sb)) if sizes else np.maximum(fa, fb)


def refine_cells(evaluate, D: tuple[float, float], lam_max: float, R: int, cells: int, steps: int, splits: int = 0,
                 stop: float = -np.inf):
    """Cells of the normaliser's range ``D`` with one lambda each, for R independent rows.

    ``evaluate(sel, lam, Da, Db, sizes)`` gives the bounds [B] of the cells [Da, Db] (each the
    larger over its two ends) of rows ``sel`` at multipliers ``lam`` (all [B]), and with ``sizes``
    also the largest absolute sums met [B]. D's range starts cut into ``cells`` equal cells, each with its own lambda (a golden-section
    search over [-lam_max, lam_max]); then, ``splits`` times, every row whose bound is above
    ``stop`` halves its worst cell (PER_ROUND worst cells at a time). The bound loses about in proportion to a cell's width, and a
    row's cell bounds fall off smoothly away from the worst D, so halving only the worst cell
    reaches the tightness of many more equal cells (8 + 24 halvings: about that of 128 equal cells).
    A child's lambda is searched near its parent's (lambda moves little across a cell; any lambda
    gives a valid bound). Returns Da, Db, lam, bound [R, cells + halvings] and the largest size."""

    def choose(sel, Da, Db, lo, hi, st):
        lam = _golden(lambda x: evaluate(sel, x, Da, Db, False), lo, hi, st)
        return (lam, *evaluate(sel, lam, Da, Db, True))

    edges = np.linspace(D[0], D[1], cells + 1)
    Da, Db = np.tile(edges[:-1], (R, 1)), np.tile(edges[1:], (R, 1))  # [R, cells]
    lim = np.full(R * cells, lam_max)
    lam, bound, size = choose(np.repeat(np.arange(R), cells), Da.ravel(), Db.ravel(), -lim, lim, steps)
    lam, bound, size = lam.reshape(R, cells), bound.reshape(R, cells), float(size.max())
    # lambda's rate of change across D, from the equal cells (for the children's search ranges)
    slope = np.abs(np.diff(lam, axis=1)).max(axis=1) / (edges[1] - edges[0]) if cells > 1 else np.full(R, lam_max)
    done = 0
    while done < splits:
        live = np.flatnonzero(bound.max(axis=1) > stop)
        if not len(live):
            break
        w = min(PER_ROUND, splits - done, bound.shape[1])
        done += w
        k = np.argsort(-bound[live], axis=1)[:, :w]  # [live, w]: each live row's worst cells
        rows = np.repeat(live, w)
        a, b, parent = Da[live[:, None], k].ravel(), Db[live[:, None], k].ravel(), lam[live[:, None], k].ravel()
        mid = (a + b) / 2
        reach = np.concatenate([2 * slope[rows] * (b - a)] * 2) + 1e-12
        both = np.concatenate([parent, parent])
        lam2, bound2, size2 = choose(np.concatenate([rows, rows]), np.concatenate([a, mid]), np.concatenate([mid, b]),
                                     both - reach, both + reach, steps // 2)
        size = max(size, float(size2.max()))
        n = len(rows)
        extra = [np.full((R, w), v) for v in (D[0], D[0], 0.0, -np.inf)]  # the right halves' columns
        Da, Db, lam, bound = (np.concatenate([x, e], axis=1) for x, e in zip((Da, Db, lam, bound), extra))
        new = bound.shape[1] - w + np.tile(np.arange(w), len(live))
        rr, kk = rows, k.ravel()
        Db[rr, kk], lam[rr, kk], bound[rr, kk] = mid, lam2[:n], bound2[:n]
        Da[rr, new], Db[rr, new], lam[rr, new], bound[rr, new] = mid, b, lam2[n:], bound2[n:]
    return Da, Db, lam, bound, size


def _row_bounds(Q: _Query, rows: np.ndarray, cells: int, slices: int, steps: int, splits: int = 0,
                stop: float = -np.inf) -> tuple[np.ndarray, float]:
    """Each row's bound (its worst cell, ``refine_cells``) and the largest absolute sum met."""
    *_, bound, size = refine_cells(lambda sel, lam, Da, Db, sizes: _cell_bounds(Q, rows[sel], lam, Da, Db, slices, sizes),
                                   Q.D, Q.lam_max, len(rows), cells, steps, splits, stop)
    return bound.max(axis=1), size


def slices_for(U: float) -> int:
    """Slices of a key's score range [-U, U]: SLICE_WIDTH wide, at least MIN_SLICES."""
    return int(np.clip(np.ceil(2 * U / SLICE_WIDTH), MIN_SLICES, MAX_SLICES))


def fixed_query_bound(h: heads.Head, j: int, q, cells: int = CELLS, splits: int = SPLITS, slices: int | None = None,
                      steps: int = GOLDEN_STEPS) -> dict[str, Any]:
    """Certified bound on the max-abs error at trigger query ``j`` over every input whose trigger
    content is ``q`` (softmax head); which coordinate and sign attain it.

    Every (coordinate, sign) row first gets a coarse bound (``cells`` equal cells of D); rows are
    then refined (``splits`` halvings of their worst cell, ``_row_bounds``) in order of their coarse
    bound until no unrefined row's coarse bound exceeds the largest refined one. A row's figure is
    the smaller of its two bounds (both are valid)."""
    if h.kind != "softmax":
        raise ValueError(f"the fixed-query bound is for softmax heads, not {h.kind}")
    q = np.asarray(q, dtype=float)
    Q = _Query(h, j, q)
    slices = slices or slices_for(Q.U)
    every = np.arange(len(Q.r))
    bound, size = _row_bounds(Q, every, cells, slices, steps)
    refined = np.zeros(len(every), dtype=bool)
    while True:
        top = bound[refined].max() if refined.any() else -np.inf
        todo = every[~refined & (bound > top)]
        if not len(todo):
            break
        todo = todo[np.argsort(-bound[todo])][:4]
        fine, s = _row_bounds(Q, todo, cells, slices, steps, splits)
        bound[todo], refined[todo], size = np.minimum(bound[todo], fine), True, max(size, s)
    k = int(bound.argmax())
    dual = float(bound[k]) + _allowance(size, h.n, j)
    box = error.trigger_bound_box(h, j, q, q)  # the independent relaxation at the same query, also valid
    return {"bound": min(dual, box), "dual": dual, "box": box, "coordinate": int(Q.r[k]), "sign": int(Q.s[k]),
            "trigger": j, "content": [float(v) for v in q], "cells": cells, "splits": splits, "slices": slices,
            "score_range": Q.U, "rows_refined": int(refined.sum())}


def at_witness(h: heads.Head, eta: dict[str, Any]) -> dict[str, Any] | None:
    """The fixed-query bound over every input that shares eta_lo's witness's trigger position and
    trigger content, with bound / eta_lo as ``ratio``; None when the head is not softmax or the
    witness sits at a non-trigger query (``eta`` is ``error.eta_upper`` + ``eta_lower``'s dict)."""
    if h.kind != "softmax" or eta.get("case") != "trigger":
        return None
    j = eta["trigger"]
    out = fixed_query_bound(h, j, eta["contents"][j - 1])  # contents[k] is position k + 1's
    out["ratio"] = out["bound"] / eta["eta_lo"] if eta["eta_lo"] > 0 else None
    return out
