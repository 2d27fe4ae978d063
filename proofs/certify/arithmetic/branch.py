"""Certified branch and bound over the query's content box [-1, 1]^n.

It maximises Phi(c) = sign * sum_T w_T * phi_T(c) where each phi_T is exp(E_T(c)) (softmax) or
sigmoid(F_T(c)) / sigmoid(G(c)) (sum-normalised sigmoid), with E, F, G of the form of
``heads.Exponent``. Over a sub-box with centre c0 and radii r:

- Affine majorant. Every |l_r(c)| (l_r = b_r + K_r c) whose range [l-, l+] crosses 0 is bounded
  above by its chord (exact at both ends, by convexity), otherwise it is +-l_r exactly; -|l| is
  bounded above by -sigma l for any |sigma| <= 1 (a subgradient); the quadratic is its tangent at
  c0 plus the remainder sum_k max(S_kk, 0) r_k^2 + sum_{k != l} |S_kl| r_k r_l. So
  E(c) <= A0 + g . (c - c0) on the box and max_box E <= A0 + |g| . r: an upper bound that is exact
  when E is affine on the box.
- Monotonicity. The partial derivative dE/dc_k lies in an interval computed from the same pieces
  (sign l_r is constant where l_r does not cross 0). When for every term it has one strict sign,
  Phi is monotone in c_k on the box and its maximum has c_k at the matching end: the box is
  reduced to that face (the maximum over the box is unchanged). When the maximiser is a vertex
  this closes the search exactly.
- Branching on the free coordinate with the widest derivative interval times radius.

Every float bound carries the exponent's ``slack`` (a-priori rounding allowance); pruning keeps
a relative margin of 1e-12, far above the error of the float exponential (libm: < 1 ulp). The
final upper bound is recomputed in Arb ball arithmetic over the open boxes, so the
figure is max(that, the best value found): certified.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from constructions import balls
from .heads import Exponent

PRUNE_MARGIN = 1e-12  # relative; covers the float exponential's error (< 1e-15 in practice)


@dataclass
class ExponentBounds:
    ub: np.ndarray  # [N] max of E over each box (rigorous, slack included)
    centre: np.ndarray  # [N] value of the affine majorant at the centre
    grad: np.ndarray  # [N, n] its gradient
    dlo: np.ndarray  # [N, n] partial derivative interval of E over each box
    dhi: np.ndarray


def exponent_upper(E: Exponent, lo: np.ndarray, hi: np.ndarray) -> ExponentBounds:
    """Upper bound of E over each box [lo, hi] ([N, n]) and its derivative intervals."""
    c0, r = (lo + hi) / 2, (hi - lo) / 2
    n = lo.shape[1]
    A0 = E.a + c0 @ E.p + np.einsum("ni,ij,nj->n", c0, E.S, c0)
    grad = E.p + 2 * c0 @ E.S
    dmid = grad.copy()
    absS, off, diag_pos, absK = E.abs_parts()
    drad = 2 * r @ absS
    rem = (diag_pos * r * r).sum(axis=1) + np.einsum("ni,ij,nj->n", r, off, r)
    if E.s != 0:
        l0 = E.b + c0 @ E.K.T  # [N, R]
        rho = r @ absK.T
        cross = np.abs(l0) < rho
        sign = np.where(l0 >= 0, 1.0, -1.0)
        ratio = np.where(cross, l0 / np.where(rho > 0, rho, 1.0), sign)
        if E.s > 0:  # |l| <= ratio * l + mu (chord; exact where l does not cross 0)
            coef, mu = ratio, np.where(cross, -(l0 - rho) * (1 + ratio), 0.0)
        else:  # -|l| <= -ratio * l (|ratio| <= 1: a subgradient of |.|)
            coef, mu = -ratio, np.zeros_like(l0)
        w = E.weights
        A0 = A0 + (coef * l0 + mu) @ w
        grad = grad + (coef * w) @ E.K
        dmid = dmid + E.s * (np.where(cross, 0.0, sign) * w) @ E.K
        drad = drad + (np.where(cross, 1.0, 0.0) * w) @ absK
    slack = E.slack()
    ub = A0 + (np.abs(grad) * r).sum(axis=1) + rem + slack
    return ExponentBounds(ub, A0, grad, dmid - drad - slack, dmid + drad + slack)


def exponent_lower(E: Exponent, lo: np.ndarray, hi: np.ndarray) -> ExponentBounds:
    """Lower bound of E over each box (as ``ub`` of the returned bounds, negated back)."""
    b = exponent_upper(E.negated(), lo, hi)
    return ExponentBounds(-b.ub, -b.centre, -b.grad, -b.dhi, -b.dlo)


# ----------------------------------------------------------------------------------------
# Objectives.


@dataclass
class Bound:
    ub: np.ndarray  # [N] upper bound of Phi over each box
    core: np.ndarray  # [N] the same bound without the rounding allowance: what splitting can reduce
    direction: np.ndarray  # [N, n] +-1: the vertex a candidate is taken at
    monotone: np.ndarray  # [N, n] +1 Phi increasing in c_k on the box, -1 decreasing, 0 unknown
    score: np.ndarray  # [N, n] how much each coordinate's width costs (for branching)
    exponents: np.ndarray  # [N, T] the per-term bounds used (for the interval recomputation)
    convex: np.ndarray | None = None  # [N, n] Phi certified convex along c_k on the box (None: nowhere)


@dataclass
class ExpSum:
    """Phi(c) = sign * sum_T w_T exp(E_T(c)) (softmax: E_T = key score - BOS score)."""

    terms: list[tuple[float, Exponent]]
    sign: int  # +1 maximise the sum, -1 minimise it

    def value(self, c: np.ndarray) -> np.ndarray:
        return self.sign * sum(w * np.exp(E.value(c)) for w, E in self.terms)

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> Bound:
        bounds = [(exponent_upper if self.sign > 0 else exponent_lower)(E, lo, hi) for _, E in self.terms]
        ws = [w for w, _ in self.terms]
        ub = self.sign * sum(w * np.exp(b.ub) for w, b in zip(ws, bounds))
        core = self.sign * sum(w * np.exp(b.ub - self.sign * E.slack()) for (w, E), b in zip(self.terms, bounds))
        pull = sum(w * np.exp(b.centre)[:, None] * b.grad for w, b in zip(ws, bounds))
        direction = np.where(self.sign * pull >= 0, 1.0, -1.0)
        inc = np.all([b.dlo > 0 for b in bounds], axis=0)
        dec = np.all([b.dhi < 0 for b in bounds], axis=0)
        monotone = self.sign * (inc.astype(float) - dec.astype(float))
        score = (hi - lo) * np.max([b.dhi - b.dlo for b in bounds], axis=0)
        return Bound(ub, core, direction, monotone, score, np.stack([b.ub for b in bounds], axis=1),
                     self._convex(bounds))

    def _convex(self, bounds: list[ExponentBounds]) -> np.ndarray | None:
        """Per box and coordinate k: is Phi convex along c_k on the box? For a positive sum of
        exp(E) it is when every term is: d2/dc_k2 exp(E) = exp(E) ((dE/dc_k)^2 + d2E/dc_k2) and
        d2E/dc_k2 = 2 S_kk plus, for s = +1, the kinks of the |.| terms (convex, so >= 0). So
        S_kk >= 0, or (dE/dc_k)^2 >= -2 S_kk everywhere on the box (from the certified derivative
        interval), suffices. Then the maximum over the box is on one of its two faces c_k = lo_k,
        c_k = hi_k: the search splits into faces there instead of halves."""
        if self.sign < 0 or any(E.s < 0 for _, E in self.terms):
            return None
        ok = None
        for (_, E), b in zip(self.terms, bounds):
            skk = np.diag(E.S)[None, :]
            sq = np.where((b.dlo > 0) | (b.dhi < 0), np.minimum(b.dlo ** 2, b.dhi ** 2), 0.0)
            term = (skk >= 0) | (sq * (1 - 1e-9) > -2 * skk + E.slack())
            ok = term if ok is None else ok & term
        return ok

    def certified(self, exponents: np.ndarray) -> float:
        """max over boxes of the bound, recomputed in Arb ball arithmetic (each ball's upper end,
        rounded up)."""
        best = -math.inf
        with balls.precision():
            for row in exponents:
                total = sum((balls.ball(w) * balls.exp(float(e)) for (w, _), e in zip(self.terms, row)),
                            balls.ball(0))
                best = max(best, balls.up(self.sign * total))
        return best


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


@dataclass
class SigmoidSum:
    """Phi(c) = sign * sum_T w_T sigmoid(F_T(c)) / sigmoid(G(c)) (sum-normalised sigmoid; G is
    the BOS score). Bounded term by term with F and G at their own extremes on the box."""

    terms: list[tuple[float, Exponent]]
    bos: Exponent
    sign: int

    def value(self, c: np.ndarray) -> np.ndarray:
        g = _log_sigmoid(self.bos.value(c))
        return self.sign * sum(w * np.exp(_log_sigmoid(F.value(c)) - g) for w, F in self.terms)

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> Bound:
        up = self.sign > 0
        G = (exponent_lower if up else exponent_upper)(self.bos, lo, hi)
        Fs = [(exponent_upper if up else exponent_lower)(F, lo, hi) for _, F in self.terms]
        logs = [_log_sigmoid(F.ub) - _log_sigmoid(G.ub) for F in Fs]
        ub = self.sign * sum(w * np.exp(x) for (w, _), x in zip(self.terms, logs))
        g = _log_sigmoid(G.ub + self.sign * self.bos.slack())
        core = self.sign * sum(w * np.exp(_log_sigmoid(F.ub - self.sign * E.slack()) - g)
                               for (w, E), F in zip(self.terms, Fs))
        pull = sum(w * (F.grad - G.grad) for (w, _), F in zip(self.terms, Fs))
        direction = np.where(self.sign * pull >= 0, 1.0, -1.0)
        score = (hi - lo) * (np.max([np.abs(F.grad) + F.dhi - F.dlo for F in Fs], axis=0) + np.abs(G.grad))
        return Bound(ub, core, direction, np.zeros_like(lo), score, np.stack([F.ub for F in Fs] + [G.ub], axis=1))

    def certified(self, exponents: np.ndarray) -> float:
        """max over boxes of the bound, recomputed in Arb ball arithmetic (upper ends, rounded up)."""
        def log_sigmoid(x):
            return -balls.log(1 + balls.exp(-balls.ball(float(x))))

        best = -math.inf
        with balls.precision():
            for row in exponents:
                g = log_sigmoid(row[-1])
                terms = zip(self.terms, row[:-1])
                total = sum((balls.ball(w) * balls.exp(log_sigmoid(e) - g) for (w, _), e in terms), balls.ball(0))
                best = max(best, balls.up(self.sign * total))
        return best


# ----------------------------------------------------------------------------------------
# The search.


@dataclass
class Result:
    upper: float  # certified: Phi(c) <= upper for every c in the box
    best: float  # Phi at ``witness`` (float64)
    witness: np.ndarray  # [n]
    nodes: int
    closed: bool  # the search finished: every box pruned, or within the tolerance up to the rounding allowance
    open_boxes: int = 0


def _reduce(obj, lo: np.ndarray, hi: np.ndarray, rounds: int = 4) -> tuple[np.ndarray, np.ndarray, Bound]:
    """Move every coordinate in which Phi is monotone on the box to its maximising end."""
    for _ in range(rounds):
        b = obj.bound(lo, hi)
        free = hi > lo
        inc, dec = (b.monotone > 0) & free, (b.monotone < 0) & free
        if not (inc.any() or dec.any()):
            return lo, hi, b
        lo = np.where(inc, hi, lo)
        hi = np.where(dec, lo, hi)
    return lo, hi, obj.bound(lo, hi)


def maximise(obj, n: int, rtol: float = 1e-9, max_nodes: int = 20_000, batch: int = 256) -> Result:
    """Certified maximum of ``obj`` over [-1, 1]^n: ``upper`` >= every value; ``best`` is
    attained at ``witness``. A box is split until its bound without the rounding allowance
    (``Bound.core``) is within ``rtol`` of ``best``: splitting cannot shrink the allowance, so
    such a box is retired (kept for the certified figure) rather than split on. The search stops
    when every box is pruned or retired (closed), or after ``max_nodes`` boxes."""
    best_c = np.zeros(n)
    best = float(obj.value(best_c[None])[0])
    heap: list = []  # (-ub, id); boxes kept in dicts
    boxes: dict[int, tuple] = {}  # lo, hi, exponents, core, branching score, convex coordinates
    counter = 0

    def push(lo, hi):
        nonlocal best, best_c, counter
        lo, hi, b = _reduce(obj, lo, hi)
        cand = np.where(b.direction > 0, hi, lo)
        for pts in (cand, (lo + hi) / 2):
            vals = obj.value(pts)
            k = int(np.argmax(vals))
            if vals[k] > best:
                best, best_c = float(vals[k]), pts[k].copy()
        for i in range(len(lo)):
            heapq.heappush(heap, (-float(b.ub[i]), counter))
            boxes[counter] = (lo[i], hi[i], b.exponents[i], float(b.core[i]), b.score[i],
                              None if b.convex is None else b.convex[i])
            counter += 1

    def good_enough(value: float) -> bool:
        return value <= best + rtol * abs(best) + PRUNE_MARGIN * abs(best)

    push(-np.ones((1, n)), np.ones((1, n)))
    nodes = 1
    retired: list[tuple[float, np.ndarray]] = []  # boxes split no further: points, or within tolerance but for rounding
    while heap and nodes < max_nodes:
        if good_enough(-heap[0][0]):
            break
        los, his = [], []
        while heap and len(los) < 2 * batch:
            negub, i = heapq.heappop(heap)
            lo, hi, ex, core, sc, cv = boxes.pop(i)
            if -negub < best - PRUNE_MARGIN * abs(best):
                continue
            if not (hi > lo).any() or good_enough(core):
                retired.append((-negub, ex))
                continue
            free = hi > lo
            faces = free & cv if cv is not None else np.zeros_like(free)
            if faces.any():  # convex along c_k: the maximum is on a face, c_k = lo_k or hi_k
                k = int(np.argmax(np.where(faces, sc + 1e-300, -1.0)))
                left_hi, right_lo = hi.copy(), lo.copy()
                left_hi[k], right_lo[k] = lo[k], hi[k]
            else:
                k = int(np.argmax(np.where(free, sc + 1e-300, -1.0)))
                mid = (lo[k] + hi[k]) / 2
                left_hi, right_lo = hi.copy(), lo.copy()
                left_hi[k], right_lo[k] = mid, mid
            los += [lo, right_lo]
            his += [left_hi, hi]
        if los:
            push(np.array(los), np.array(his))
            nodes += len(los)
    closed = not heap or good_enough(-heap[0][0])
    margin = best - PRUNE_MARGIN * abs(best)
    live = [boxes[i][2] for negub, i in heap if -negub >= margin] + [ex for ub, ex in retired if ub >= margin]
    upper = max(best, obj.certified(np.array(live))) if live else best
    return Result(upper, best, best_c, nodes, closed, len(live))
