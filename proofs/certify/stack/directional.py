"""Directional remainders: how far a stream's remainder can reach along a given direction,
bounded by substituting back through the mixtures that made it.

The affine forms (``affine``) keep one interval per stream coordinate: z_p = A_p u + b_p + e_p,
|e_p| <= r_p. A deeper head reads the remainder only along a few directions (its score's
g . e_p with g = M^T x or M y, ``scores``), and bounding g . e_p by |g| . r_p lets every coordinate
take its worst value at once, each by its own choice of the attention weights. Here g . e_p is
bounded as one quantity. With ``affine_stack.certify_stack(along=True)`` every head output is, per
coordinate, the narrower of the centred mixture around the weights at the stream's centre m
(``centred.centred``) and the box form's knapsack (``affine.mixture``, the same identity around
m = (1 - sum_{k>=1} lo_k, lo_1, ...)), each an identity in the weights' deviations:

    o_p = sum_k m_k w_k + sum_k delta_k w_k,   sum_k delta_k = 0,   delta in a box,

its constant offset by ``shift``. So along g the remainder of o_p is the weights' constant part
sum_k m_k (V^T g) . e_k, passed back to the keys' own remainders one layer down (directions add
per position: CROWN's back-substitution), plus the deviations' term sum_k delta_k (g . w_k),
bounded here as one number per direction and form by the Lagrangian dual of
``centred.dual_bound`` over the values' ranges ALONG g (their contents' reach ||A_k^T g||_1, their
remainders by |g|), with its sign kept: the terms add as intervals. Layer 0's inputs are exact,
so what reaches them adds nothing.

Sound for the forms recorded; every float rounding (the forms' own allowances, the directions'
products, the shifts) is covered by ``SLACK`` times the magnitudes involved, at least 100 times
the forms' own allowances (``affine.RELATIVE_SLACK`` times at most a few hundred terms), and the
caller keeps the smaller of this bound and |g| . r_p. Tested against every grid input of tiny
stacks and against the exact supremum of a linear record (``tests/test_directional.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arithmetic import affine, centred
from ..arithmetic.affine import Forms

SLACK = 1e-7  # relative allowance for every float rounding on the way (>= 100 x the forms' own)


@dataclass
class Group:
    """The coordinates (``mask``) of one head output at one query enclosed by one form, and that
    form's identity: o = sum_k m_k w_k + sum_k delta_k w_k, the form's constant offset by ``shift``
    from sum_k m_k wb_k."""

    mask: np.ndarray  # [d] bool
    m: np.ndarray  # [K] the weights' constant part
    d_lo: np.ndarray  # [K] delta's box
    d_hi: np.ndarray
    eps: float  # |sum_k delta_k| <= eps
    shift: np.ndarray  # [d]


@dataclass
class Mixture:
    """A head's output at one query: its groups and the size of what the forms were built from."""

    groups: list[Group]
    size: np.ndarray  # [d] magnitudes for the rounding allowance


@dataclass
class Record:
    """What the backward pass needs of one input class (one trigger position): the stream forms
    entering each layer, each head's value map and value forms, and every head output's groups."""

    residual: bool = True  # the stream entering layer l + 1 contains the one entering layer l
    streams: list[Forms] = field(default_factory=list)  # streams[l]: the stream entering layer l
    V: dict = field(default_factory=dict)  # (l, h) -> [d, d]
    values: dict = field(default_factory=dict)  # (l, h) -> Values of w = V z
    mixtures: dict = field(default_factory=dict)  # (l, h, p) -> Mixture


def _group(mask: np.ndarray, w: Forms, i: int, lo: np.ndarray, hi: np.ndarray, m: np.ndarray, b: np.ndarray) -> Group:
    """The identity of a form written around m with the constant b (``centred.centred``'s; with
    m = (1 - sum_{k>=1} lo_k, lo_1, ...) also ``affine.mixture``'s): its delta box and eps."""
    m, d_lo, d_hi, eps = centred.deviation_box(i, lo, hi, m)
    return Group(mask, m, d_lo, d_hi, eps, b - m @ w.b[:i + 1])


def mixture(w: Forms, i: int, lo: np.ndarray, hi: np.ndarray, m: np.ndarray) -> tuple[tuple, Mixture]:
    """A head's output form at query i and its identity: per coordinate the narrower of the centred
    mixture around m (``centred.centred``) and the box form's knapsack (``affine.mixture``), as
    ``centred.mixture`` picks."""
    box, cen = affine.mixture(w, i, lo, hi), centred.centred(w, i, lo, hi, m)
    form, pick = centred.narrower(box, cen)
    rest = np.r_[0.0, np.clip(lo[1:i + 1], 0.0, 1.0)]  # the box form's m, with m_0 = 1 - sum_{k>=1} lo_k
    groups = [_group(mask, w, i, lo, hi, around, b) for mask, around, b in ((pick, m, cen[1]), (~pick, rest, box[1]))
              if mask.any()]
    A, b, r = form
    size = np.abs(b) + np.abs(A).sum(axis=1) + r + 3 * w.magnitude()[:i + 1].sum(axis=0)
    return form, Mixture(groups, size)


@dataclass
class Values:
    """A head's value forms w = V z with what the backward pass reads of them many times over."""

    w: Forms
    flat: np.ndarray  # [L, N, d]: A transposed, so that g . (A_k u) for every k is one product
    magnitude: np.ndarray  # [L, d]

    @classmethod
    def of(cls, w: Forms) -> "Values":
        return cls(w, np.ascontiguousarray(w.A.transpose(0, 2, 1)), w.magnitude())

    def along_contents(self, K: int, g: np.ndarray) -> np.ndarray:
        """[K, D] ||A_k^T g||_1 for the keys k < K: how far g . (A_k u) reaches over the content box
        (by causality only the columns of tokens 1..K-1 can be non-zero; the others are summed too
        when they are not)."""
        L, N, d = self.flat.shape
        n = N // (L - 1)
        cols = (K - 1) * n
        head = np.abs(self.flat[:K, :cols].reshape(K * cols, d) @ g.T).reshape(K, cols, len(g)).sum(axis=1)
        rest = np.abs(self.flat[:K, cols:]).sum(axis=1) @ np.abs(g).T  # zero by causality; kept sound
        return head + rest


def _deviations(grp: Group, vals: Values, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[D] lower and upper bounds on sum_k delta_k (g . w_k) - g . shift per direction g [D, d]
    (already masked to the group): each value's range along g is its centre's projection +- its
    contents' reach along g and its remainder's radii weighted by |g|."""
    K, w = len(grp.m), vals.w
    absg = np.abs(g).T  # [d, D]
    centre = w.b[:K] @ g.T  # [K, D]
    reach = vals.along_contents(K, g) + w.r[:K] @ absg + SLACK * (vals.magnitude[:K] @ absg)
    up = centred.dual_bound(centre - reach, centre + reach, grp.d_lo, grp.d_hi, grp.eps)
    down = centred.dual_bound(-(centre + reach), -(centre - reach), grp.d_lo, grp.d_hi, grp.eps)
    s = g @ grp.shift
    return -down - s, up - s


def _pass_down(passed: dict[int, np.ndarray], m: np.ndarray, back: np.ndarray) -> None:
    """The weights' constant part: m_k (V^T g) . e_k joins key k's directions one layer down."""
    for k in range(len(m)):
        passed[k] = passed[k] + m[k] * back if k in passed else m[k] * back


def backward(rec: Record, layer: int, start: dict[int, np.ndarray]) -> np.ndarray:
    """[D] per objective t a bound on |sum_p start[p][t] . e_p|, e_p the remainder of the forms of
    the stream entering ``layer`` at position p (``rec.streams[layer]``); ``start`` maps positions
    to directions [D, d], row t of every position belonging to objective t. The deviations' terms
    are summed with their signs (each in [lo, hi], so their sum in [sum lo, sum hi]); the
    allowances for rounding by absolute values."""
    low, high, total = backward_terms(rec, layer, start)
    return (np.maximum(high.sum(axis=0), -low.sum(axis=0)) + total) * (1 + SLACK)


def backward_terms(rec: Record, layer: int, start: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``backward``'s parts: the deviations' terms per layer they arise in, lower and upper ends
    [layer, D], and the rounding allowances [D] (where a bound is lost, layer by layer)."""
    dirs = {p: np.array(g, dtype=float) for p, g in start.items()}
    D = len(next(iter(dirs.values())))
    total = np.zeros(D)  # symmetric allowances
    low, high = np.zeros((layer, D)), np.zeros((layer, D))  # the deviations' terms, signed
    for l in range(layer - 1, -1, -1):
        after_mag, before_mag = rec.streams[l + 1].magnitude(), np.cumsum(rec.streams[l].magnitude(), axis=0)
        passed = {k: v.copy() for k, v in dirs.items()} if rec.residual else {}  # e^{l+1}_k contains e^l_k
        heads = sorted(h for (ll, h) in rec.V if ll == l)
        for q, gq in dirs.items():
            absg = np.abs(gq)
            total += SLACK * (absg @ (after_mag[q] + 1.0))  # the sums' rounding
            for h in heads:
                V, vals = rec.V[(l, h)], rec.values[(l, h)]
                wsize = vals.magnitude
                # the directions' rounding, times what they multiply
                total += SLACK * ((absg @ np.abs(V)) @ before_mag[q])
                if q == 0:  # BOS's output is its own value: o_0 = w_0 exactly
                    _pass_down(passed, np.ones(1), gq @ V)
                    total += SLACK * (absg @ (wsize[0] + 1.0))
                    continue
                mix = rec.mixtures[(l, h, q)]
                total += SLACK * (absg @ (mix.size + 1.0))
                for grp in mix.groups:
                    gG = gq * grp.mask
                    _pass_down(passed, grp.m, gG @ V)  # V^T g as rows
                    lo, hi = _deviations(grp, vals, gG)
                    low[l], high[l] = low[l] + lo, high[l] + hi
        dirs = passed
    # layer 0's inputs are exact: what reached them adds nothing
    return low, high, total


def remainder_bounds(rec: Record, layer: int, objectives: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """[D] per objective (position p, direction g [d]) the smaller of ``backward`` and |g| . r_p:
    both bound |g . e_p|."""
    D, d = len(objectives), len(objectives[0][1])
    start: dict[int, np.ndarray] = {}
    for t, (p, g) in enumerate(objectives):
        start.setdefault(p, np.zeros((D, d)))[t] = g
    plain = np.array([np.abs(g) @ rec.streams[layer].r[p] for p, g in objectives])
    return np.minimum(backward(rec, layer, start), plain)


class Cached:
    """``remainder_bounds`` of one layer's stream, each (position, direction) computed once: a
    query's three score searches (its BOS mass, and the keys' weights against two references) ask
    for the same key directions."""

    def __init__(self, rec: Record, layer: int):
        self.rec, self.layer, self.known = rec, layer, {}

    def __call__(self, objectives: list[tuple[int, np.ndarray]]) -> np.ndarray:
        keys = [(p, g.tobytes()) for p, g in objectives]
        new, seen = [], set()
        for key, obj in zip(keys, objectives):
            if key not in self.known and key not in seen:
                new.append((key, obj))
                seen.add(key)
        if new:
            for (key, _), bound in zip(new, remainder_bounds(self.rec, self.layer, [o for _, o in new])):
                self.known[key] = float(bound)
        return np.array([self.known[key] for key in keys])
