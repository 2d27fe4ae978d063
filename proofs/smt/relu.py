"""Score-level encoding of any registered kind: exact for ReLU (piecewise linear), an abstraction
of exp / sigmoid for the others.

One free real score ``S_q_b`` per (query type, key type) pair (exact when the token vectors are
independent: any score matrix is some x^T W_Q^T W_K x) and one value image per type. The weights
of a class come from the kind's own definition, ``kind.exact(scores, i, ops("z3"), extras)``
(ReLU: If(s > 0, s, 0) / max(i, 1)), so nothing about the kind is re-implemented here. A kind
that needs exp or sigmoid raises ``NotExpressible`` in the z3 backend; for those the search
re-runs the kind's own definition over ``AbstractOps``: every exp(arg) becomes an unknown E > 0
and every sigmoid(arg) an unknown in (0, 1), one per distinct (simplified) argument, so the same
query and key always get the same weight (token consistency). exp(0) stays 1. That is a
relaxation (every real head satisfies it): UNSAT transfers; a SAT is only a candidate until the
replay rebuilds real scores (arg = log E or logit sigma, solved as a linear system in the scores
and extra parameters) and confirms it on every sequence.

The output constraint is |sum_k a_k u_k - y| <= eps per coordinate; ``BOS weight < theta`` is
the violation. A SAT model has rational scores and values, so the replay is exact (fractions).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from constructions import attention
from constructions.errors import NotExpressible

from .classes import PositionClass, class_target, covered, enumerate_classes, violation_classes
from .encode import kept_coords
from .instance import BOS, Instance
from .replay import HeadParams, LayerModel
from .verdict import combine


class AbstractOps:
    """z3 operations with exp and sigmoid abstracted by fresh constrained constants."""

    def __init__(self) -> None:
        import z3

        base = attention.ops("z3")
        self.name, self.zero, self.one, self.relu = "z3-abstract", base.zero, base.one, base.relu
        self.facts: list = []
        self.atoms: dict[str, tuple[str, Any, Any]] = {}  # key -> (function, argument, constant)
        self._z3 = z3

    def _atom(self, fn: str, x):
        z3 = self._z3
        arg = z3.simplify(x)
        if fn == "exp" and z3.is_rational_value(arg) and arg.as_fraction() == 0:
            return z3.RealVal(1)
        key = f"{fn}:{arg.sexpr()}"
        if key not in self.atoms:
            c = z3.Real(f"X_{len(self.atoms)}")
            self.facts += [c > 0] if fn == "exp" else [c > 0, c < 1]
            self.atoms[key] = (fn, arg, c)
        return self.atoms[key][2]

    def exp(self, x):
        return self._atom("exp", x)

    def sigmoid(self, x):
        return self._atom("sigmoid", x)


def _extras(kind, z3, q: int) -> dict[str, Any]:
    """Extra head parameters as z3 constants: a scalar per head, a vector's projection per query type."""
    return {p.name: z3.Real(f"P_{p.name}" if p.shape == "scalar" else f"P_{p.name}_{q}") for p in kind.params}


def class_weights(kind, z3, ops, cls_keys: list[int], query: int, size: int):
    scores = [z3.Real(f"S_{query}_{b}") for b in cls_keys]
    return kind.exact(scores, size, ops, _extras(kind, z3, query))


def build(inst: Instance, kind_name: str, eps: Fraction, abstract: bool = False):
    """(solver, per-class BOS-weight terms, ops) for the whole instance. Without ``abstract``
    a kind that needs exp / sigmoid raises NotExpressible."""
    import z3

    kind = attention.get(kind_name)
    ops = AbstractOps() if abstract else attention.ops("z3")
    solver = z3.Solver()
    coords = kept_coords(inst)

    def u(b: int, c: int):
        if b == BOS and inst.bos_value == "zero":
            return z3.RealVal(0)
        return z3.Real(f"U_{b}_{c}")

    rows = [(BOS, [BOS], 0, [Fraction(0)] * inst.d)] if inst.bos_value == "row" else []
    for cls in enumerate_classes(inst):
        rows.append((cls.query, cls.keys(), cls.size, class_target(inst, cls)))
    bos_weight = {}
    for query, keys, size, y in rows:
        a = class_weights(kind, z3, ops, keys, query, size)
        for c in coords:
            out = z3.Sum([a[k] * u(b, c) for k, b in enumerate(keys)]) if len(keys) > 1 else a[0] * u(keys[0], c)
            solver.add(out - y[c] <= eps, y[c] - out <= eps)
        bos_weight[(query, tuple(keys))] = a[0]
    if abstract:
        solver.add(*ops.facts)
    return solver, bos_weight, ops


def abstract_model_of(inst: Instance, kind_name: str, values: dict[str, Any], atoms) -> LayerModel:
    """Real scores and extra parameters from an abstract model: each atom's argument must equal
    log E (exp) or logit(sigma) (sigmoid); the arguments are linear in the scores S_q_b and the
    parameters P_*, so this is a linear system, solved (minimum norm) in mpmath."""
    import mpmath
    import z3

    from .replay import DIGITS

    kind = attention.get(kind_name)
    with mpmath.workdps(DIGITS):
        to = lambda v: mpmath.mpf(v.numerator) / v.denominator if isinstance(v, Fraction) else mpmath.mpf(v)
        rows, rhs, names = [], [], []
        for fn, arg, const in atoms.values():
            val = to(values.get(str(const), Fraction(1, 2)))
            rhs.append(mpmath.log(val) if fn == "exp" else mpmath.log(val / (1 - val)))
            rows.append(arg)
        unknowns = sorted({str(v) for arg in rows for v in _consts(arg)})
        zero = {n: z3.RealVal(0) for n in unknowns}
        A = mpmath.zeros(len(rows), max(1, len(unknowns)))
        b = mpmath.matrix(len(rows), 1)
        for r, arg in enumerate(rows):
            base = z3.simplify(z3.substitute(arg, *[(z3.Real(n), zero[n]) for n in unknowns]))
            c0 = base.as_fraction()
            for j, n in enumerate(unknowns):
                one = z3.simplify(z3.substitute(arg, *[(z3.Real(m), z3.RealVal(1 if m == n else 0)) for m in unknowns]))
                A[r, j] = to(one.as_fraction() - c0)
            b[r] = rhs[r] - to(c0)
        sol = {}
        if unknowns and rows:
            x = A.T * mpmath.lu_solve(A * A.T, b)
            sol = {n: x[j] for j, n in enumerate(unknowns)}
        scores = {(q, t): sol.get(f"S_{q}_{t}", mpmath.mpf(0)) for q in inst.types for t in inst.types}
        vals = {t: [to(values.get(f"U_{t}_{c}", Fraction(0))) for c in range(inst.d)] for t in inst.types}
        extras = {}
        for p in kind.params:
            if p.shape == "scalar":
                extras[p.name] = sol.get(f"P_{p.name}", mpmath.mpf(0))
            else:  # per-type projections -> a vector w with w . x_q = projection
                extras[p.name] = {q: sol.get(f"P_{p.name}_{q}", mpmath.mpf(0)) for q in inst.types}
    return LayerModel(kind_name, [HeadParams(scores, vals, extras)], exact=False)


def _consts(expr):
    import z3

    out, stack = set(), [expr]
    while stack:
        e = stack.pop()
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(e)
        stack.extend(e.children())
    return out


def model_of(inst: Instance, kind_name: str, values: dict[str, Any]) -> LayerModel:
    scores = {(q, b): values.get(f"S_{q}_{b}", Fraction(0)) for q in inst.types for b in inst.types}
    vals = {b: [values.get(f"U_{b}_{c}", Fraction(0)) for c in range(inst.d)] for b in inst.types}
    exact = all(isinstance(v, Fraction) for v in list(scores.values()) + [x for row in vals.values() for x in row])
    return LayerModel(kind_name, [HeadParams(scores, vals)], exact=exact)


def run_scores(s, result, stop_at_first: bool) -> None:
    """The search driver for method "scores" (called by ``search.search_counterexample``)."""
    import z3

    inst = s.inst
    s.atoms = None
    try:
        solver, bos_weight, _ = build(inst, s.kind, inst.eps)
    except NotExpressible:
        solver, bos_weight, ops = build(inst, s.kind, inst.eps, abstract=True)
        s.atoms = ops.atoms
    base = solver.sexpr()
    if s.theta is None:
        extra = ""
        if s.sink_cap is not None:
            caps = [bos_weight[(c.query, tuple(c.keys()))] <= z3.RealVal(s.sink_cap)
                    for c in enumerate_classes(inst) if covered(inst, c)]
            extra = z3.Solver()
            extra.add(*caps)
            extra = _asserts_only(extra.sexpr())
        ans = s.run(base + extra, "scores-solve", "all classes", "sat")
        result.status, result.reason = _status(s, result, ans, None)
        return
    statuses = []
    for cls in s.at or violation_classes(inst):
        viol = z3.Solver()
        viol.add(bos_weight[(cls.query, tuple(cls.keys()))] < z3.RealVal(s.theta))
        ans = s.run(base + _asserts_only(viol.sexpr()), "scores-class", cls.label(inst))
        status, why = _status(s, result, ans, cls)
        statuses.append(status)
        if status in ("counterexample", "candidate") and result.where is None:
            result.where, result.reason = cls.label(inst), why
        if status == "unknown" and not result.reason:
            result.reason = why
        if status == "counterexample" and stop_at_first:
            break
    result.status = combine(statuses)
    if result.status == "proof":
        result.reason = f"all {len(statuses)} class queries UNSAT"


def _asserts_only(sexpr: str) -> str:
    """Drop re-declarations from a z3 sexpr (the base already declares every constant)."""
    return "\n".join(line for line in sexpr.splitlines() if not line.startswith("(declare-fun"))+ "\n"


def _status(s, result, ans, cls: PositionClass | None) -> tuple[str, str]:
    if ans.result == "unsat":
        return "proof", "UNSAT"
    if ans.result != "sat":
        return "unknown", ans.reason or "unknown"
    if getattr(s, "atoms", None):
        model = abstract_model_of(s.inst, s.kind, ans.model, s.atoms)
    else:
        model = model_of(s.inst, s.kind, ans.model)
    result.model = model
    status, rep, why = s.confirm(model, cls)
    result.replay = rep
    return status, why
