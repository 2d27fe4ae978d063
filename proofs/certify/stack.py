"""Certified per-head BOS mass of a residual stack over EVERY input: interval bound propagation
(issue 12, item 4).

For each trigger position j the stream is a box per position: BOS exactly e_0, every other token
its flags exactly and its content in [-1, 1]^n. Through each layer and head:

- s_ik - s_i0 = x_i^T M (x_k - x_0), M = W_Q^T W_K, as an interval (centre-radius form of the
  bilinear form); the BOS stream is a point at every layer (query 0 sees only itself);
- softmax: a_i0 >= 1 / (1 + sum_{k=1..i} exp(max(s_ik - s_i0))) and a_i0 <= the same with the
  minima; sum-normalised sigmoid: the same with sigmoid(s) / sigmoid(s_0) on absolute scores;
- the head output o_i = a_i0 u_0 + (1 - a_i0) p with u_k = W_O^h W_V^h x_k (the product formed
  exactly) and p in the hull of u_1..u_i (rows on the simplex), enclosed coordinate by coordinate at
  the corners of (a_i0, p); the heads' outputs add, and the residual adds them to the stream;
- deeper layers also get a per-query search (``query_bound``): keys vary independently in their
  boxes, so each key's score is its support function given the query, and the query's own box is
  searched by ``branch.maximise`` as for a single layer.

Layer 0's heads see the tokens themselves, so their figure is the exact single-layer certificate
of ``sink`` (far tighter than the boxes); deeper layers use the propagated boxes.

A head's certified figure is the minimum over j and non-trigger queries of its BOS-mass lower
bound. It is sound whatever the depth, but boxes widen layer by layer, so deeper heads' bounds may
be vacuous; ``non_vacuous`` counts the heads whose bound is >= ``SINK_LEVEL`` (certified to put
at least half their mass on BOS at every non-trigger query, on every input).

Float64 throughout; every matrix product, sum and corner is widened by RELATIVE_SLACK of its
magnitude (more than gamma_d for d < 10^3), and exponentials and quotients by the same relative
amount (assuming, as the single-layer search does, a float exponential within 1e-12 relative).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from constructions import reference, task

from . import branch, heads, replay, sink

RELATIVE_SLACK = 1e-12
SINK_LEVEL = 0.5


@dataclass
class Box:
    c: np.ndarray  # [L, d] centres
    r: np.ndarray  # [L, d] radii (>= 0)

    @property
    def lo(self):
        return self.c - self.r

    @property
    def hi(self):
        return self.c + self.r


def _apply(W: np.ndarray, box: Box) -> Box:
    """y = W x for every position (x in the box)."""
    c = box.c @ W.T
    r = box.r @ np.abs(W).T
    return Box(c, r + RELATIVE_SLACK * ((np.abs(box.c) + box.r) @ np.abs(W).T) + 1e-300)


def _dot(a: Box, b_c: np.ndarray, b_r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval of a_i . b for boxes a [L, d] and b [d] (per row of a): (lo, hi)."""
    mid = a.c @ b_c
    rad = np.abs(a.c) @ b_r + a.r @ np.abs(b_c) + a.r @ b_r
    rad = rad + RELATIVE_SLACK * (np.abs(a.c) + a.r) @ (np.abs(b_c) + b_r) + 1e-300
    return mid - rad, mid + rad


def input_box(d: int, L: int, j: int) -> Box:
    c = np.zeros((L, d))
    r = np.zeros((L, d))
    c[0, task.BOS_FLAG] = 1
    c[1:, task.content_flag(d)] = 1
    c[j, task.content_flag(d)], c[j, task.TRIGGER_FLAG] = 0, 1
    r[1:, task.CONTENT_START:d - 1] = 1
    return Box(c, r)


def _float_matrix(M) -> np.ndarray:
    return np.array([[float(heads.exact(v)) for v in row] for row in M])


def _weights(kind: str, lo, hi, s0):
    with np.errstate(over="ignore"):  # exp(large) = inf gives the vacuous bound 0, which is valid
        return _weight_bounds(kind, lo, hi, s0)


def _weight_bounds(kind: str, lo: np.ndarray, hi: np.ndarray, s0: tuple[np.ndarray, np.ndarray] | None):
    """Bounds on the BOS weight of one query: lo/hi are the keys' (score - BOS score) intervals for
    softmax, or absolute scores for sigmoid_norm (s0 the BOS score interval)."""
    up, down = 1 + RELATIVE_SLACK, 1 - RELATIVE_SLACK  # exp overflow to inf is a valid (vacuous) bound
    if kind == "softmax":  # the outer factors cover the rounding of 1 / (1 + x)
        return down / (1 + up * np.exp(hi).sum()), up / (1 + down * np.exp(lo).sum())
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    b_lo, b_hi = sig(s0[0]) * down, sig(s0[1]) * up
    return down * b_lo / (b_lo + up * sig(hi).sum()), up * b_hi / (b_hi + down * sig(lo).sum())


def _bilinear(M: np.ndarray, box: Box, i: int, keys: range, ref: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Interval of x_i^T M (x_k - x_ref) (or x_i^T M x_k) for every key k, x in the boxes."""
    xc, xr = box.c[i], box.r[i]
    yc, yr = box.c[list(keys)], box.r[list(keys)]
    if ref is not None:
        yc, yr = yc - box.c[ref], yr + box.r[ref]
    A = np.abs(M)
    mid = yc @ (M.T @ xc)
    rad = yr @ (A.T @ np.abs(xc)) + np.abs(yc) @ (A.T @ xr) + yr @ (A.T @ xr)
    rad = rad + RELATIVE_SLACK * (np.abs(yc) + yr) @ (A.T @ (np.abs(xc) + xr)) + 1e-300
    return mid - rad, mid + rad


QUERY_NODES = 300  # boxes per query of the deeper layers' per-query search (its bound is certified anyway)


def query_bound(M: np.ndarray, box: Box, i: int) -> float:
    """Certified lower bound on a_i0 (softmax) at query i when every stream vector lies in its box.

    Relaxation: each key's stream (and BOS's) varies in its own box independently. For a fixed
    query x_i, key k's score minus BOS's is then at most g . (c_k - c_0) + sum_r |g_r| (r_k + r_0)_r
    with g = M^T x_i (the support function), and the query's own term is the quadratic
    x_i^T M x_i - x_i^T M c_0 plus sum_r |g_r| r_0,r; the query's box is searched by
    ``branch.maximise`` exactly as for a single layer."""
    free = np.nonzero(box.r[i] > 0)[0]
    n = len(free)
    ci, c0, r0 = box.c[i], box.c[0], box.r[0]
    D = np.diag(box.r[i])[:, free]  # [d, n]: x_i = c_i + D u, u in [-1, 1]^n
    b, K = M.T @ ci, M.T @ D
    zero = np.zeros((n, n))
    terms = [(1.0, heads.Exponent(float((box.c[k] - c0) @ b), K.T @ (box.c[k] - c0), zero, +1, b, K, box.r[k] + r0))
             for k in range(1, i)]
    sym = (M + M.T) / 2
    own_a = float(ci @ M @ ci - ci @ M @ c0)
    own_p = D.T @ (M @ ci + M.T @ ci - M @ c0)
    terms.append((1.0, heads.Exponent(own_a, own_p, D.T @ sym @ D, +1, b, K, r0)))
    res = branch.maximise(branch.ExpSum(terms, +1), n, rtol=1e-6, max_nodes=QUERY_NODES)
    from mpmath import iv

    return replay.down(1 / (1 + iv.mpf(res.upper)))


def layer_step(kind: str, maps: list[heads.Head], box: Box, j: int,
               exact: list[dict] | None = None) -> tuple[Box, list[np.ndarray]]:
    """One layer on the stream box (``maps``: each head's exact M and V = W_O^h W_V^h); returns
    the layer's output box and per head the lower bounds of a_i0 at every position (NaN at BOS
    and the trigger). ``exact[h]`` maps (query, case) to the head's exact single-layer
    certificate (layer 0 only), which tightens its weights."""
    L, d = box.c.shape
    out_c, out_r = np.zeros((L, d)), np.zeros((L, d))
    lows = []
    for h, hm in enumerate(maps):
        M = hm.M
        v = _apply(hm.V, box)  # value images u_k = V x_k, formed from the exact product
        low = np.full(L, np.nan)
        o_lo, o_hi = np.zeros((L, d)), np.zeros((L, d))
        o_lo[0], o_hi[0] = v.lo[0], v.hi[0]
        for i in range(1, L):
            if kind == "softmax":
                lo, hi = _bilinear(M, box, i, range(1, i + 1), 0)
                a_lo, a_hi = _weights(kind, lo, hi, None)
            else:
                lo, hi = _bilinear(M, box, i, range(0, i + 1), None)
                a_lo, a_hi = (float(x) for x in _weights(kind, lo[1:], hi[1:], (lo[0], hi[0])))
            if exact is None and kind == "softmax" and i != j and a_lo < 1 - 1e-3:
                a_lo = max(a_lo, query_bound(M, box, i))
            if exact is not None:
                case = "trigger" if i == j else ("before" if i < j else "after")
                bound = exact[h][(i, case)]
                a_lo, a_hi = (a_lo, min(a_hi, bound)) if case == "trigger" else (max(a_lo, bound), a_hi)
            if i != j:
                low[i] = a_lo
            p_lo, p_hi = v.lo[1:i + 1].min(axis=0), v.hi[1:i + 1].max(axis=0)
            corners = [a * v0 + (1 - a) * p for a in (a_lo, a_hi) for v0 in (v.lo[0], v.hi[0]) for p in (p_lo, p_hi)]
            o_lo[i], o_hi[i] = np.min(corners, axis=0), np.max(corners, axis=0)
            pad = RELATIVE_SLACK * (np.abs(o_lo[i]) + np.abs(o_hi[i])) + 1e-300  # rounding of the corners
            o_lo[i], o_hi[i] = o_lo[i] - pad, o_hi[i] + pad
        lows.append(low)
        out_c, out_r = out_c + (o_lo + o_hi) / 2, out_r + (o_hi - o_lo) / 2
    pad = RELATIVE_SLACK * (np.abs(out_c) + out_r) + 1e-300  # rounding of the centre-radius sums
    return Box(out_c, out_r + pad), lows


def certify_stack(net: reference.Network, L: int, exact_first: bool = True) -> dict[str, Any]:
    """Per layer and head: the certified minimum BOS mass over every input and non-trigger query."""
    heads.check_kind(net.kind)
    d = net.d
    per = [[np.full(L, np.inf) for _ in range(layer.heads)] for layer in net.layers]
    exact0 = [{(q["position"], q["case"]): q["certified"] for q in sink.certify_head(net, L, 0, h)["queries"]}
              for h in range(net.layers[0].heads)] if exact_first else None
    maps = [[heads.head_maps(net, n, h) for h in range(layer.heads)] for n, layer in enumerate(net.layers)]
    for j in range(2, L):
        box = input_box(d, L, j)
        for n in range(len(net.layers)):
            out, lows = layer_step(net.kind, maps[n], box, j, exact0 if n == 0 else None)
            for h, low in enumerate(lows):
                per[n][h] = np.fmin(per[n][h], low)
            if net.residual:
                c = box.c + out.c
                box = Box(c, box.r + out.r + RELATIVE_SLACK * (np.abs(c) + box.r + out.r) + 1e-300)
            else:
                box = out
    report = []
    for n, layer_bounds in enumerate(per):
        for h, low in enumerate(layer_bounds):
            values = low[1:]
            report.append({"layer": n, "head": h, "min_bos_certified": float(np.min(values)),
                           "per_position": [None] + [float(x) for x in values],
                           "non_vacuous": bool(np.min(values) >= SINK_LEVEL)})
    return {"kind": net.kind, "d": d, "L": L, "residual": net.residual, "heads": report,
            "non_vacuous_fraction": sum(r["non_vacuous"] for r in report) / len(report),
            "non_vacuous_query_fraction": float(np.mean([v >= SINK_LEVEL for r in report for v in r["per_position"][1:]])),
            "sink_level": SINK_LEVEL}
