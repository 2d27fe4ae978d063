"""A bound at one trigger position over EVERY trigger content, each key's weight tied to its own
content (issue 17, item 2): the fixed-query bound of ``trigger_dual`` made to cover the content
box by convexity in the trigger content q.

Fix a row (coordinate r, sign s) of the error, a cell [D_a, D_b] of the normaliser and ONE
multiplier lambda for that (row, cell), the same for every q. ``trigger_dual``'s identity gives,
for every input with trigger content q and D in the cell,

    s E <= max over rho in {1/D_a, 1/D_b} of  Phi(q) = P(q) + Lt + (j - 1) (K*(beta(q)) - s t_f / j),

with P(q) = w_0(q) (s v_0 rho - lambda) + w_o(q) (s v_o(q) rho - lambda) - s t_o(q) / j (BOS and
the trigger's own key), K*(beta) = max over c in [-1, 1]^n of e^{beta.c} (alpha + g.c) + h.c
(one content key: every key's bracket is at most this) and beta(q) = b + N^T q, N = M[C, C].

K* is a maximum over c of functions whose second derivative in q_i is (N c)_i^2 e^{beta.c}
(alpha + g.c): convex in q up to kappa_i = (sum_l |N_il|)^2 e^U max(0, ||g||_1 - alpha), tiny on
trained heads (their M[C, C] entries are 1e-5 - 5e-5). P's second derivatives are bounded on the
box by interval arithmetic (the own key's e^{E_o(q)} times its own value, affine in q, is the large
one, along the row's own content coordinate). A function whose second derivative along every coordinate is at least
-kappa_i on a box is at most its largest vertex value plus sum_i kappa_i w_i^2 / 8 (along one
coordinate f + kappa (t - a)(t - b) / 2 is convex; iterate over the coordinates). So

    max over the box of Phi  <=  max over its vertices of Phi  +  sum_i kappa_i w_i^2 / 8,

and at each vertex Phi is bounded by ``trigger_dual``'s key bound (any Lagrange multiplier mu is
valid there, so mu may differ from vertex to vertex; lambda may not: a minimum over lambda of
convex functions is not convex). The row's own content coordinate is cut into ``GRID`` pieces
(its kappa is the large one), so each row enumerates 2^(n-1) (GRID + 1) points; every other
coordinate sits at +-1. n = d - 3 must be small (2^n points): this is for d <= 19.

lambda per (row, cell) is chosen by a golden-section search that minimises the largest bound
over an *active set* of points: first the start content alone (the witness search's best input
at that position), then, for ``ROUNDS`` rounds, with the ``ACTIVE`` points whose bounds are
largest added (every choice of lambda is valid; the figure is the evaluation after the last). At every point the key bound is first evaluated with mu fixed
at its best value at the start content (an l1 norm of an affine function of q, vectorised over
all points), and recomputed with the exact minimum over mu where that exceeds the largest bound
so far. Float64, with ``trigger_dual``'s rounding allowance; weights at the points are enclosed
from the exact-coefficient exponents (``branch.exponent_upper``, its slack included).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from constructions import task

from . import branch, error, heads, trigger_dual as td

GRID = 4  # pieces of each row's own content coordinate (where P's curvature lives)
ACTIVE = 8  # points added to the minimax set of lambda per round
ROUNDS = 2  # rounds of re-choosing lambda over the growing active set
STEPS = 16  # golden-section steps per later choice of lambda (the first takes trigger_dual.GOLDEN_STEPS)
MAX_N = 16  # 2^n points per row: refused above this
EXP_MARGIN = 1e-12  # relative allowance on numpy's exp (branch.PRUNE_MARGIN's convention)


class _Position:
    """Everything at trigger position j that does not depend on the row: the content-content block,
    the ranges of the score spread U and of the normaliser D over the whole content box, and the
    exponents of the BOS and own-key weights."""

    def __init__(self, h: heads.Head, j: int):
        if h.kind != "softmax":
            raise ValueError(f"the vertex bound is for softmax heads, not {h.kind}")
        if h.n > MAX_N:
            raise ValueError(f"the vertex bound enumerates 2^n trigger contents; n = {h.n} is above {MAX_N}")
        d, n, u = h.d, h.n, heads.UNIT_ROUNDOFF
        self.h, self.j, self.n = h, j, n
        C = list(range(task.CONTENT_START, d - 1))
        self.C, self.N, self.b = C, h.M[np.ix_(C, C)], h.M[task.TRIGGER_FLAG, C]
        spread = np.abs(self.b) + np.abs(self.N).sum(axis=0)  # |beta_i(q)| <= spread_i on the box
        self.eps = float(4 * (n +3) * u * spread.sum())  # M's rounding and beta's formation, per point
        vertices = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
        # ||beta(q)||_1 is convex in q: its maximum over the box is at a vertex
        self.U = float(np.abs(self.b + vertices @ self.N).sum(axis=1).max() * (1 + 4 * n * u) + self.eps)
        ex = error._trigger_exponents(h)
        self.E0, self.Eo = ex["bos"][0], ex["own"][0]
        self.ranges = error.whole_box_ranges(h)  # the exponents' ranges over the whole box (a search)
        whole = error.raw_weights(h, -np.ones(n), np.ones(n), self.ranges)
        c_lo = max(whole["content"][0], np.exp(-self.U) * (1 - EXP_MARGIN))
        c_hi = min(whole["content"][1], np.exp(self.U) * (1 + EXP_MARGIN))
        self.D = ((whole["bos"][0] + whole["own"][0] + (j - 1) * c_lo) * (1 - 1e-12),
                  (whole["bos"][1] + whole["own"][1] + (j - 1) * c_hi) * (1 + 1e-12))
        self.w_box = whole
        self.slices = int(np.clip(np.ceil(2 * self.U / td.SLICE_WIDTH), 4, td.MAX_SLICES))

    def points(self, k: int | None) -> np.ndarray:
        """The vertices of the content box with coordinate k (None: none) on GRID + 1 levels: [P, n]."""
        levels = [np.array([-1.0, 1.0])] * self.n
        if k is not None:
            levels[k] = np.linspace(-1.0, 1.0, GRID + 1)
        return np.array(list(itertools.product(*levels)))

    def weights(self, pts: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Enclosures [w-, w+] of the BOS and own-key weights at each point (relative to the content
        keys' common score, as in ``error.raw_weights``)."""
        out = {}
        for name, E in (("bos", self.E0), ("own", self.Eo)):
            hi = branch.exponent_upper(E, pts, pts).ub
            lo = branch.exponent_lower(E, pts, pts).ub
            out[name] = (np.exp(lo) * (1 - EXP_MARGIN), np.exp(hi) * (1 + EXP_MARGIN))
        return out


class _Row:
    """One (coordinate r, sign s) row of the error at one trigger position: its value constants,
    its points (the vertices, its own content coordinate on a grid) and its cells of D."""

    def __init__(self, P: _Position, r: int, s: int, cells: int):
        h, d = P.h, P.h.d
        self.P, self.r, self.s, self.j = P, r, float(s), P.j
        V, er = h.V, np.eye(d)[r]
        self.v0, self.v1, self.vf, self.vC = V[r, task.BOS_FLAG], V[r, task.TRIGGER_FLAG], V[r, task.content_flag(d)], V[r, P.C]
        self.t1, self.tf, self.tC = er[task.TRIGGER_FLAG], er[task.content_flag(d)], er[P.C]
        self.k = r - task.CONTENT_START if r in P.C else None  # the row's own content coordinate
        edges = np.linspace(P.D[0], P.D[1], cells + 1)
        self.ends = (edges[:-1], edges[1:])
        self.Dm = (edges[:-1] + edges[1:]) / 2
        self.pts = P.points(self.k)
        self.beta = P.b + self.pts @ P.N  # [points, n]: beta(q) = b + N^T q
        self.w = P.weights(self.pts)

    def pieces(self, lam: np.ndarray, D: np.ndarray):
        """rho, the key bound's alpha [cells], g [cells, n], h [cells, n], and Lt [cells] (lambda D, its
        tangent in rho where lambda < 0) at the cell end D."""
        s, j, rho, rm = self.s, self.j, 1 / D, 1 / self.Dm
        g = (s * rho)[:, None] * self.vC
        hh = np.broadcast_to(-(s / j) * self.tC, g.shape)
        Lt = np.where(lam >= 0, lam / rho, lam / rm - lam * (rho - rm) / rm ** 2)
        return rho, s * rho * self.vf - lam, g, hh, Lt

    def own(self, lam: np.ndarray, rho: np.ndarray, idx) -> np.ndarray:
        """P(q) (BOS and the own key) at the points ``idx``, per cell: [cells, len(idx)]."""
        s, q = self.s, self.pts[idx]
        vo, to = self.v1 + q @ self.vC, self.t1 + q @ self.tC
        bos = np.maximum(*(w[idx][None] * (s * self.v0 * rho - lam)[:, None] for w in self.w["bos"]))
        own = np.maximum(*(w[idx][None] * (s * vo[None] * rho[:, None] - lam[:, None]) for w in self.w["own"]))
        return bos + own - s * to[None] / self.j

    def exact(self, lam: np.ndarray, idx) -> tuple[np.ndarray, float]:
        """Phi's bound at the points ``idx`` with the exact minimum over mu, the larger over the two
        ends of each cell: [cells, len(idx)]; and the largest absolute sum met."""
        out, size = np.full((len(lam), len(idx)), -np.inf), 0.0
        for D in self.ends:
            rho, alpha, g, hh, Lt = self.pieces(lam, D)
            own = self.own(lam, rho, idx)
            for col, p in enumerate(idx):
                K, big = td._key_bound(self.beta[p], self.P.eps, self.P.U, alpha, g, hh, self.P.slices, sizes=True)
                out[:, col] = np.maximum(out[:, col], own[:, col] + Lt + (self.j - 1) * (K - self.s * self.tf / self.j))
                size = max(size, float(((self.j - 1) * (big + 1) + np.abs(lam) / rho * 3).max()))
        return out, size + self._own_size(lam)

    def _own_size(self, lam: np.ndarray) -> float:
        w0, wo = self.w["bos"][1].max(), self.w["own"][1].max()
        rho = 1 / self.ends[0]
        vo = abs(self.v1) + np.abs(self.vC).sum()
        return float((w0 * (abs(self.v0) * rho + np.abs(lam)) + wo * (vo * rho + np.abs(lam))).max() + 2)

    def fixed(self, lam: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, float]:
        """Phi's bound at EVERY point with mu [2, cells, slices] fixed: each slice end's term is then
        an l1 norm of an affine function of beta(q), evaluated for all points at once:
        [cells, points]; and the largest absolute sum met."""
        P, j, s = self.P, self.j, self.s
        edges = np.linspace(-P.U, P.U, P.slices + 1)
        y = np.exp(edges)
        ym = (y[:-1] + y[1:]) / 2
        out, size = np.full((len(lam), len(self.pts)), -np.inf), 0.0
        every = np.arange(len(self.pts))
        for e, D in enumerate(self.ends):
            rho, alpha, g, hh, Lt = self.pieces(lam, D)
            base = self.own(lam, rho, every) + Lt[:, None] - (j - 1) * s * self.tf / j
            K = np.full(out.shape, -np.inf)
            for sl in range(P.slices):
                m = mu[e, :, sl]  # [cells]
                for k in (0, 1):
                    ye, le = y[sl + k], edges[sl + k]
                    T = np.where(m <= 0, m * le, m * (np.log(ym[sl]) + (ye - ym[sl]) / ym[sl]))
                    A = g * ye + hh  # [cells, n]
                    inner = np.abs(A[:, None, :] - m[:, None, None] * self.beta[None]).sum(-1)  # [cells, points]
                    K = np.maximum(K, (alpha * ye + T + np.abs(m) * P.eps)[:, None] + inner)
                    big = np.abs(alpha) * ye + np.abs(T) + np.abs(m) * (1 + P.eps + P.U) + np.abs(A).sum(-1)
                    size = max(size, float(((j - 1) * (big + 1) + np.abs(lam) / rho * 3).max()))
            out = np.maximum(out, base + (j - 1) * K)
        return out, size + self._own_size(lam)

    def fit_mu(self, lam: np.ndarray, p: int) -> np.ndarray:
        """mu [2, cells, slices]: per cell end and slice, the minimising multiplier at point p."""
        P = self.P
        out = []
        for D in self.ends:
            _, alpha, g, hh, _ = self.pieces(lam, D)
            out.append(td._key_bound(self.beta[p], P.eps, P.U, alpha, g, hh, P.slices, multipliers=True)[2])
        return np.array(out)

    def curvature(self, lam: np.ndarray) -> np.ndarray:
        """sum_i kappa_i w_i^2 / 8 per cell (the larger over its two ends): kappa_i bounds the
        negative part of Phi's second derivative along q_i on the whole box."""
        P, j, s, n = self.P, self.j, self.s, self.P.n
        widths = np.full(n, 2.0)
        if self.k is not None:
            widths[self.k] = 2.0 / GRID
        rowsN = np.abs(P.N).sum(axis=1)  # sum_l |N_il|: |d(beta.c)/dq_i| <= this
        dE0 = P.E0.p  # BOS exponent: affine (S = 0)
        d_own = branch.exponent_upper(P.Eo, -np.ones((1, n)), np.ones((1, n)))
        dlo, dhi = d_own.dlo[0], d_own.dhi[0]  # d E_o / d q_i on the box
        Sii = 2 * np.diag(P.Eo.S)
        w0_hi, wo_lo, wo_hi = P.w_box["bos"][1], P.w_box["own"][0], P.w_box["own"][1]
        worst = np.zeros(len(lam))
        for D in self.ends:
            rho, alpha, g, hh, _ = self.pieces(lam, D)
            key = (j - 1) * rowsN[None] ** 2 * np.exp(P.U) * np.maximum(0, np.abs(g).sum(-1) - alpha)[:, None]
            k0 = np.maximum(0, -(s * self.v0 * rho - lam))[:, None] * w0_hi * dE0[None] ** 2
            # own: d2/dq_i2 of e^{E_o} (a + b.q) = e^{E_o} [((E_o')^2 + E_o'') (a + b.q) + 2 E_o' b_i]
            lin_lo = s * rho * self.v1 - lam - rho * np.abs(self.vC).sum()  # a + b.q on the box
            lin_hi = s * rho * self.v1 - lam + rho * np.abs(self.vC).sum()
            sq_hi = np.maximum(dlo ** 2, dhi ** 2)
            sq_lo = np.where((dlo <= 0) & (dhi >= 0), 0.0, np.minimum(dlo ** 2, dhi ** 2))
            c_lo, c_hi = sq_lo + Sii, sq_hi + Sii  # (E_o')^2 + E_o'' on the box
            prod = np.minimum.reduce([c_lo[None] * lin_lo[:, None], c_lo[None] * lin_hi[:, None],
                                      c_hi[None] * lin_lo[:, None], c_hi[None] * lin_hi[:, None]])
            cross = 2 * np.minimum(dlo * s * self.vC, dhi * s * self.vC)[None] * rho[:, None]
            inner = prod + cross  # lower bound of the bracket; times e^{E_o} in [wo_lo, wo_hi]
            ko = np.maximum(0, -np.minimum(inner * wo_lo, inner * wo_hi))
            worst = np.maximum(worst, ((key + k0 + ko) * widths[None] ** 2 / 8).sum(axis=1))
        return worst * (1 + 1e-9)


def _evaluate(row: _Row, lam: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, float]:
    """Per cell and point, the smaller of the fixed-mu and the exact-mu bound, the exact one computed
    only where the fixed one exceeds the largest exact value so far (in order of the fixed one):
    so the largest entry is the same as if every exact bound had been computed. [cells, points]."""
    vals, size = row.fixed(lam, mu)
    done = np.zeros(vals.shape[1], dtype=bool)
    while True:
        top = vals[:, done].max() if done.any() else -np.inf
        cand = np.flatnonzero(~done & (vals.max(axis=0) > top))
        if not len(cand):
            return vals, size
        cand = cand[np.argsort(-vals[:, cand].max(axis=0))][:32]
        ex, s = row.exact(lam, cand)
        vals[:, cand], done[cand], size = np.minimum(vals[:, cand], ex), True, max(size, s)


def _choose_lambda(row: _Row, active: list[int], lim: np.ndarray, steps: int) -> np.ndarray:
    """lambda per cell minimising (golden section) the largest exact bound over the active points."""
    idx = np.array(active)
    return td._golden(lambda lam: row.exact(lam, idx)[0].max(axis=1), -lim, lim, steps)


def row_bound(P: _Position, r: int, s: int, start: np.ndarray, cells: int = td.CELLS, rounds: int = ROUNDS,
              active: int = ACTIVE, steps: int = STEPS) -> dict[str, Any]:
    """Certified bound on s E_r at trigger position P.j over every input (every trigger content)."""
    row = _Row(P, r, s, cells)
    p0 = int(np.argmin(np.abs(row.pts - start).sum(axis=1)))  # the point nearest the start content
    lim = np.full(cells, 2 * (np.abs(P.h.V).sum(axis=1).max() + 1) / P.D[0])
    act = [p0]
    lam = _choose_lambda(row, act, lim, td.GOLDEN_STEPS)
    for it in range(rounds + 1):
        vals, size = _evaluate(row, lam, row.fit_mu(lam, p0))
        if it == rounds:
            break
        order = np.argsort(-vals.max(axis=0))
        act += [int(p) for p in order[:active] if int(p) not in act]
        lam = _choose_lambda(row, act, lim, steps)
    rem = row.curvature(lam)
    per_cell = vals.max(axis=1) + rem
    c = int(per_cell.argmax())
    figure = float(per_cell[c]) + td._allowance(size, P.n, P.j)
    return {"bound": figure, "coordinate": r, "sign": s, "worst_point": [float(v) for v in row.pts[int(vals[c].argmax())]],
            "remainder": float(rem[c]), "points": len(row.pts), "active": len(act)}


def position_bound(h: heads.Head, j: int, start, cells: int = td.CELLS, **kw) -> dict[str, Any]:
    """Certified bound on the max-abs error at trigger position j over EVERY input: rows in order
    of their box relaxation (``error.trigger_bound_box`` per row over the whole box), each taking
    the smaller of that and its vertex bound, until no remaining row's box bound exceeds the
    largest figure so far."""
    P = _Position(h, j)
    box = error.trigger_bound_rows(h, j, -np.ones(h.n), np.ones(h.n), P.ranges)  # per (coordinate, sign)
    order = sorted(box, key=lambda k: -box[k])
    best, out = -np.inf, []
    for r, s in order:
        if box[(r, s)] <= best:
            break
        row = row_bound(P, r, s, np.asarray(start, dtype=float), cells, **kw)
        row["box"] = box[(r, s)]
        out.append(row)
        best = max(best, min(row["bound"], box[(r, s)]))
    top = max(out, key=lambda t: min(t["bound"], t["box"]))
    return {"bound": best, "trigger": j, "rows": out, "rows_bounded": len(out), "worst_row": top,
            "cells": cells, "slices": P.slices, "score_range": P.U}



def tightened_eta(by_part: dict[str, float], vertex: dict[int, float]) -> dict[str, Any]:
    """eta_up with each trigger position's part replaced by the smaller of it and its vertex bound
    (``vertex``: {j: position_bound's figure}); ``by_part`` is ``error.eta_upper``'s."""
    parts = dict(by_part)
    for j, b in vertex.items():
        parts[f"trigger {j}"] = min(parts[f"trigger {j}"], b)
    where = max(parts, key=parts.get)
    return {"eta_up": parts[where], "attained_by": where, "by_part": parts}


def trigger_starts(h: heads.Head, L: int) -> dict[int, np.ndarray]:
    """Per trigger position, the trigger content of the best typed input the witness search finds
    there (the start of lambda's choice)."""
    from . import witness

    starts: dict[int, np.ndarray] = {}
    for t in witness.search(h, L, kicks=witness.KICKS):
        if t.case == "trigger" and t.i not in starts:
            starts[t.i] = t.c
    return starts
