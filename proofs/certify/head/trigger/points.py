"""The grid of trigger contents at one trigger position and a fixed-query bound at each of its
points (``vertices`` drives them).

``Position`` holds what one trigger position j shares across rows (the content-content block
N = M[C, C], the ranges of the score spread U and of the normaliser D over the whole content box,
the BOS and own-key exponents); ``Row`` one (coordinate r, sign s) row of the error: its grid
(every vertex of the content box, a coordinate along which the error bends much on more levels:
``pieces``) and, per point q, bounds from ``dual``'s identity

    s E <= max over the cell's ends of  P(q) + lambda D + (j - 1) (K(beta(q)) - s t_f / j),

valid for every lambda and every multiplier mu of the one-key maximum K, in rising precision:

- ``Row.screen``: lambda per cell and mu per (cell end, cell, slice) fitted at one point
  (``Row.fit``) and reused at every point at once (each slice end's term is then an l1 norm of an
  affine function of beta(q)); with ``steps``, lambda searched per (cell, point) within
  LAMBDA_REACH and mu moved with it;
- ``Row.own_bounds``: the point's own bound (``dual.refine_cells``);
- ``Row.single_key``: with one content key (j = 2) the key's score fixes D, and every point is
  bounded exactly but for SINGLE_SLICES slices, without cells.

Cells are of X, the content keys' mean weight (D = W + (j - 1) X with W the BOS and own weights at
the point), so one set of cells serves every point. Float64 with ``dual``'s rounding
allowance; weights at the points are enclosed from the exact-coefficient exponents (their slack
included). Softmax only; n = d - 3 at most ``MAX_N`` (2^n points). The inner loops run compiled
where they can (``native``).
"""

from __future__ import annotations

import numpy as np

from constructions import task

from .. import error
from ...arithmetic import heads, native
from . import dual as td, grid

MAX_N = 16  # 2^n points per row: refused above this
LAMBDA_REACH = 0.05  # a point's own lambda per cell is searched this far from the reference's
PIECES = (1, 2, 4, 8)  # pieces of a content coordinate: the fewest whose midpoint remainder is small,
REMAINDER = 0.02  # ... kappa w^2 / 4 at most this fraction of the row's scale (the target),
MAX_POINTS = 2 ** 17  # ... while the grid's points number at most this (larger kappa first)
EXP_MARGIN = 1e-12  # relative allowance on numpy's exp (branch.PRUNE_MARGIN's convention)
SINGLE_SLICES = 2  # slices of z (and one more edge at 1/2) in the one-key bound (j = 2)


class Position:
    """Everything at trigger position j that does not depend on the row: the content-content block,
    the ranges of the score spread U and of the normaliser D over the whole content box, the
    exponents of the BOS and own-key weights, and the fixed-query pieces per point."""

    def __init__(self, h: heads.Head, j: int, ranges: dict | None = None):
        if h.kind != "softmax":
            raise ValueError(f"the vertex bound is for softmax heads, not {h.kind}")
        if h.n > MAX_N:
            raise ValueError(f"the vertex bound enumerates 2^n trigger contents; n = {h.n} is above {MAX_N}")
        d, n, u = h.d, h.n, heads.UNIT_ROUNDOFF
        self.h, self.j, self.n, self.m = h, j, n, j - 1
        C = list(range(task.CONTENT_START, d - 1))
        self.C, self.N, self.b = C, h.M[np.ix_(C, C)], h.M[task.TRIGGER_FLAG, C]
        spread = np.abs(self.b) + np.abs(self.N).sum(axis=0)  # |beta_i(q)| <= spread_i on the box
        self.eps = float(4 * (n + 3) * u * spread.sum())  # M's rounding and beta's formation, per point
        vertices = grid_points([np.array([-1.0, 1.0])] * n)
        # ||beta(q)||_1 is convex in q: its maximum over the box is at a vertex
        self.U = float(np.abs(self.b + vertices @ self.N).sum(axis=1).max() * (1 + 4 * n * u) + self.eps)
        ex = error._trigger_exponents(h)
        self.E0, self.Eo = ex["bos"][0], ex["own"][0]
        self.ranges = ranges or error.whole_box_ranges(h)  # the exponents' ranges over the whole box (a search)
        self.w_box = error.raw_weights(h, -np.ones(n), np.ones(n), self.ranges)
        self.key_lo = max(self.w_box["content"][0], np.exp(-self.U) * (1 - EXP_MARGIN))  # a content key's weight
        self.key_hi = min(self.w_box["content"][1], np.exp(self.U) * (1 + EXP_MARGIN))
        self.D = ((self.w_box["bos"][0] + self.w_box["own"][0] + self.m * self.key_lo) * (1 - 1e-12),
                  (self.w_box["bos"][1] + self.w_box["own"][1] + self.m * self.key_hi) * (1 + 1e-12))
        self.slices = td.slices_for(self.U)
        self.lam_max = 2 * (np.abs(h.V).sum(axis=1).max() + 1) / self.D[0]
        self._queries: dict[tuple, td._Query] = {}

    def query(self, q: np.ndarray) -> td._Query:
        """The fixed-query pieces at trigger content q (cached: rows share a point's pieces)."""
        key = tuple(float(v) for v in q)
        if key not in self._queries:
            self._queries[key] = td._Query(self.h, self.j, np.asarray(q, dtype=float))
        return self._queries[key]

    def weights(self, pts: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Enclosures [w-, w+] of the BOS and own-key weights at each point (relative to the content
        keys' common score, as in ``error.raw_weights``)."""
        out = {}
        for name, E in (("bos", self.E0), ("own", self.Eo)):  # E(q) = a + p . q + q^T S q, within its slack
            value = E.a + pts @ E.p + ((pts @ E.S) * pts).sum(axis=1)
            out[name] = (np.exp(value - E.slack()) * (1 - EXP_MARGIN), np.exp(value + E.slack()) * (1 + EXP_MARGIN))
        return out


def grid_points(levels: list[np.ndarray]) -> np.ndarray:
    """Every combination of the coordinates' levels [points, n], the last coordinate fastest (the
    order of ``itertools.product(*levels)``, built without a Python tuple per point)."""
    return np.stack(np.meshgrid(*levels, indexing="ij"), axis=-1).reshape(-1, len(levels))


def pieces(kappa: np.ndarray, scale: float) -> list[int]:
    """Per content coordinate, the fewest of PIECES whose midpoint remainder kappa_i (2 / p)^2 / 4 is
    at most REMAINDER * scale, taken in order of kappa (largest first) while the grid's points
    (prod (p_i + 1)) number at most MAX_POINTS."""
    out = [PIECES[0]] * len(kappa)
    for i in np.argsort(-kappa):
        want = next((p for p in PIECES if kappa[i] * (2 / p) ** 2 / 4 <= REMAINDER * scale), PIECES[-1])
        while want > out[i] and np.prod([p + 1 for p in out]) / (out[i] + 1) * (want + 1) > MAX_POINTS:
            want = PIECES[PIECES.index(want) - 1]
        out[i] = want
    return out


class Row:
    """One (coordinate r, sign s) row of the error at one trigger position: its value and target
    constants, its curvature bounds (``grid.curvature``) and its grid of points (every
    vertex; a coordinate where the error bends most cut into the fewest of PIECES whose midpoint
    remainder is at most REMAINDER of ``scale``)."""

    def __init__(self, P: Position, r: int, s: int, scale: float):
        h, d = P.h, P.h.d
        self.P, self.r, self.s, self.j, self.m = P, r, float(s), P.j, P.m
        V, er = h.V, np.eye(d)[r]
        self.v0, self.v1, self.vf, self.vC = V[r, task.BOS_FLAG], V[r, task.TRIGGER_FLAG], V[r, task.content_flag(d)], V[r, P.C]
        self.t1, self.tf, self.tC = er[task.TRIGGER_FLAG], er[task.content_flag(d)], er[P.C]
        self.k = r - task.CONTENT_START if r in P.C else None  # the row's own content coordinate
        self.kappa = grid.curvature(P, self)
        self._grid([np.linspace(-1.0, 1.0, p + 1) for p in pieces(self.kappa, scale)])

    def _grid(self, levels: list[np.ndarray]) -> None:
        """The points (every combination of the coordinates' levels) and their pieces."""
        P = self.P
        self.levels = levels
        self.shape = [len(lv) for lv in levels]
        self.widths = np.array([lv[1] - lv[0] for lv in levels])
        self.pts = grid_points(levels)  # [points, n], the last coordinate fastest
        self.beta = P.b + self.pts @ P.N  # [points, n]: beta(q) = b + N^T q
        self.betaT = np.ascontiguousarray(self.beta.T)  # [n, points]
        self.w = P.weights(self.pts)
        self.W = (self.w["bos"][0] + self.w["own"][0], self.w["bos"][1] + self.w["own"][1])  # BOS + own weights
        self.vo, self.to = self.v1 + self.pts @ self.vC, self.t1 + self.pts @ self.tC  # own value, own target

    def halve(self, axis: int) -> np.ndarray:
        """Halve every piece of coordinate ``axis`` (its midpoints become levels); the old points'
        indices among the new."""
        old = np.unravel_index(np.arange(len(self.pts)), self.shape)
        lv = self.levels[axis]
        self._grid(self.levels[:axis] + [np.sort(np.concatenate([lv, (lv[:-1] + lv[1:]) / 2]))] + self.levels[axis + 1:])
        return np.ravel_multi_index(tuple(2 * o if a == axis else o for a, o in enumerate(old)), self.shape)

    def _ends(self, L, Xa, Xb, idx):
        """Per cell end: rho and lambda D (its tangent in rho where lambda < 0), at the points ``idx``
        with multipliers L on cells [Xa, Xb] (all broadcast together: [cells, points] for a grid of
        cells and points, [B] for a batch). Cells are of X, the content keys' mean weight: at a point
        whose BOS and own weights sum to W in [W-, W+] the cell [Xa, Xb] is the cell
        [W- + m Xa, W+ + m Xb] of D, so one set of cells serves every point's own range of D."""
        Da, Db = self.W[0][idx] + self.m * Xa, self.W[1][idx] + self.m * Xb
        rm = 2 / (Da + Db)
        for D in (Da, Db):
            rho = 1 / D
            yield rho, np.where(L >= 0, L / rho, L / rm - L * (rho - rm) / rm ** 2)

    def _base(self, L, rho, Lt, idx) -> np.ndarray:
        """P(q) + Lt - (j - 1) s t_f / j (BOS and own terms, lambda D, the keys' flag target)."""
        s, j = self.s, self.j
        a0 = s * self.v0 * rho - L
        bos = np.maximum(a0 * self.w["bos"][0][idx], a0 * self.w["bos"][1][idx])
        ao = s * rho * self.vo[idx] - L
        own = np.maximum(ao * self.w["own"][0][idx], ao * self.w["own"][1][idx])
        return bos + own - s * self.to[idx] / j + Lt - self.m * s * self.tf / j

    def exact(self, idx, L, Xa, Xb, sizes: bool = False, multipliers: bool = False):
        """A batch of bounds [B]: point idx[b], cell [Xa[b], Xb[b]], lambda L[b], the exact minimum
        over mu (``dual._key_bound``); with ``sizes`` also the largest absolute sums met [B],
        with ``multipliers`` also the minimising mu [2, B, slices]."""
        P, s = self.P, self.s
        out, size, mus = np.full(len(L), -np.inf), np.zeros(len(L)), []
        beta = self.betaT[:, idx].T  # [B, n]
        for rho, Lt in self._ends(L, Xa, Xb, idx):
            g = (s * rho)[:, None] * self.vC
            K, big, *mu = td._key_bound(beta, P.eps, P.U, s * rho * self.vf - L, g,
                                        np.broadcast_to(-(s / self.j) * self.tC, g.shape), P.slices, True, multipliers)
            mus += mu
            out = np.maximum(out, self._base(L, rho, Lt, idx) + self.m * K)
            size = np.maximum(size, self.m * (big + 1) + np.abs(L) / rho * 3)
        size = size + self._own_size(np.abs(L))
        return (out, size, np.array(mus)) if multipliers else ((out, size) if sizes else out)

    def own_bounds(self, idx: np.ndarray, splits: int, stop: float = -np.inf):
        """Each point's own bound (``dual.refine_cells`` over X with the exact minimum over
        mu: ``dual.CELLS`` equal cells, then ``splits`` halvings of each point's worst cell,
        none once it is at or below ``stop``), rounding allowance included; and the cells (Xa, Xb,
        lambda, each [points, cells])."""
        idx = np.asarray(idx)

        def evaluate(sel, L, Xa, Xb, sizes):
            return self.exact(idx[sel], L, Xa, Xb, sizes)

        allowance = td._allowance(0.0, self.P.n, self.j)
        Xa, Xb, lam, bound, size = td.refine_cells(evaluate, (self.P.key_lo, self.P.key_hi), self.P.lam_max, len(idx),
                                                   td.CELLS, td.GOLDEN_STEPS, splits, stop - allowance)
        return bound.max(axis=1) + td._allowance(size, self.P.n, self.j), (Xa, Xb, lam)

    def fit(self, p: int, splits: int) -> tuple:
        """Multipliers fitted at point p: its cells of X and lambdas (``own_bounds``) and the
        minimising mu [2, cells, slices]; and p's own bound. For ``screen``."""
        bound, (Xa, Xb, lam) = self.own_bounds(np.array([p]), splits)
        Xa, Xb, lam = Xa[0], Xb[0], lam[0]
        mu = self.exact(np.full(len(lam), p), lam, Xa, Xb, multipliers=True)[2]
        return (p, lam, Xa, Xb, mu), float(bound[0])

    def _cells(self, idx: np.ndarray, L: np.ndarray, Xa, Xb, mu, moved=None) -> tuple[np.ndarray, float]:
        """Per (cell, point) bounds at the points ``idx`` with lambda L [cells, points] and mu fixed
        ([2, cells, slices]; with ``moved`` [cells], each slice's mu moved by y (L - moved), see
        ``screen``), before the rounding allowance, and the largest absolute sum met: each slice
        end's term is an l1 norm of an affine function of beta(q), summed coordinate by coordinate
        over every (cell, point) at once."""
        P, m, s = self.P, self.m, self.s
        lam_abs = np.abs(L).max(axis=1)
        compiled = native.kernels()
        if compiled is not None and (mu.ndim == 3 or moved is not None):  # dual.c's screen_cells: the same sums
            arrays = {"Wlo": self.W[0][idx], "Whi": self.W[1][idx], "w0lo": self.w["bos"][0][idx],
                      "w0hi": self.w["bos"][1][idx], "wolo": self.w["own"][0][idx], "wohi": self.w["own"][1][idx],
                      "vo": self.vo[idx], "to": self.to[idx], "betaT": self.betaT[:, idx], "vC": self.vC,
                      "hh": -(s / self.j) * self.tC}
            rowc = np.array([m, s, self.j, self.v0, self.vf, self.tf, P.eps, P.U])
            out, size = compiled.screen_cells(Xa, Xb, L, mu, moved, arrays, rowc, P.U, P.slices)
            return out, size + float(self._own_size(lam_abs).max())
        if moved is not None:
            edges = np.linspace(-P.U, P.U, P.slices + 1)
            ym = (np.exp(edges[:-1]) + np.exp(edges[1:])) / 2
            mu = mu[..., None] + ym[None, None, :, None] * (L - moved[:, None])[None, :, None, :]
        edges = np.linspace(-P.U, P.U, P.slices + 1)
        y = np.exp(edges)
        ym = (y[:-1] + y[1:]) / 2
        betaT, hh = self.betaT[:, idx], -(s / self.j) * self.tC
        best, size, tmp = np.full(L.shape, -np.inf), 0.0, np.empty(L.shape)
        for e, (rho, Lt) in enumerate(self._ends(L, Xa[:, None], Xb[:, None], idx[None])):
            alpha, r_max = s * self.vf * rho - L, float(rho.max())
            K = np.full(tmp.shape, -np.inf)
            for sl in range(P.slices):
                mu_c = mu[e, :, sl]
                mu_c = mu_c if mu_c.ndim == 2 else mu_c[:, None]  # [cells, points] or [cells, 1]
                for end in (0, 1):
                    ye, le = y[sl + end], edges[sl + end]
                    T = np.where(mu_c <= 0, mu_c * le, mu_c * (np.log(ym[sl]) + (ye - ym[sl]) / ym[sl]))
                    acc = alpha * ye + T + np.abs(mu_c) * P.eps
                    for col in range(P.n):  # |rho s V[r, C_col] y + h_col - mu beta_col(q)|
                        np.multiply(rho, s * self.vC[col] * ye, out=tmp)
                        tmp += hh[col]
                        tmp -= mu_c * betaT[col]
                        acc += np.abs(tmp, out=tmp)
                    np.maximum(K, acc, out=K)
                    big = (np.abs(self.vf) * r_max + lam_abs) * ye + np.abs(T).max(axis=1) \
                        + np.abs(mu_c).max(axis=1) * (1 + P.eps + P.U) + np.abs(self.vC).sum() * r_max * ye + np.abs(hh).sum()
                    size = max(size, float((m * (big + 1) + lam_abs / r_max * 3).max()))
            np.maximum(best, self._base(L, rho, Lt, idx[None]) + m * K, out=best)
        return best, size + float(self._own_size(lam_abs).max())

    def screen(self, idx: np.ndarray, fitted: tuple, steps: int = 0) -> np.ndarray:
        """Bounds at the points ``idx`` with multipliers fitted at another point (``fit``): as they
        are (``steps`` = 0), or with lambda searched per (cell, point) by ``steps`` golden-section
        steps within LAMBDA_REACH of the fitted one and each slice's mu moved with it (mu tracks
        e^u times the key's bracket, which holds -lambda: mu + y (lambda' - lambda)). Any lambda and
        mu are valid; one cell's bound is convex in its lambda."""
        p, lam, Xa, Xb, mu = fitted
        L = np.repeat(lam[:, None], len(idx), axis=1)
        moved = lam if steps else None
        if steps:
            L = td._golden(lambda x: self._cells(idx, x, Xa, Xb, mu, moved)[0], L - LAMBDA_REACH, L + LAMBDA_REACH, steps)
        cells, size = self._cells(idx, L, Xa, Xb, mu, moved)
        return cells.max(axis=0) + td._allowance(size, self.P.n, self.j)

    def single_key(self, idx: np.ndarray) -> np.ndarray:
        """Bounds at the points ``idx`` when the trigger sees one content key (j = 2): exact but for the
        slices, no cells and no multiplier on D (which the one key's score fixes).

        With W = w_0 + w_o and A = w_0 y_0 + w_o y_o (BOS and own, at the middle of their
        enclosures; the error moves by at most (largest |y_a - y_b|) / D times their widths within
        them) and z = e^u / (W + e^u), s E = (1 - z) A / W + z y(c) - t_o - t(c): for fixed z linear
        in the key's content c, with u = log W + log z - log(1 - z) = beta(q) . c. Over a slice of z
        the dual with one mu (``dual.dual_min``, alpha0 + alpha1 z + mu u(z) +
        sum_l |z g_l + h_l - mu beta_l|) is convex in z where mu u(z) is (mu >= 0 where z >= 1/2,
        mu <= 0 where z <= 1/2) and otherwise bounded by its tangent, so its largest value is at the
        slice's ends; 1/2 is a slice edge where it lies in z's range."""
        P, s, j, n = self.P, self.s, self.j, self.P.n
        U = np.abs(self.beta[idx]).sum(axis=1) * (1 + 4 * n * heads.UNIT_ROUNDOFF) + P.eps  # the key's score range
        w0, wo = ((self.w[k][0][idx] + self.w[k][1][idx]) / 2 for k in ("bos", "own"))
        W, A = w0 + wo, w0 * s * self.v0 + wo * s * self.vo[idx]
        lo, hi = np.exp(-U) / (W + np.exp(-U)), np.exp(U) / (W + np.exp(U))
        inside = (lo < 0.5) & (0.5 < hi)  # 1/2 an edge where it lies inside, else one more equal slice
        edges = np.where(inside[:, None], np.sort(np.concatenate(
            [np.linspace(lo, hi, SINGLE_SLICES + 1, axis=1), np.full((len(idx), 1), 0.5)], axis=1), axis=1),
            np.linspace(lo, hi, SINGLE_SLICES + 2, axis=1))  # [points, S + 2]
        Y = np.stack([edges[:, :-1], edges[:, 1:]], axis=-1)  # [points, S + 1, 2]
        logW = np.log(W)[:, None, None]
        exact = logW + np.log(Y) - np.log1p(-Y)
        zm = Y.mean(axis=-1, keepdims=True)
        tangent = logW + np.log(zm) - np.log1p(-zm) + (Y - zm) / (zm * (1 - zm))
        concave = Y[..., 1:] <= 0.5  # the slice lies where log z - log(1 - z) is concave
        Tn, Tp = np.where(concave, exact, tangent), np.where(concave, tangent, exact)
        g = np.broadcast_to(s * self.vC, (len(idx), n))
        hh = np.broadcast_to(-(s / j) * self.tC, (len(idx), n))
        best, big = td.dual_min(self.beta[idx], P.eps, A / W - s * self.to[idx] / j - s * self.tf / j,
                                s * self.vf - A / W, g, hh, Y, Tn, Tp, True)
        spread = 2 * (np.abs(self.v0) + np.abs(self.v1) + np.abs(self.vf) + 2 * np.abs(self.vC).sum())  # |y_a - y_b|
        widths = sum(self.w[k][1][idx] - self.w[k][0][idx] for k in ("bos", "own"))
        return best + spread * widths / (W - widths + np.exp(-U)) + td._allowance(float(big.max()), n, j)

    def _own_size(self, lam_abs) -> np.ndarray:
        w0, wo = self.w["bos"][1].max(), self.w["own"][1].max()
        rho = 1 / self.P.D[0]
        vo = abs(self.v1) + np.abs(self.vC).sum()
        return w0 * (abs(self.v0) * rho + lam_abs) + wo * (vo * rho + lam_abs) + 2
