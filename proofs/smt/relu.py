"""Score-level encoding for kinds whose weights z3 can express exactly (ReLU: piecewise linear).

One free real score ``S_q_b`` per (query type, key type) pair (exact when the token vectors are
independent: any score matrix is some x^T W_Q^T W_K x) and one value image per type. The weights
of a class come from the kind's own definition, ``kind.exact(scores, i, ops("z3"), extras)``
(ReLU: If(s > 0, s, 0) / max(i, 1)), so nothing about the kind is re-implemented here. A kind
that needs exp or sigmoid raises ``NotExpressible`` there, and the search reports ``unknown``
with that reason instead of approximating.

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


def _extras(kind, z3, q: int) -> dict[str, Any]:
    """Extra head parameters as z3 constants: a scalar per head, a vector's projection per query type."""
    return {p.name: z3.Real(f"P_{p.name}" if p.shape == "scalar" else f"P_{p.name}_{q}") for p in kind.params}


def class_weights(kind, z3, ops, cls_keys: list[int], query: int, size: int):
    scores = [z3.Real(f"S_{query}_{b}") for b in cls_keys]
    return kind.exact(scores, size, ops, _extras(kind, z3, query))


def build(inst: Instance, kind_name: str, eps: Fraction):
    """(solver, per-class BOS-weight terms) for the whole instance; raises NotExpressible."""
    import z3

    kind = attention.get(kind_name)
    ops = attention.ops("z3")
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
    return solver, bos_weight


def model_of(inst: Instance, kind_name: str, values: dict[str, Any]) -> LayerModel:
    scores = {(q, b): values.get(f"S_{q}_{b}", Fraction(0)) for q in inst.types for b in inst.types}
    vals = {b: [values.get(f"U_{b}_{c}", Fraction(0)) for c in range(inst.d)] for b in inst.types}
    exact = all(isinstance(v, Fraction) for v in list(scores.values()) + [x for row in vals.values() for x in row])
    return LayerModel(kind_name, [HeadParams(scores, vals)], exact=exact)


def run_scores(s, result, stop_at_first: bool) -> None:
    """The search driver for method "scores" (called by ``search.search_counterexample``)."""
    import z3

    from .search import Step, _combine

    inst = s.inst
    try:
        solver, bos_weight = build(inst, s.kind, inst.eps)
    except NotExpressible as e:
        result.status, result.reason = "unknown", f"not expressible: {e}"
        return
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
    result.status = _combine(statuses)
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
    model = model_of(s.inst, s.kind, ans.model)
    result.model = model
    status, rep, why = s.confirm(model, cls)
    result.replay = rep
    return status, why
