"""Worst-case max-abs error eta of a single head over EVERY input.

eta_up, a certified upper bound, is the largest of three bounds (each over every input):

- BOS query: the output is u_0 = V e_0 exactly, so its error is ||V e_0||_inf (exact Fractions).
- Non-trigger query i (target 0): coordinate r of the output is z_0 + (1 - a_i0)(p - z_0), where
  z_0 = (V e_0)_r and p, the weighted mean of the non-BOS values, lies in [p-, p+], the range of
  (V x)_r over the token types the query sees (support function of the content box). It is linear
  in (1 - a_i0) in [0, 1 - a_lo] (a_lo: the certified minimum BOS mass of ``sink``) and in p, so
  its absolute value is at most the largest of |z_0|, |z_0 + (1 - a_lo)(p+- - z_0)|.
- Trigger query j: error_r = a_0 z_0 + sum_{k=1..j} (a_k V_r - e_r / j) . x_k. Each key's
  unnormalised weight is enclosed from its score range over the query's content box (scores taken
  relative to the content keys' content-free part g_{d-1}(c), which removes the query-content
  shift common to all keys: softmax is shift-invariant); for fixed weights each key's term is its
  support function over its token box, convex in its weight, and the normalised weights range over
  a convex set whose extreme points come from the vertices of the weight box, so the worst case is
  an enumeration over BOS / own key at an end and m = 0..j-1 content keys high (``trigger_bound_box``).
  What is relaxed: a key's weight and its content vary independently, and the query box is
  covered by sub-boxes (``TRIGGER_SPLITS`` bisections of the worst one).

eta_lo, a lower bound, is the error of a witness input found by a float search (candidate sign
patterns from the bound's maximisers, random vertices, greedy single-coordinate flips) and
replayed through the exact evaluator in interval arithmetic (``replay``): an input whose error
is at least eta_lo certainly exists.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from constructions import balls, reference, task
from constructions.numbers import fraction_up

from ..arithmetic import branch, heads, replay

TRIGGER_SPLITS = 64  # bisections of the worst (trigger position, query sub-box) in all


def _token_range(V: list[list[Fraction]], r: int, flag: int, d: int) -> tuple[Fraction, Fraction]:
    """min and max of (V x)_r over tokens x with ``flag`` and content in [-1, 1]^n (exact)."""
    spread = sum((abs(V[r][c]) for c in range(task.CONTENT_START, d - 1)), Fraction(0))
    return V[r][flag] - spread, V[r][flag] + spread


def value_ranges(h: heads.Head) -> list[tuple[Fraction, tuple[Fraction, Fraction], tuple[Fraction, Fraction]]]:
    """Per output coordinate r: z_0 = (V e_0)_r, the range of (V x)_r over content tokens, and over
    content and trigger tokens together (exact; computed once per head)."""
    V, d = [list(r) for r in h.V_exact], h.d
    out = []
    for r in range(d):
        content = _token_range(V, r, task.content_flag(d), d)
        trig = _token_range(V, r, task.TRIGGER_FLAG, d)
        out.append((V[r][task.BOS_FLAG], content, (min(content[0], trig[0]), max(content[1], trig[1]))))
    return out


def nontrigger_bound(h: heads.Head, a_lo: float, after: bool, ranges=None) -> Fraction:
    """Certified bound on |error| at a non-trigger query whose BOS mass is >= a_lo."""
    gap = 1 - heads.exact(a_lo)
    worst = Fraction(0)
    for z0, content, both in ranges or value_ranges(h):
        lo, hi = both if after else content
        worst = max(worst, abs(z0), abs(z0 + gap * (lo - z0)), abs(z0 + gap * (hi - z0)))
    return worst


RANGE_WORK = 300_000  # boxes x n per whole-box range search (its bound is certified either way)


def _trigger_exponents(h: heads.Head) -> dict[str, tuple[heads.Exponent, heads.Exponent]]:
    """(lower, upper) exponents of the BOS, content-key and own-key score weights at a trigger
    query, as functions of its content: relative to g_{d-1}(c) for softmax (absolute for
    sigmoid_norm, whose weights are sigmoid of scores)."""
    d, f = h.d, task.TRIGGER_FLAG
    ref = task.content_flag(d) if h.kind == "softmax" else None
    return {
        "bos": (heads.score_exponent(h, f, task.BOS_FLAG, 0, False, ref),) * 2,
        "content": (heads.score_exponent(h, f, task.content_flag(d), -1, False, ref),
                    heads.score_exponent(h, f, task.content_flag(d), +1, False, ref)),
        "own": (heads.score_exponent(h, f, None, 0, False, ref),) * 2,
    }


def whole_box_ranges(h: heads.Head, max_nodes: int | None = None) -> dict[str, tuple[float, float]]:
    """Certified ranges of the three exponents over the WHOLE content box, each by the branch and
    bound (``branch.maximise`` of exp(+-E)): the content key's best score a + ||b + K c||_1 is
    convex in c, so the search splits into faces and closes at its maximising vertex; the affine
    majorant of one box alone would give the triangle inequality instead (about twice as wide on
    trained heads). Every sub-box's range is intersected with these."""
    n = h.n
    max_nodes = max_nodes or max(1_000, RANGE_WORK // n)
    out = {}
    for k, (low, high) in _trigger_exponents(h).items():
        top = _log_up(branch.maximise(branch.ExpSum([(1.0, high)], +1), n, max_nodes=max_nodes).upper)
        if low.s == -1 and high.s == +1 and low.a == high.a == 0 and not low.p.any() and not high.p.any():
            out[k] = (-top, top)  # the content key relative to its own flag: +-||b + K c||_1, one search
            continue
        bottom = branch.maximise(branch.ExpSum([(1.0, low)], -1), n, max_nodes=max_nodes).upper
        out[k] = (_log_down(-bottom), top)
    return out


def _log_up(x: float) -> float:
    """A float >= log(x) (an Arb ball's upper end, rounded up)."""
    return _log_ends(x)[1]


def _log_down(x: float) -> float:
    """A float <= log(x) (-inf unless x > 0)."""
    return _log_ends(x)[0] if x > 0 else -np.inf


def _log_ends(x: float) -> tuple[float, float]:
    """Floats (lo, hi) enclosing log(x): the ends of Arb's ball, rounded outward."""
    with balls.precision():
        y = balls.log(x)
    return balls.down(y), balls.up(y)


def _exponent_ranges(h: heads.Head, lo: np.ndarray, hi: np.ndarray, whole: dict | None = None):
    """Ranges over the query box [lo, hi] of the exponents of ``_trigger_exponents`` (the affine
    majorants of ``branch``, intersected with the whole-box ranges ``whole`` when given)."""
    out = {k: (float(branch.exponent_lower(a, lo, hi).ub[0]), float(branch.exponent_upper(b, lo, hi).ub[0]))
           for k, (a, b) in _trigger_exponents(h).items()}
    if whole:
        out = {k: (max(a, whole[k][0]), min(b, whole[k][1])) for k, (a, b) in out.items()}
    return out


def raw_weights(h: heads.Head, lo: np.ndarray, hi: np.ndarray, whole: dict | None = None) -> dict[str, tuple[float, float]]:
    """Enclosures [w-, w+] (floats rounded outward) of the unnormalised weights of BOS, a content
    key and the trigger's own key at trigger queries whose content lies in [lo, hi]."""
    return {k: replay.weight_ends(h.kind, a, b)
            for k, (a, b) in _exponent_ranges(h, lo[None], hi[None], whole).items()}


def _support(V: np.ndarray, a: np.ndarray, j: int, flag: int, lo: np.ndarray, hi: np.ndarray, sign: int) -> np.ndarray:
    """max over tokens x (``flag``, content in [lo, hi]) of sign (a V_r - e_r / j) . x, for every
    weight a [C] and coordinate r: [C, d]."""
    d = V.shape[0]
    rows = a[:, None, None] * V[None] - np.eye(d)[None] / j  # [C, r, feature]
    C = slice(task.CONTENT_START, d - 1)
    content = np.maximum(sign * rows[:, :, C] * lo, sign * rows[:, :, C] * hi).sum(axis=-1)
    return sign * rows[:, :, flag] + content


def trigger_bound_box(h: heads.Head, j: int, lo: np.ndarray, hi: np.ndarray, whole: dict | None = None) -> float:
    """Certified bound on |error| at trigger query j when its content lies in [lo, hi].

    Relaxation: each key's weight ranges over its enclosure independently of its own content.
    For fixed weights a the error in coordinate r is at most sum_k phi_k(a_k) with phi_k(a) the
    support function of sign (a V_r - e_r / j) over key k's token box: convex in a. The weights
    a = w / sum w with w in a box form a convex set (a linear-fractional image of the box) whose
    extreme points are images of the box's vertices, so the maximum of the convex sum is at a
    vertex: BOS and the own key at an end of their ranges and m of the j - 1 interchangeable
    content keys at the top of theirs (m = 0..j-1). Float64 with a rounding allowance."""
    return float(_box_rows(h, j, lo, hi, whole).max()) + _box_allowance(h, j)


def trigger_bound_rows(h: heads.Head, j: int, lo: np.ndarray, hi: np.ndarray, whole: dict | None = None) -> dict[tuple[int, int], float]:
    """``trigger_bound_box`` per row of the error: {(coordinate r, sign s): bound on s E_r}."""
    rows, allowance = _box_rows(h, j, lo, hi, whole), _box_allowance(h, j)
    return {(r, s): float(rows[i, r]) + allowance for i, s in enumerate((1, -1)) for r in range(h.d)}


def _box_rows(h: heads.Head, j: int, lo: np.ndarray, hi: np.ndarray, whole: dict | None) -> np.ndarray:
    """[sign (+1, -1), coordinate]: the box relaxation's bound before its rounding allowance."""
    V, d = h.V, h.d
    w = raw_weights(h, lo, hi, whole)
    combos = np.array([(wb, m, wo) for m in range(j) for wb in w["bos"] for wo in w["own"]])
    wb, m, wo = combos[:, 0], combos[:, 1], combos[:, 2]
    c_lo, c_hi = w["content"]
    D = wb + m * c_hi + (j - 1 - m) * c_lo + wo
    ones = np.ones(h.n)
    out = []
    for sign in (+1, -1):
        bos = sign * (wb / D)[:, None] * V[None, :, task.BOS_FLAG]
        up = _support(V, c_hi / D, j, task.content_flag(d), -ones, ones, sign)
        down = _support(V, c_lo / D, j, task.content_flag(d), -ones, ones, sign)
        own = _support(V, wo / D, j, task.TRIGGER_FLAG, lo, hi, sign)
        total = bos + m[:, None] * up + (j - 1 - m)[:, None] * down + own
        out.append(total.max(axis=0))
    return np.array(out)


def _box_allowance(h: heads.Head, j: int) -> float:
    return 64 * (4 * h.d + 4 * j) * heads.UNIT_ROUNDOFF * (1 + float(np.abs(h.V).sum(axis=1).max())) * (j + 2)


def trigger_bounds(h: heads.Head, L: int, splits: int = TRIGGER_SPLITS) -> dict[int, float]:
    """Per trigger position j, a bound over its whole query box; ``splits`` bisections (widest
    coordinate) go to whichever sub-box of any j has the largest bound, so the work goes where
    eta_up is decided. Each j's bound is the largest over its leaves."""
    n = h.n
    whole = whole_box_ranges(h)
    leaves = [(trigger_bound_box(h, j, -np.ones(n), np.ones(n), whole), j, -np.ones(n), np.ones(n)) for j in range(2, L)]
    for _ in range(splits):
        leaves.sort(key=lambda t: t[0], reverse=True)
        _, j, lo, hi = leaves.pop(0)
        k = int(np.argmax(hi - lo))
        mid = (lo[k] + hi[k]) / 2
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[k], right_lo[k] = mid, mid
        leaves += [(trigger_bound_box(h, j, lo, left_hi, whole), j, lo, left_hi),
                   (trigger_bound_box(h, j, right_lo, hi, whole), j, right_lo, hi)]
    out: dict[int, float] = {}
    for b, j, _, _ in leaves:
        out[j] = max(out.get(j, b), b)
    return out


def certified_eta(worst) -> float:
    """The largest part (an exact Fraction, or a float bound) as a float rounded up: eta_up."""
    return fraction_up(Fraction(worst)) if isinstance(worst, Fraction) else float(worst)


def eta_upper(h: heads.Head, L: int, sink_rows: list[dict], splits: int = TRIGGER_SPLITS) -> dict[str, Any]:
    """eta_up and where it is attained (BOS query, a non-trigger query, or a trigger position)."""
    V = [list(r) for r in h.V_exact]
    parts = {"bos query": max(abs(V[r][task.BOS_FLAG]) for r in range(h.d))}
    ranges = value_ranges(h)
    for row in sink_rows:
        if row["case"] != "trigger":
            parts[f"query {row['position']} {row['case']}"] = nontrigger_bound(h, row["certified"], row["case"] == "after",
                                                                              ranges)
    for j, b in trigger_bounds(h, L, splits).items():
        parts[f"trigger {j}"] = b
    where = max(parts, key=parts.get)
    return {"eta_up": certified_eta(parts[where]), "attained_by": where,
            "by_part": {k: float(v) for k, v in parts.items()}}


# ----------------------------------------------------------------------------------------
# eta_lo: a witness input, searched in float64 and replayed exactly (``witness``).


def eta_lower(net: reference.Network, h: heads.Head, L: int, seed: int = 0) -> dict[str, Any]:
    """The best typed witness over every query, replayed exactly: eta_lo (``witness.eta_lower``)."""
    from . import witness

    return witness.eta_lower(net, h, L, seed)
