"""Certified per-head BOS mass of a softmax residual stack over EVERY input, by zonotopes.

The same input classes as ``affine_stack`` (one per trigger position j; the contents u in [-1, 1]^N are
the first N symbols, ``affine.inputs``), but the stream is a ``zonotope.Zono``: every remainder
a layer leaves becomes a fresh symbol (``zonotope.fresh``), so the next layer's scores, weights
and outputs carry it as one shared quantity instead of an independent interval per coordinate.
Per head and query i (DeepT, Bonaert et al. PLDI 2021):

- scores s_ik = x_i^T M x_k (``scores``): the first-order terms exact in the symbols, the
  quadratic (G_i e)^T M (G_k e) by its diagonal range plus absolute values off it;
- softmax as a_ik = 1 / sum_m exp(s_im - s_ik) (``weights``): the differences cancel the symbols
  that the scores share, then ``zonotope.exp``, a sum, ``zonotope.reciprocal`` (the sum is >= 1:
  its m = k term is exp(0)); per key the narrower of that and the interval
  [1 / sum_m exp(hi_km), 1 / sum_m exp(lo_km)] from the differences' ends (the only form where a
  difference may exceed ``zonotope.EXP_CAP``);
- the BOS bound (``bos_low``): the larger of a_i0's lower end and that of 1 - sum_{k>=1} a_ik;
- the output o_i = sum_k a_ik w_k (w_k = V z_k; ``mixture``): per coordinate the narrowest of the
  zonotope products, w_0 + sum_{k>=1} a_k (w_k - w_0), and ``affine.mixture``'s knapsack on the
  weights' ends; summed over heads and added to the stream;
- ``certify_stack(boxes=B)``: a best-first branch and bound on the contents, B classes per j.

A head's figure is the minimum over j and the non-trigger queries; ``non_vacuous`` as in ``affine_stack``.
Softmax only (the trained stacks'); the figures are floats with the a-priori allowances of
``zonotope`` (tests/test_zono_stack.py holds them below every grid input of tiny stacks).
"""

from __future__ import annotations

import heapq
import time
from typing import Any

import numpy as np

from constructions import reference

from ..arithmetic import affine, heads
from .affine_stack import SINK_LEVEL
from ..arithmetic import zonotope as zt
from ..arithmetic.affine import RELATIVE_SLACK, TINY


def inputs(d: int, L: int, j: int) -> zt.Zono:
    """The tokens, trigger at j, exact: the contents are the symbols."""
    f = affine.inputs(d, L, j)
    return zt.exact(f.b, f.A)


def scores(M: np.ndarray, z: zt.Zono) -> zt.Zono:
    """[L, L] every s_ik = x_i^T M x_k (entries k > i unused)."""
    c, G, r = z.c, z.G, z.r
    MG = np.einsum("ab,kbe->kae", M, G)  # M G_k   [L, d, E]
    MtG = np.einsum("ba,ibe->iae", M, G)  # M^T G_i [L, d, E]
    lin = np.einsum("ia,kae->ike", c, MG) + np.einsum("ka,iae->ike", c, MtG)
    centre = c @ M @ c.T
    rho = np.abs(G).sum(axis=2)  # [L, d] |G_i e| per coordinate
    row_MG, row_MtG = np.abs(MG).sum(axis=2), np.abs(MtG).sum(axis=2)  # [L, d]
    quad = np.minimum(rho @ row_MG.T, (rho @ row_MtG.T).T)  # [i, k] >= sum |B_ab|, B = G_i^T M G_k
    diag = np.einsum("iae,kae->ike", G, MG)  # B_ee
    d_lo, d_hi = np.minimum(diag, 0).sum(axis=2), np.maximum(diag, 0).sum(axis=2)
    off = np.maximum(quad - np.abs(diag).sum(axis=2), 0.0)
    Mc, Mtc = np.abs(c @ M.T), np.abs(c @ M)  # |M c_k|, |M^T c_i|
    rem = r @ (Mc + row_MG).T + ((r @ (Mtc + row_MtG).T).T) + r @ np.abs(M) @ r.T  # [i, k]
    mag = z.magnitude()
    slack = RELATIVE_SLACK * 4 * (mag @ np.abs(M) @ mag.T) + TINY
    return zt.Zono(centre + (d_lo + d_hi) / 2, lin, (d_hi - d_lo) / 2 + off + rem + slack)


def _interval_weights(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key k: a_k in [1 / sum_m exp(hi_km), 1 / sum_m exp(lo_km)] from the ends of the
    differences s_m - s_k (each from the zonotopes, so the shared symbols have cancelled)."""
    with np.errstate(over="ignore"):
        big = np.exp(np.minimum(hi, 700.0)).sum(axis=1) * (1 + zt.FN_RTOL * hi.shape[1])
        small = np.exp(np.minimum(lo, 700.0)).sum(axis=1) * (1 - zt.FN_RTOL * lo.shape[1])
        a_lo = np.where(np.all(hi <= 700.0, axis=1), 1.0 / big * (1 - 4 * zt.FN_RTOL), 0.0)
        a_hi = np.minimum(1.0, 1.0 / np.maximum(small, 1.0) * (1 + 4 * zt.FN_RTOL))
    return a_lo, a_hi


def weights(s: zt.Zono) -> zt.Zono:
    """[K] a_k = 1 / sum_m exp(s_m - s_k) for one query's scores s [K]: per key the narrower of
    the zonotope (exp, sum, reciprocal) and the interval from the differences' ends."""
    K = len(s.c)
    diff = zt.Zono(s.c[None, :] - s.c[:, None], s.G[None, :, :] - s.G[:, None, :],
                   s.r[None, :] + s.r[:, None] + RELATIVE_SLACK * (s.magnitude()[None, :] + s.magnitude()[:, None]) + TINY)
    eye = np.eye(K, dtype=bool)
    diff.c[eye], diff.G[eye], diff.r[eye] = 0.0, 0.0, 0.0  # s_k - s_k = 0 exactly
    lo, hi = diff.bounds()
    i_lo, i_hi = _interval_weights(lo, hi)
    out = zt.Zono((i_lo + i_hi) / 2, np.zeros((K, s.symbols)), (i_hi - i_lo) / 2 * (1 + RELATIVE_SLACK) + TINY)
    safe = np.all(hi <= zt.EXP_CAP, axis=1)
    if safe.any():
        a = zt.reciprocal(zt.total(zt.exp(diff[safe]), axis=1), floor=1.0)
        a_lo, a_hi = a.bounds()
        better = np.zeros(K, bool)
        better[safe] = a_hi - a_lo < i_hi[safe] - i_lo[safe]
        pick = better[safe]
        out.c[better], out.G[better], out.r[better] = a.c[pick], a.G[pick], a.r[pick]
    return out


def bos_low(a: zt.Zono) -> float:
    """Certified lower bound on a_0: the larger of a_0's lower end and that of 1 - sum_{k>=1} a_k
    (the true weights sum to one; the zonotopes' shared symbols combine before the bound is taken,
    which 1 - sum of the upper ends would lose)."""
    rest = zt.total(a[1:], axis=0)
    lo_rest = zt.affine_map(np.array(-1.0), np.array(1.0), rest).bounds()[0]
    return float(min(1.0, max(0.0, a.bounds()[0][0], lo_rest)))


def mixture(a: zt.Zono, w: zt.Zono, i: int) -> zt.Zono:
    """o_i = sum_{k<=i} a_k w_k, per coordinate the narrowest of three enclosures: the sum of the
    zonotope products; w_0 + sum_{k>=1} a_k (w_k - w_0) (the true weights sum to one; w_0, BOS's
    value image, is one point for every input, since query 0 sees only itself), where BOS's weight,
    the largest and widest at a sinking query, enters only through the others'; and ``affine.mixture``
    on the weights' ends (a zonotope is an affine form in its symbols), whose knapsack uses that
    the weights' excess over their lower ends sums to at most 1 - sum lo (an averaging trigger)."""
    a_col = zt.Zono(a.c[:, None], a.G[:, None, :], a.r[:, None])
    plain = zt.total(zt.product(a_col, w[:i + 1]), axis=0)
    keys = slice(1, i + 1)
    bos = zt.Zono(np.broadcast_to(w.c[0], w.c[keys].shape), np.broadcast_to(w.G[0], w.G[keys].shape),
                  np.broadcast_to(w.r[0], w.r[keys].shape))
    rest = zt.add(w[0], zt.total(zt.product(a_col[keys], zt.add(w[keys], zt.neg(bos))), axis=0))
    lo, hi = a.bounds()
    G, c, r = affine.mixture(affine.Forms(w.G[:i + 1], w.c[:i + 1], w.r[:i + 1]), i, np.maximum(lo, 0.0), np.minimum(hi, 1.0))
    best = plain
    for other in (rest, zt.Zono(c, G, r)):
        pick = other.radius() < best.radius()
        best = zt.Zono(np.where(pick, other.c, best.c), np.where(pick[:, None], other.G, best.G), np.where(pick, other.r, best.r))
    return best


def head_output(M: np.ndarray, V: np.ndarray, z: zt.Zono) -> tuple[zt.Zono, np.ndarray]:
    """One head on the stream: its output [L, d] and the BOS lower bound at every query."""
    L, d, E = z.G.shape
    s = scores(M, z)
    w = zt.linear(V, z)
    out = zt.Zono(np.zeros((L, d)), np.zeros((L, d, E)), np.zeros((L, d)))
    low = np.full(L, 1.0)
    out.c[0], out.G[0], out.r[0] = w.c[0], w.G[0], w.r[0]  # query 0 sees only BOS
    for i in range(1, L):
        a = weights(s[i, :i + 1])
        low[i] = bos_low(a)
        o = mixture(a, w, i)
        out.c[i], out.G[i], out.r[i] = o.c, o.G, o.r
    return out, low


def layer_step(maps: list[heads.Head], z: zt.Zono) -> tuple[zt.Zono, list[np.ndarray]]:
    """The heads' summed outputs and their per-query BOS bounds."""
    total, lows = None, []
    for hm in maps:
        o, low = head_output(hm.M, hm.V, z)
        total = o if total is None else zt.add(total, o)
        lows.append(low)
    return total, lows


def box_inputs(d: int, L: int, j: int, lo: np.ndarray, hi: np.ndarray) -> zt.Zono:
    """The tokens, trigger at j, with the contents u in the box [lo, hi] (each symbol e_a maps to
    u_a = mid_a + half_a e_a; mid and half of dyadic ends are exact, A's entries are 0 or 1)."""
    f = affine.inputs(d, L, j)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    return zt.exact(f.b + f.A @ mid, f.A * half)


def run_class(maps: list[list[heads.Head]], z: zt.Zono, j: int, residual: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stack on one input class: per layer, head and query the BOS lower bound ([layers,
    heads, L], +inf at BOS and the trigger); per content symbol its weight in the last layer's
    input stream (where a split helps most); per layer's input stream after the trigger its mean
    radius per coordinate in the contents, the fresh symbols and the remainder ([layers, 3]:
    where the bound is lost)."""
    N = z.symbols
    lows, spread = [], []
    for n, layer_maps in enumerate(maps):
        after = np.abs(z.G[j + 1:])
        spread.append([after[..., :N].sum(-1).mean(), after[..., N:].sum(-1).mean(), z.r[j + 1:].mean()]
                      if len(after) else [0.0, 0.0, 0.0])
        out, layer_lows = layer_step(layer_maps, z)
        lows.append(layer_lows)
        if n < len(maps) - 1:
            z = zt.fresh(zt.add(z, out) if residual else out)
    lows = np.array(lows)
    lows[:, :, 0], lows[:, :, j] = np.inf, np.inf
    return lows, np.abs(z.G[..., :N]).sum(axis=(0, 1)), np.array(spread)


def centre_bos(maps: list[list[heads.Head]], x: np.ndarray, residual: bool) -> np.ndarray:
    """[layers, heads, L] the BOS mass at one input x [L, d] (float64; it only steers the splits)."""
    out = []
    for layer_maps in maps:
        o, row = np.zeros_like(x), []
        for hm in layer_maps:
            s = x @ hm.M @ x.T + np.triu(np.full((len(x), len(x)), -np.inf), 1)
            a = np.exp(s - s.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
            row.append(a[:, 0])
            o = o + a @ (x @ hm.V.T)
        out.append(row)
        x = x + o if residual else o
    return np.array(out)


def certify_stack(net: reference.Network, L: int, boxes: int = 1) -> dict[str, Any]:
    """Per layer and head: the certified minimum BOS mass over every input and non-trigger query.
    ``boxes``: input classes per trigger position (a branch and bound on the contents): while a
    class has a head below SINK_LEVEL that its centre input puts above it at every non-trigger
    query (a bound that may be loose rather than a head that does not sink), it is halved along
    the content with the largest weight in the last layer's stream."""
    if net.kind != "softmax":
        raise ValueError(f"the zonotope stack certificate handles softmax only, got {net.kind!r}")
    start, cpu = time.perf_counter(), time.process_time()
    maps = [[heads.head_maps(net, n, h) for h in range(layer.heads)] for n, layer in enumerate(net.layers)]
    per = np.full((len(net.layers), max(ly.heads for ly in net.layers), L), np.inf)
    N = (L - 1) * (net.d - 3)
    symbols, used, radii = 0, 0, {}
    for j in range(2, L):
        def run(lo, hi):
            z = box_inputs(net.d, L, j, lo, hi)
            lows, weight, spread = run_class(maps, z, j, net.residual)
            radii[j] = spread if j not in radii else np.maximum(radii[j], spread)
            return (_looseness(lows, centre_bos(maps, z.c, net.residual), j), id(lo), lo, hi, lows, weight, z.symbols)

        heap = [run(-np.ones(N), np.ones(N))]
        while heap[0][0] < np.inf and len(heap) < boxes:  # best first: the loosest class
            _, _, lo, hi, _, weight, _ = heapq.heappop(heap)
            a = int(np.argmax(weight * (hi - lo)))
            cut = np.where(np.arange(N) == a, (lo + hi) / 2, 0.0)
            heapq.heappush(heap, run(lo, np.where(np.arange(N) == a, cut, hi)))
            heapq.heappush(heap, run(np.where(np.arange(N) == a, cut, lo), hi))
        used += 2 * len(heap) - 1
        per = np.minimum(per, np.min([leaf[4] for leaf in heap], axis=0))
        symbols = max(symbols, max(leaf[6] for leaf in heap))
    report = []
    for n, layer in enumerate(net.layers):
        for h in range(layer.heads):
            values = per[n, h, 1:]
            report.append({"layer": n, "head": h, "min_bos_certified": float(np.min(values)),
                           "per_position": [None] + [float(x) for x in values],
                           "non_vacuous": bool(np.min(values) >= SINK_LEVEL)})
    return {"kind": net.kind, "d": net.d, "L": L, "residual": net.residual, "heads": report,
            "non_vacuous_fraction": sum(r["non_vacuous"] for r in report) / len(report),
            "sink_level": SINK_LEVEL, "method": "zonotopes in the contents and fresh symbols per layer, per trigger position",
            "stream_radius_after_trigger": {"columns": ["contents", "fresh symbols", "remainder"],
                                            "per_layer": np.max(list(radii.values()), axis=0).tolist()},
            "boxes_per_trigger": boxes, "classes_run": used, "symbols": symbols,
            "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}


def _looseness(lows: np.ndarray, centre: np.ndarray, j: int) -> float:
    """The lowest bound among the heads that are below SINK_LEVEL at some query although the
    class's centre input puts them above it at every non-trigger query (+inf: none)."""
    mask = np.ones(lows.shape[-1], bool)
    mask[0] = mask[j] = False
    sinks = np.all(centre[..., mask] > SINK_LEVEL, axis=-1)
    worst = lows[..., mask].min(axis=-1)
    short = sinks & (worst < SINK_LEVEL)
    return float(worst[short].min()) if short.any() else np.inf
