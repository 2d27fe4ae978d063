"""From bounds at grid points to a bound over the whole content box of the trigger: the error's
curvature in the trigger content q, and the multilinear interpolation bound.

Fix every input but the trigger's content q (the keys' contents, their order, the trigger
position j) and one output coordinate r with a sign s. The error f(q) = s (o_r - t_r) at the
trigger is o_r = sum_k a_k(q) y_k(q) with softmax weights a = softmax(l(q)) over BOS, the j - 1
content keys and the trigger's own key, minus an affine target. Along one coordinate q_i (primes:
d/dq_i; bars: means under a; cov under a):

    f'' = E[(l' - l'bar)^2 (y - ybar)] + cov(l'', y) + 2 cov(l', y'),

where only the own key has l'' != 0 (its score holds q^T M[C, C] q: l''_o = 2 M[C_i, C_i]) and
y' != 0 (its value is affine in q: y'_o = s V[r, C_i]); BOS's score is affine in q (l'_0 = p_0,i)
and a content key's is b . c + q^T N c (l'_k = (N c)_i, tiny on trained heads). ``curvature``
bounds the negative part of f'' by kappa_i, uniformly over every such input and every q in the
box, from enclosures of a_0, a_o, the slopes l' and the value range.

Then f + sum_i (kappa_i / 2)(q_i - a_i)(q_i - b_i) is convex along every coordinate on a box
prod [a_i, b_i], so it lies below the multilinear interpolation of its (= f's) values at the
box's vertices, and

    f(q) <= I(q) + sum_i (kappa_i / 2)(q_i - a_i)(b_i - q_i) <= I(q) + sum_i (kappa_i w_i^2 / 4) t_i,

t_i in [0, 1] the distance of q_i from its nearer end in units of w_i / 2. The right-hand side
is multilinear in t on each orthant of the box (corner by corner), so its maximum is at points
whose every coordinate is an end or the middle of its piece: the grid of ends and midpoints, a
midpoint carrying the average of its two ends plus kappa_i w_i^2 / 4 (``grid_bound``). The
worst case over the inputs with content q is at most the supremum over inputs of f, so bounds at
the grid's ends (every end point's upper bound, which the interpolation only averages) bound
every trigger content. Where the neighbours of the largest point are much lower, the midpoints
add nothing: the remainder only counts where the point bounds are flat.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...arithmetic import heads, native

MARGIN = 1e-6  # relative room on kappa for the rounding of its few float operations


def curvature(P, row, own: tuple[float, float] = (-1.0, 1.0)) -> np.ndarray:
    """kappa [n]: bounds on the negative part of d^2 (s E_r) / dq_i^2 over every input at trigger
    position P.j whose trigger content lies in the box (the row's own coordinate in ``own``).

    ``P`` is a ``vertices.Position`` (exponents, weight enclosures over the box), ``row``
    a ``vertices.Row`` (value and target pieces of (r, s)). The own key's two terms are
    taken as a_o (1 - a_o) times differences to the other tokens (y_o - ybar is the mean of
    y_o - y_k over the other tokens, weights a_k / (1 - a_o); likewise l'_o - l'bar)."""
    s, n, w = row.s, P.n, P.w_box
    A0 = w["bos"][1] / (w["bos"][1] + w["own"][0] + P.m * P.key_lo)  # BOS's share, at most
    Ao = (w["own"][0] / (w["bos"][1] + w["own"][0] + P.m * P.key_hi),  # the own key's share, its range
          w["own"][1] / (w["bos"][0] + w["own"][1] + P.m * P.key_lo))
    own_var = max(a * (1 - a) for a in (Ao[0], Ao[1], min(max(0.5, Ao[0]), Ao[1])))  # max of a (1 - a) on it
    p0, S, N = np.abs(P.E0.p), P.Eo.S, P.N
    lo_own = np.abs(P.Eo.p) + 2 * np.abs(S).sum(axis=1)  # |l'_o| on the box
    lo_key = np.abs(N).sum(axis=1)  # |l'_k| = |(N c)_i|
    lbar = A0 * p0 + np.maximum(lo_own, lo_key)  # |mean of l'|
    lo_q, hi_q = -np.ones(n), np.ones(n)
    if row.k is not None:
        lo_q[row.k], hi_q[row.k] = own
    sv = s * row.vC
    y0 = s * row.v0
    yo = (s * row.v1 + np.minimum(sv * lo_q, sv * hi_q).sum(), s * row.v1 + np.maximum(sv * lo_q, sv * hi_q).sum())
    spread = np.abs(row.vC).sum()
    yk = (s * row.vf - spread, s * row.vf + spread)
    ymax = max(y0, yo[1], yk[1])
    others = (min(y0, yk[0]), max(y0, yk[1]))  # every token's value but the own key's
    third = (A0 * (p0 + lbar) ** 2 * max(ymax - y0, 0.0) + Ao[1] * (lo_own + lbar) ** 2 * max(ymax - yo[0], 0.0)
             + (lo_key + lbar) ** 2 * max(ymax - yk[0], 0.0))  # E[(l' - l'bar)^2 (y - ybar)], negative part
    diag = np.diag(N)  # the own score's q_i^2 coefficient: l''_o = 2 N_ii
    second = 2 * np.abs(diag) * own_var * np.where(diag > 0, max(others[1] - yo[0], 0.0), max(yo[1] - others[0], 0.0))
    cross = 2 * (own_var * (lo_own + lo_key) + Ao[1] * A0 * p0) * np.abs(row.vC)  # 2 cov(l', y')
    return (third + second + cross) * (1 + MARGIN)


def grid_values(values: np.ndarray, widths: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """I(q) + sum_i (kappa_i w_i^2 / 4) t_i on the refined grid (every coordinate's ends and
    midpoints: index 2 k + 1 is the middle of piece k), from ``values`` (upper bounds at the grid's
    ends: one axis per content coordinate, its levels in order), ``widths`` [n] (piece widths per
    coordinate) and ``kappa`` [n]; before the rounding allowance (``allowance``)."""
    grid = values.astype(float)
    for axis in reversed(range(len(widths))):  # the last axes while the grid is small: their strides are short
        w, k = widths[axis], kappa[axis]
        pre, size, post = math.prod(grid.shape[:axis]), grid.shape[axis], math.prod(grid.shape[axis + 1:])  # ints: not np.prod's overhead
        ends = grid.reshape(pre, size, post)
        out = np.empty((pre, 2 * size - 1, post))
        out[:, 0::2] = ends
        mids = out[:, 1::2]
        np.add(ends[:, :-1], ends[:, 1:], out=mids)
        mids *= 0.5
        mids += k * w * w / 4
        grid = out.reshape(grid.shape[:axis] + (2 * size - 1,) + grid.shape[axis + 1:])
    return grid


def allowance(values: np.ndarray, widths: np.ndarray, kappa: np.ndarray) -> float:
    """Rounding allowance of ``grid_values``: each entry is an average of at most 2^n values plus n
    terms, every operation rounded once."""
    return 4 * (len(widths) + 2) * heads.UNIT_ROUNDOFF * (float(np.abs(values).max()) + float((kappa * widths ** 2).sum()))


def grid_bound(values: np.ndarray, widths: np.ndarray, kappa: np.ndarray) -> tuple[float, tuple[int, ...]]:
    """max over the box of I(q) + sum_i (kappa_i w_i^2 / 4) t_i (``grid_values``), rounding allowance
    included, and where on the refined grid it is attained."""
    grid = grid_values(values, widths, kappa)
    where = np.unravel_index(int(np.argmax(grid)), grid.shape)
    return float(grid[where]) + allowance(values, widths, kappa), tuple(int(i) for i in where)


def bound_over(values: np.ndarray, widths: np.ndarray, kappa: np.ndarray, target: float,
               leaf: int = 2 ** 14) -> tuple[float, np.ndarray, tuple | None]:
    """``grid_bound``'s figure without the whole refined grid; the flat indices (into ``values``) of
    ends to refine: of the HOT_ENTRIES largest refined-grid entries above ``target`` met, each one's
    largest HOT_CORNERS ends; and the refined-grid index of the largest entry computed (None if every
    part was skipped).

    The refined grid along one axis is its ends, and the middles of consecutive ends plus that
    axis's term kappa w^2 / 4: so its largest entry is the largest over the axis's children (the
    arrays of one axis fewer: each end's slice, each middle's average of two slices plus the
    term). A depth-first search over the axes (the child with the largest entry first) skips a
    child whose largest value plus the terms of the axes left is at most the larger of the target
    and the largest entry found (it can hold no larger entry, nor one above the target); once the
    refined grid of the axes left has at most ``leaf`` entries it is computed whole. The figure is
    the largest entry found or bound skipped, rounding allowance included. The search runs in the
    compiled kernel (``native``: the same operations in the same order) where it is built, else
    ``_search``, the reference; ``tests/test_native.py`` holds the two equal."""
    adds = kappa * widths ** 2 / 4
    room = allowance(values, widths, kappa)
    tail = np.concatenate([np.cumsum(adds[::-1])[::-1], [0.0]])  # tail[k]: the terms of axes k.. n-1
    compiled = native.kernels()
    if compiled is not None and values.ndim <= 64 and all(1 <= s <= 64 for s in values.shape):
        figure, found, where = compiled.bound_over(values, widths, kappa, adds, tail, room, target, leaf, HOT_ENTRIES)
    else:
        figure, found, where = _search(values.astype(float), widths, kappa, adds, tail, room, target, leaf)
    hot = []
    for _, at in found:  # the largest entries overall, largest first
        levels = [(g // 2,) if g % 2 == 0 else (g // 2, g // 2 + 1) for g in at]
        ends = np.ravel_multi_index(np.meshgrid(*levels, indexing="ij"), values.shape).ravel()
        hot.append(ends[np.argsort(-values.ravel()[ends])[:HOT_CORNERS]])
    return figure, (np.unique(np.concatenate(hot)) if hot else np.zeros(0, dtype=int)), where


def _search(values: np.ndarray, widths: np.ndarray, kappa: np.ndarray, adds: np.ndarray, tail: np.ndarray,
            room: float, target: float, leaf: float) -> tuple[float, list[tuple[float, tuple]], tuple | None]:
    """``bound_over``'s search in numpy: (figure, the HOT_ENTRIES largest entries above the target
    met as (value, refined-grid index), largest first, ties in the order found; where or None)."""
    state = {"figure": -np.inf, "hot": [], "where": None}

    def visit(U: np.ndarray, base: float, k: int, path: list[int]) -> None:
        cheap = base + float(U.max()) + tail[k] + room
        if cheap <= max(target, state["figure"]):
            state["figure"] = max(state["figure"], cheap)
            return
        if U.size * 1.5 ** U.ndim <= leaf:  # about the refined grid's size (2 L - 1 per axis of L ends)
            grid = grid_values(U, widths[k:], kappa[k:]) + base
            top = np.unravel_index(int(np.argmax(grid)), grid.shape)
            if float(grid[top]) + room > state["figure"]:  # its refined-grid index: 2 i an end, 2 i + 1 a middle
                state["where"] = tuple(path) + tuple(int(t) for t in top)
            state["figure"] = max(state["figure"], float(grid[top]) + room)
            over = np.argwhere(grid > target - room) if float(grid[top]) > target - room else np.zeros((0, grid.ndim), dtype=int)
            for w in over[np.argsort(-grid[tuple(over.T)], kind="stable")[:HOT_ENTRIES]]:
                state["hot"].append((float(grid[tuple(w)]), tuple(path) + tuple(int(g) for g in w)))
            return
        L = U.shape[0]
        # each child's largest entry is at most its slab's largest (an end) or the mean of its two slabs'
        # largest plus the term (a middle; rounding is monotone): children are ordered and skipped by
        # that without forming the middles' arrays first
        top = U.reshape(L, -1).max(axis=1)
        children = [(base + float(top[i]), base, (i,)) for i in range(L)]
        children += [(base + adds[k] + float((top[i] + top[i + 1]) / 2), base + adds[k], (i, i + 1)) for i in range(L - 1)]
        for ub, b, c in sorted(children, key=lambda t: -t[0]):
            if ub + tail[k + 1] + room <= max(target, state["figure"]):  # so is every later child's
                state["figure"] = max(state["figure"], ub + tail[k + 1] + room)
                break
            visit(U[c[0]] if len(c) == 1 else (U[c[0]] + U[c[1]]) / 2, b, k + 1, path + [2 * c[0] + len(c) - 1])

    visit(values, 0.0, 0, [])
    return state["figure"], sorted(state["hot"], key=lambda t: -t[0])[:HOT_ENTRIES], state["where"]


HOT_ENTRIES = 64  # refined-grid entries above the target whose ends are refined,
HOT_CORNERS = 16  # ... each one's largest ends


def support(where: np.ndarray, shape) -> np.ndarray:
    """Flat indices (into the ends' grid of ``shape``) of the ends that the refined-grid entries
    ``where`` [E, n] average: an even index is an end, an odd one the middle of two."""
    out = set()
    for w in where:
        for c in itertools.product(*[(g // 2,) if g % 2 == 0 else (g // 2, g // 2 + 1) for g in w]):
            out.add(int(np.ravel_multi_index(c, shape)))
    return np.array(sorted(out), dtype=int)
