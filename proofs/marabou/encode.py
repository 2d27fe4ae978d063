"""One query of one single-layer head as a Marabou input query: "is there an input whose BOS weight
at query i is below (at the trigger: above) t?".

The input is what the head sees at query i (no positional encoding, so only the multiset of tokens
counts, ``proofs.certify.head.sink``): the query's content c, and one independent content box per
other key (``before``: i - 1 content keys; ``after``: i - 2 content keys and the trigger; ``trigger``:
the query is the trigger, i - 1 content keys), every content in [-1, 1]^n, n = d - 3. Nothing of the
certificate's reduction (keys at their closed-form maximisers) is used: every key is free.

Scores are bilinear (SPEC section 2): with x(c) = e_f + P c, G(c) = M^T x(c) is affine in c and

    s_0 = G_0(c),   s_key = G_flag(c) + sum_r G_{C_r}(c) k_r,   s_own = G_f(c) + sum_r G_{C_r}(c) c_r.

Each product G_{C_r}(c) * y_r (y a key's content or c itself) is one bilinear term. Two encodings:

- ``native``: Marabou's own ``addBilinearConstraint`` for each product and ``addSoftmaxConstraint`` over
  the scores, then a_0 <= t (>= t at the trigger). Marabou reasons about these by abstraction only
  (the pip build has no Gurobi, so no incremental linearisation): ``unsat`` is its proof, but it can
  answer ``sat`` only when the nonlinear constraints happen to hold at its linear solution, which a
  box of inputs never gives (README: the blocker).
- ``pl``: a piecewise-linear over-approximation that Marabou decides completely: McCormick's four
  planes for each product over the box's bounds, and with u_k = s_k - s_0, a_0 <= t iff
  sum_k exp(u_k - shift) >= 1 with shift = log(1/t - 1): exp is bounded above by its chords on a
  grid of u_k's range (the interpolant, convex, written as a line plus ReLU hinges) for a query's
  minimum, and below by tangents (linear) for the trigger's maximum. Every coefficient is rounded to
  the side that widens the relation. ``unsat`` on it is ``unsat`` of the head; a ``sat`` model is a
  candidate input only, replayed exactly by the caller.

The caller passes the query content's box (the driver bisects it); keys keep their full box.
Input variables are not marked (``mark_inputs``): with them maraboupy 2.0.0 raised ``map::at`` or
stopped with "Unknown error" on sat answers (README).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from constructions import task

ENCODINGS = ("native", "pl")
CHORD_WIDTH = 0.5  # the chords' grid step on u: a chord overshoots exp by a factor <= 1 + w^2 / 8 (3 %, inside MARGIN)
MAX_CHORDS = 96
SPAN = 8.0  # the chords' fine grid covers [shift - SPAN, shift]
TANGENTS = 24
SLACK = 1e-12  # relative widening of every float coefficient (covers the rounding of one product / sum)


def roles(i: int, case: str) -> list[str]:
    """The flag of each non-BOS key at query i other than the query itself."""
    if case == "before":
        return ["content"] * (i - 1)
    if case == "after":
        return ["content"] * (i - 2) + ["trigger"]
    return ["content"] * (i - 1)


@dataclass
class Query:
    """A built query: Marabou's InputQuery, the variable index of every input content, the layout."""

    ipq: object
    query_vars: list[int]
    key_vars: list[list[int]]
    key_roles: list[str]
    threshold: float
    case: str
    encoding: str
    notes: dict = field(default_factory=dict)
    builder: object = None


class _Builder:
    def __init__(self, core):
        self.core, self.n, self.lo, self.hi, self.equations, self.defs = core, 0, {}, {}, [], []

    def var(self, lo: float, hi: float, define=None) -> int:
        """A new variable in [lo, hi]; ``define(values)`` its true value at an input (``assignment``)."""
        v = self.n
        self.n += 1
        self.lo[v], self.hi[v] = lo, hi
        self.defs.append(define)
        return v

    def equation(self, terms, scalar: float, kind: str = "EQ") -> None:
        self.equations.append((kind, [(float(a), v) for a, v in terms if a != 0], float(scalar)))

    def build(self):
        MC = self.core
        ipq = MC.InputQuery()
        ipq.setNumberOfVariables(self.n)
        for v in range(self.n):
            ipq.setLowerBound(v, self.lo[v])
            ipq.setUpperBound(v, self.hi[v])
        for kind, terms, scalar in self.equations:
            e = MC.Equation(getattr(MC.Equation, kind))
            for a, v in terms:
                e.addAddend(a, v)
            e.setScalar(scalar)
            ipq.addEquation(e)
        return ipq


def _affine_range(const: float, coef: np.ndarray, box: np.ndarray) -> tuple[float, float]:
    """[lo, hi] of const + coef . c over the box [n, 2], widened outward by SLACK."""
    lo = const + sum(min(a * b[0], a * b[1]) for a, b in zip(coef, box))
    hi = const + sum(max(a * b[0], a * b[1]) for a, b in zip(coef, box))
    pad = SLACK * (abs(const) + float(np.abs(coef).sum()) + 1) * 4
    return lo - pad, hi + pad


def build(M: np.ndarray, d: int, L: int, i: int, case: str, threshold: float, encoding: str,
          box: np.ndarray | None = None, mark_inputs: bool = False, chord_width: float = CHORD_WIDTH,
          probe: bool = False) -> Query:
    """The query "a_i0 <= threshold" (non-trigger) or "a_i0 >= threshold" (trigger) for the head
    with score form M (float64), the query content in ``box`` ([n, 2]; default the full box).
    ``probe``: the threshold tightened by twice the relaxation's own gap, for a pinned query content,
    whose models then replay (its unsat says nothing: the question was harder)."""
    import maraboupy.MarabouCore as MC

    n = d - 3
    C = list(range(task.CONTENT_START, d - 1))
    f = task.TRIGGER_FLAG if case == "trigger" else task.content_flag(d)
    flags = {"content": task.content_flag(d), "trigger": task.TRIGGER_FLAG}
    box = np.array([[-1.0, 1.0]] * n) if box is None else np.asarray(box, float)
    b = _Builder(MC)
    c = [b.var(*box[r]) for r in range(n)]
    key_roles = roles(i, case)
    keys = [[b.var(-1.0, 1.0) for _ in range(n)] for _ in key_roles]
    # G_col(c) = M[f, col] + sum_r c_r M[C_r, col]: one variable per column the scores read
    def G(col: int):
        const, coef = float(M[f, col]), np.array([M[C[r], col] for r in range(n)], float)
        lo, hi = _affine_range(const, coef, box)
        v = b.var(lo, hi, lambda x: const + sum(a * x[c[r]] for r, a in enumerate(coef)))
        b.equation([(1.0, v)] + [(-a, c[r]) for r, a in enumerate(coef)], const)
        return v, lo, hi
    Gc = [G(C[r]) for r in range(n)]
    G0 = G(task.BOS_FLAG)
    Gflag = {name: G(col) for name, col in flags.items()}

    def product(g, y: int, ylo: float, yhi: float) -> tuple[int, float, float]:
        gv, glo, ghi = g
        corners = [glo * ylo, glo * yhi, ghi * ylo, ghi * yhi]
        lo, hi = min(corners), max(corners)
        pad = SLACK * (max(abs(lo), abs(hi)) + 1) * 4
        p = b.var(lo - pad, hi + pad, lambda x: x[gv] * x[y])
        if encoding == "native":
            b.bilinear.append((gv, y, p))
        else:  # McCormick: p >= glo y + g ylo - glo ylo, p >= ghi y + g yhi - ghi yhi, and the two upper planes
            for gg, yy, sense in ((glo, ylo, "GE"), (ghi, yhi, "GE"), (ghi, ylo, "LE"), (glo, yhi, "LE")):
                padded = gg * yy + (pad if sense == "GE" else -pad)
                b.equation([(1.0, p), (-gg, y), (-yy, gv)], -padded, sense)
        return p, lo - pad, hi + pad

    b.bilinear = []
    # scores relative to BOS: u = s - s_0
    us = []
    for role, kv in zip(key_roles, keys):
        terms = [product(Gc[r], kv[r], -1.0, 1.0) for r in range(n)]
        us.append((Gflag[role], terms))
    own = [product(Gc[r], c[r], *box[r]) for r in range(n)]
    us.append((Gflag["trigger"] if case == "trigger" else Gflag["content"], own))
    uvars = []
    for (gv, glo, ghi), terms in us:
        lo = glo - G0[2] + sum(t[1] for t in terms)
        hi = ghi - G0[1] + sum(t[2] for t in terms)
        u = b.var(lo, hi, lambda x, gv=gv, terms=terms: x[gv] - x[G0[0]] + sum(x[t[0]] for t in terms))
        b.equation([(1.0, u), (-1.0, gv), (1.0, G0[0])] + [(-1.0, t[0]) for t in terms], 0.0)
        uvars.append((u, lo, hi))
    notes = {"u_range": [(lo, hi) for _, lo, hi in uvars], "bilinear": len(b.bilinear) or n * len(us)}
    t = float(threshold)
    if encoding == "native":
        zero = b.var(0.0, 0.0, lambda x: 0.0)
        outs = [b.var(0.0, 1.0) for _ in range(len(uvars) + 1)]
        ipq_extra = ("softmax", [zero] + [u for u, _, _ in uvars], outs)
        b.equation([(1.0, outs[0])], t, "GE" if case == "trigger" else "LE")
    else:
        ipq_extra = None
        # sum_k exp(u_k - shift) vs 1 with shift = log(1/t - 1): the threshold is 1 and the terms that
        # decide it O(1) (Marabou's tolerances are absolute: a threshold of 1e-21 read as 0 gave unsat
        # where the witness is sat)
        if not 0 < t < 1:
            raise ValueError(f"threshold {t} outside (0, 1)")
        shift = math.log(1 / t - 1)
        R = 1 + 16 * SLACK if case == "trigger" else 1 - 16 * SLACK  # the side that widens
        notes["shift"] = shift
        total, relus, gaps = [], [], []
        for u, lo, hi in uvars:
            if case == "trigger":  # exp(u) >= tangents at a grid: E >= e^p (1 + u - p), every p
                # sum E <= 1 implies exp(u - shift) <= 1: u's upper bound tightened to shift (an implied bound)
                hi = min(hi, shift + 1e-6)
                b.hi[u] = max(b.lo[u], hi)
                E = b.var(0.0, _up_exp(hi - shift), lambda x, u=u: math.exp(x[u] - shift))
                grid = sorted({lo, *np.linspace(min(max(lo, shift - SPAN), hi), max(lo, hi), TANGENTS).tolist()})
                gaps.append(max(np.diff(grid[1:]), default=0.0))  # below shift - SPAN: at most e^-SPAN lost per key
                for p in grid:
                    ep = math.exp(p - shift) * (1 - 4 * SLACK)
                    b.equation([(1.0, E), (-ep, u)], ep * (1 - p) - abs(ep * (1 - p)) * 4 * SLACK, "GE")
                total.append(E)
            else:  # exp(u) <= z = the chords' interpolant (convex): its first line plus ReLU hinges
                # a fine grid on [shift - SPAN, shift], one chord on either side: below, each key adds at
                # most e^-SPAN; above, exp(u - shift) >= 1 alone meets the threshold, so no grid is needed
                a_, b_ = min(max(lo, shift - SPAN), hi), max(min(hi, shift), lo)
                steps = max(1, min(MAX_CHORDS, math.ceil((b_ - a_) / chord_width)))
                gaps.append((b_ - a_) / steps)
                grid = sorted({lo, hi, *np.linspace(a_, b_, steps + 1).tolist()})
                lines = []
                for p, q in zip(grid[:-1], grid[1:]):
                    ep, eq = _up_exp(p - shift), _up_exp(q - shift)
                    slope = (eq - ep) / (q - p)
                    icpt = ep - slope * p + (abs(ep) + abs(slope * p) + abs(eq)) * 8 * SLACK
                    lines.append((slope, icpt))
                # z = icpt_0 + slope_0 u + sum_j (slope_j - slope_{j-1}) relu(u - p_j): slopes increase
                terms = [(-lines[0][0], u)]
                base, moved, deficit = lines[0][1], 0.0, 0.0
                for (s0, c0), (s1, c1), p in zip(lines[:-1], lines[1:], grid[1:-1]):
                    pre = b.var(lo - p - 1, hi - p + 1, lambda x, u=u, p=p: x[u] - p)
                    post = b.var(0.0, hi - p + 1, lambda x, pre=pre: max(0.0, x[pre]))
                    b.equation([(1.0, pre), (-1.0, u)], -p)
                    relus.append((pre, post))
                    terms.append((-(s1 - s0), post))
                    moved += (s1 - s0) * p  # on segment j the hinge form is slope_j u + base - moved
                    deficit = max(deficit, c1 - (base - moved))  # rounding: lift the form above every chord
                const = base + deficit + abs(base + deficit) * 8 * SLACK
                z = b.var(0.0, _up_exp(hi - shift) * (1 + 1e-6) + 1e-12, lambda x, u=u: math.exp(x[u] - shift))
                b.equation([(1.0, z)] + terms, const, "LE")
                total.append(z)
        # how far the relaxation can be off at a fixed query content (products exact there): a chord of
        # width w overshoots exp by a factor <= e^(w^2 / 8), a tangent grid of step w undershoots by as
        # much, and the single pieces outside [shift - SPAN, shift] by e^-SPAN per key
        off = max(math.exp(max(gaps, default=0.0) ** 2 / 8) - 1, 0.0) + len(uvars) * math.exp(-SPAN)
        notes["relaxation_gap"] = off
        if probe:  # a sat of the tightened question is a sat of the head at a pinned query content
            R = R / (1 + 2 * off) if case == "trigger" else R * (1 + 2 * off)
        b.equation([(1.0, v) for v in total], R, "LE" if case == "trigger" else "GE")
        notes["hinges"] = len(relus)
    ipq = b.build()
    if mark_inputs:
        for r, v in enumerate(c):
            ipq.markInputVariable(v, r)
    if encoding == "native":
        for gv, y, p in b.bilinear:
            MC.addBilinearConstraint(ipq, gv, y, p)
        kind, ins, outs = ipq_extra
        MC.addSoftmaxConstraint(ipq, ins, outs)
    else:
        for pre, post in relus:
            MC.addReluConstraint(ipq, pre, post)
    return Query(ipq, c, keys, key_roles, t, case, encoding, notes, b)


def _up_exp(x: float) -> float:
    """exp(x) rounded up (math.exp is within 1 ulp; two ulps up covers it)."""
    return math.nextafter(math.nextafter(math.exp(x), math.inf), math.inf)


def model_contents(q: Query, values: dict) -> tuple[list[Fraction], list[list[Fraction]]]:
    """The model's query content and key contents as exact Fractions clamped into the box."""
    clamp = lambda v: Fraction(min(1.0, max(-1.0, float(values[v]))))  # noqa: E731
    return [clamp(v) for v in q.query_vars], [[clamp(v) for v in kv] for kv in q.key_vars]


def violations(q: Query, query: list[float], keys: list[list[float]], tol: float = 1e-9) -> list[str]:
    """The constraints of the linear part (bounds, equations, ReLU hinges) that the input's true
    values break (float64): empty for every input of the box, which is what makes an ``unsat``
    of the ``pl`` encoding an ``unsat`` of the head (``tests/test_marabou.py``). The softmax
    outputs of ``native`` are left undefined (not checked)."""
    b, x = q.builder, {}
    for v, value in zip(q.query_vars, query):
        x[v] = float(value)
    for kv, content in zip(q.key_vars, keys):
        for v, value in zip(kv, content):
            x[v] = float(value)
    for v, define in enumerate(b.defs):
        if v not in x and define is not None:
            x[v] = define(x)
    out = []
    for v, value in x.items():
        if not b.lo[v] - tol <= value <= b.hi[v] + tol:
            out.append(f"bound of variable {v}: {value} not in [{b.lo[v]}, {b.hi[v]}]")
    for kind, terms, scalar in b.equations:
        if any(v not in x for _, v in terms):
            continue
        lhs = sum(a * x[v] for a, v in terms)
        scale = tol * (1 + abs(scalar) + sum(abs(a * x[v]) for a, v in terms))
        ok = {"EQ": abs(lhs - scalar) <= scale, "LE": lhs <= scalar + scale, "GE": lhs >= scalar - scale}[kind]
        if not ok:
            out.append(f"{kind} {terms} {scalar}: lhs {lhs}")
    return out
