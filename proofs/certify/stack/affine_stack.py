"""Certified per-head BOS mass of a residual stack over EVERY input, by bounds that keep
the correlation between heads and layers.

The input class is split by the trigger position j (the one discrete structure; no positional
encoding, so nothing else is). For each j the stream is carried as affine forms in all the input
contents with interval remainders (``affine``), layer by layer; per head and query i:

- the scores of every key are exponents of the query's own content c (``scores``): given c, each
  key's dependence on the other contents is a support function, so the certified minimum of
  a_i0 = 1 / (1 + sum_k w(s_ik) / w(s_i0)) is a branch and bound over c (``branch.maximise``,
  the single layer's search; its final figure in interval arithmetic);
- the head's output o_i = sum_k a_ik w_k (w_k = W_O^h W_V^h z_k) is enclosed by ``affine.mixture``
  from per-key bounds on a_ik (each key's score range over the whole input class, the certified
  BOS mass where the query sinks): a sinking query adds its BOS image plus a small remainder, a
  trigger that averages its keys adds their mean as an affine function of the contents;
- the heads' outputs add, and the residual adds them to the stream.

Layer 0's heads see the tokens themselves; ``exact_first`` uses their exact single-layer
certificate (``sink``, j-independent). A head's figure is the minimum over j and non-trigger
queries of its BOS-mass lower bound: sound whatever the depth; ``non_vacuous`` marks the heads whose
bound is >= ``SINK_LEVEL`` at every non-trigger query (certified to put at least half their mass
on BOS on every input). Softmax and sum-normalised sigmoid.

Tested against every input of tiny stacks on a content grid (``tests/test_certify_stack.py``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from constructions import balls, reference

from ..arithmetic import affine, branch, centred, heads, linear_softmax, replay
from . import directional, joint_weights, scores
from ..head import sink

SINK_LEVEL = 0.5
QUERY_NODES = 300  # boxes per query of the BOS-mass search (its bound is certified anyway)
SEARCH_RTOL = 1e-3  # the search stops when sum_k w(s_ik) / w(s_i0) is bracketed this closely (relative)


def _iv_quotient(num: float, a: float, b: float, lower: bool) -> float:
    """num / (a + b) in ball arithmetic, rounded down (``lower``) or up."""
    with balls.precision():
        x = balls.ball(num) / (balls.ball(a) + balls.ball(b))
    return replay.down(x) if lower else replay.up(x)


class _ExpSum(branch.ExpSum):
    """``branch.ExpSum`` whose final interval recomputation skips the boxes that float arithmetic
    puts below the best by more than 1e-9 relative (a float exponential errs by < 1e-15 relative,
    the premise of ``branch.PRUNE_MARGIN`` too): the certified maximum is the same, found sooner."""

    def certified(self, exponents: np.ndarray) -> float:
        w = np.array([w for w, _ in self.terms])
        with np.errstate(over="ignore"):
            totals = self.sign * (np.exp(exponents) @ w)
        top = np.max(totals)
        keep = totals >= top - 1e-9 * abs(top) if np.isfinite(top) else np.ones(len(totals), bool)
        return super().certified(exponents[keep])


def sink_bound(kind: str, M: np.ndarray, z: affine.Forms, i: int, nodes: int, along=None) -> tuple[float, branch.Result]:
    """Certified lower bound on a_i0 at query i over every input of the stream forms ``z``
    (``along``: the remainders read along directions, ``scores.key_exponents``)."""
    n = z.A.shape[1] - 3
    if kind == "softmax":  # a_i0 = 1 / (1 + sum_k exp(s_ik - s_i0))
        ex = scores.key_exponents(M, z, i, scores.bos_reference(z), along)
        obj = _ExpSum([(1.0, scores.compact(e[0])) for e in ex[1:]], +1)
    else:  # a_i0 = 1 / (1 + sum_k sigmoid(s_ik) / sigmoid(s_i0))
        ex = scores.key_exponents(M, z, i, None, along)
        obj = branch.SigmoidSum([(1.0, scores.compact(e[0])) for e in ex[1:]], scores.compact(ex[0][1]), +1)
    res = branch.maximise(obj, n, rtol=SEARCH_RTOL, max_nodes=nodes)
    with balls.precision():
        return replay.down(1 / (1 + balls.ball(res.upper))), res


def _weight_range(kind: str, up: heads.Exponent, lo: heads.Exponent, n: int) -> tuple[float, float]:
    """Certified [min, max] over every input of a key's unnormalised weight: exp of its score
    minus the reference's (softmax) or sigmoid of its score (sigmoid_norm), from the exponents'
    bounds over the whole content box (``branch``'s affine majorants)."""
    box = (-np.ones((1, n)), np.ones((1, n)))
    e_hi, e_lo = float(branch.exponent_upper(up, *box).ub[0]), float(branch.exponent_lower(lo, *box).ub[0])
    return replay.weight_ends(kind, e_lo, e_hi)


def _shares(w_lo: np.ndarray, w_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on a_k = w_k / sum_m w_m from w_lo <= w <= w_hi: each key at its own extreme, the
    others at the opposite ends (outward rounded: a float sum of K terms errs by < K u relative)."""
    K = len(w_lo)
    lo, hi = np.zeros(K), np.ones(K)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(K):
            others_hi = np.delete(w_hi, k).sum() * (1 + K * 2.0 ** -52)
            others_lo = np.delete(w_lo, k).sum() * (1 - K * 2.0 ** -52)
            if w_lo[k] > 0 and others_hi < np.inf:
                lo[k] = _iv_quotient(w_lo[k], w_lo[k], others_hi, lower=True)
            if w_hi[k] < np.inf and others_lo > 0:
                hi[k] = min(1.0, _iv_quotient(w_hi[k], w_hi[k], others_lo, lower=False))
    return lo, hi


def key_bounds(kind: str, M: np.ndarray, z: affine.Forms, i: int, bos_low: float = 0.0,
               bos_high: float = 1.0, along=None, joint: bool = False,
               joint_nodes: int = joint_weights.NODES) -> tuple[np.ndarray, np.ndarray]:
    """Per key k = 0..i of query i: certified bounds lo_k <= a_ik <= hi_k from the keys' weight
    ranges over every input, tightened by a certified BOS mass bos_low <= a_i0 <= bos_high.
    Softmax takes the best of two references (BOS, and the keys' centre, which removes the shift
    the query's content gives every content key alike) and, with ``joint``, the bounds searched
    jointly over the query's content (``joint_weights``, ``joint_nodes`` boxes per search)."""
    n = z.A.shape[1] - 3
    refs = [scores.bos_reference(z), scores.key_centre(z, i)] if kind == "softmax" else [None]
    joint = joint and kind == "softmax"
    lo, hi = np.zeros(i + 1), np.ones(i + 1)
    for ref in refs:
        ex = scores.key_exponents(M, z, i, ref, along)
        if joint and ref is refs[0]:  # the BOS-relative exponents, searched jointly over the query's content
            j_lo, j_hi = joint_weights.key_weight_bounds(ex, n, _ExpSum, SEARCH_RTOL, joint_nodes)
            lo, hi = np.maximum(lo, j_lo), np.minimum(hi, j_hi)
        ranges = [_weight_range(kind, up, down, n) for up, down in ex]
        if ref is not None and ref is refs[0]:
            ranges[0] = (1.0, 1.0)  # BOS minus itself: exactly 0
        r_lo, r_hi = _shares(np.array([r[0] for r in ranges]), np.array([r[1] for r in ranges]))
        lo, hi = np.maximum(lo, r_lo), np.minimum(hi, r_hi)
    lo[0], hi[0] = max(lo[0], bos_low), min(hi[0], bos_high)
    hi[1:] = np.minimum(hi[1:], (1 - bos_low) * (1 + affine.RELATIVE_SLACK))
    return lo, hi


def _reusable(layer: int, case: str) -> bool:
    """Whether query i's figures are the same for every trigger position of its case: before the
    trigger (causal: stream i depends on tokens 1..i only, all content tokens), and at layer 0 in
    every case (its keys are the tokens themselves and only their counts matter)."""
    return case == "before" or (layer == 0 and case != "trigger")


def central_weights(kind: str, M: np.ndarray, z: affine.Forms, i: int) -> np.ndarray:
    """[i + 1] the head's weights at query i of the stream's centre (the forms' constants): the
    coefficients ``centred.mixture`` writes the mixture around (any with sum 1 are sound)."""
    s = z.b[:i + 1] @ M.T @ z.b[i]
    if kind == "softmax":
        e = np.exp(s - s.max())
    else:
        e = 1 / (1 + np.exp(-np.clip(s, -700, 700)))
    return e / e.sum()


def _output(kind: str, M: np.ndarray, w: affine.Forms, z: affine.Forms, i: int, bos_low: float, bos_high: float,
            linear: bool, along, recording: bool, joint: bool = False,
            joint_nodes: int = joint_weights.NODES) -> tuple[tuple, directional.Mixture | None]:
    """A head's output form at query i and, when ``recording``, its identity for ``directional``
    (per coordinate the narrower of the box and centred mixtures). Otherwise per coordinate the
    box mixture or, with ``linear``, the narrowest of the box, centred and linearised mixtures."""
    box = key_bounds(kind, M, z, i, bos_low, bos_high, along, joint, joint_nodes)
    if recording:
        return directional.mixture(w, i, *box, central_weights(kind, M, z, i))
    m = central_weights(kind, M, z, i) if linear else None
    form = centred.mixture(w, i, *box, m)
    if linear and kind == "softmax":
        form = centred.narrower(form, linear_softmax.output(M, w, z, i, box)[:3])[0]
    return form, None


def layer_step(kind: str, maps: list[heads.Head], z: affine.Forms, j: int, layer: int = 0, memo: dict | None = None,
               need_output: bool = True, nodes: int = QUERY_NODES, linear: bool = False,
               record: directional.Record | None = None, joint: bool = False,
               joint_nodes: int = joint_weights.NODES) -> tuple[affine.Forms | None, list[np.ndarray]]:
    """One layer on the stream forms of trigger position j: the layer's output forms (None without
    ``need_output``) and per head the certified lower bounds of a_i0 at every position (NaN at BOS
    and the trigger). ``memo`` carries the figures that hold for every j (``_reusable``) from one
    trigger position to the next: ("bound", layer, head, i, case) -> certified BOS bound (lower; at
    the trigger upper), ("output", layer, head, i) -> the head's output form at i before the trigger.
    ``record`` (``directional``): the layers below are read along directions, and this layer's
    mixtures are recorded for the layers above. ``joint``: the per-key weight bounds also searched
    jointly over the query's content (``joint_weights``, ``joint_nodes`` boxes per search)."""
    memo = {} if memo is None else memo
    along = None
    if record is not None and layer > 0:
        along = directional.Cached(record, layer)
    L, d, N = z.A.shape
    out = affine.Forms(np.zeros((L, d, N)), np.zeros((L, d)), np.zeros((L, d))) if need_output else None
    lows = []
    for h, hm in enumerate(maps):
        M = hm.M
        w = affine.linear(hm.V, z) if need_output else None  # value images w_k = V z_k
        if record is not None and need_output:
            record.V[(layer, h)], record.values[(layer, h)] = hm.V, directional.Values.of(w)
        o = affine.Forms(np.zeros((L, d, N)), np.zeros((L, d)), np.zeros((L, d)))
        low = np.full(L, np.nan)
        for i in range(1, L):
            case = "trigger" if i == j else ("before" if i < j else "after")
            bound = memo.get(("bound", layer, h, i, case))
            if bound is None:
                bound = 1.0 if i == j else sink_bound(kind, M, z, i, nodes, along)[0]
                if _reusable(layer, case):
                    memo[("bound", layer, h, i, case)] = bound
            bos_low, bos_high = (0.0, bound) if i == j else (bound, 1.0)
            if i != j:
                low[i] = bos_low
            if need_output:
                form, mix = memo.get(("output", layer, h, i), (None, None)) if case == "before" else (None, None)
                if form is None:
                    form, mix = _output(kind, M, w, z, i, bos_low, bos_high, linear, along, record is not None, joint,
                                        joint_nodes)
                    if case == "before":
                        memo[("output", layer, h, i)] = form, mix
                if record is not None:
                    record.mixtures[(layer, h, i)] = mix
                o.A[i], o.b[i], o.r[i] = form
        if need_output:
            o.b[0], o.r[0] = w.b[0], w.r[0]  # query 0 sees only BOS: a_00 = 1
            out = affine.add(out, o)
        lows.append(low)
    return out, lows


def certify_stack(net: reference.Network, L: int, exact_first: bool = True, nodes: int = QUERY_NODES,
                  linear: bool = False, along: bool = False, joint: bool = False,
                  joint_nodes: int = joint_weights.NODES) -> dict[str, Any]:
    """Per layer and head: the certified minimum BOS mass over every input and non-trigger query
    (``exact_first``: layer 0's from the exact single-layer certificate, else from the same search
    as the deeper layers; ``along``: the deeper layers read their streams' remainders along
    directions, ``directional``; ``joint``: every head's per-key weight bounds also searched jointly
    over the query's content, ``joint_weights``, ``joint_nodes`` boxes per search; softmax only,
    ignored otherwise)."""
    heads.check_kind(net.kind)
    joint = joint and net.kind == "softmax"
    start, cpu = time.perf_counter(), time.process_time()
    d = net.d
    per = [[np.full(L, np.inf) for _ in range(layer.heads)] for layer in net.layers]
    memo: dict = {}
    if exact_first:
        for h in range(net.layers[0].heads):
            memo.update({("bound", 0, h, q["position"], q["case"]): q["certified"]
                         for q in sink.certify_head(net, L, 0, h)["queries"]})
    maps = [[heads.head_maps(net, n, h) for h in range(layer.heads)] for n, layer in enumerate(net.layers)]
    last = len(net.layers) - 1
    for j in range(2, L):
        z = affine.inputs(d, L, j)
        record = directional.Record(residual=net.residual) if along else None
        for n in range(len(net.layers)):
            if record is not None:
                record.streams.append(z)
            out, lows = layer_step(net.kind, maps[n], z, j, n, memo, need_output=n < last, nodes=nodes,
                                     linear=linear, record=record, joint=joint, joint_nodes=joint_nodes)
            for h, low in enumerate(lows):
                per[n][h] = np.fmin(per[n][h], low)
            if n < last:
                z = affine.add(z, out) if net.residual else out
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
            "sink_level": SINK_LEVEL, "method": "affine forms in the contents, per trigger position"
            + (", linearised mixtures" if linear and not along else "")
            + (", centred mixtures with remainders read along directions" if along else "")
            + (f", per-key weights searched jointly over the query's content ({joint_nodes} boxes a search)"
               if joint else ""),
            "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}
