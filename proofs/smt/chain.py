"""The lemma chain (method "chain"), the default proof method for shift-invariant kinds.

Step 1, the value box: every value image u_b is boxed around its token vector using the trigger
classes alone (Charnes-Cooper LPs, ``encode.box_lp``). Step 2: one NRA query per class (up to
content-type symmetry), the box added as a proved hint. See ``encode`` for why UNSAT transfers.
"""

from __future__ import annotations

import math
from fractions import Fraction

from . import encode
from .classes import POST, PRE, PositionClass, enumerate_classes, violation_classes
from .session import Session, answer_status, sat_status
from .verdict import SearchResult, combine

BOX_DIGITS = 10 ** 4
BOX_TRIES = ((0, True), (0, False), (1, True), (1, False))  # (seed, solve-eqs first)
BOX_TRY_S = 5.0  # one closed LP normally answers in ~1 s; a stalled one gets another try


def _round_up(x: Fraction) -> Fraction:
    """A short rational at least 1/1000 above x: the closed check of the bound is then clearly
    infeasible (bounds within 1e-4 of the LP optimum made z3 stall), the box barely looser."""
    return Fraction(math.floor((x + Fraction(1, 1000)) * BOX_DIGITS) + 1, BOX_DIGITS)


def _content_swap(b: int, c: int) -> int:
    """Coordinate c after swapping content types 1 and b (their one-hot coordinates 2 and b+1)."""
    return {2: b + 1, b + 1: 2}.get(c, c)


def value_box(s: Session) -> dict[tuple[int, int], tuple[Fraction | None, Fraction | None]] | None:
    """Step 1: LPs find the box; one UNSAT query per bound over the trigger classes certifies it.
    On a symmetric instance only content type 1 (and T) is computed; type b's box is type 1's
    with the coordinates of 1 and b swapped (the symmetry maps solutions to solutions)."""
    inst = s.inst
    symmetric = inst.symmetric()
    computed = [1, inst.trigger] if symmetric else list(inst.query_types)
    box: dict[tuple[int, int], tuple[Fraction | None, Fraction | None]] = {}
    for b in computed:
        for c in encode.kept_coords(inst):
            bounds = []
            for sign in (1, -1):
                ans = s.runner.maximize(encode.box_lp(inst, inst.eps, b, c, sign).text(), s.timeout_s)
                obj = ans.model.get("OBJ") if ans.result == "sat" else None
                bounds.append(_round_up(obj) if isinstance(obj, Fraction) else None)
            for sign, bound in zip((1, -1), bounds):
                if bound is None:
                    continue
                side = "<=" if sign > 0 else ">="
                shown = bound if sign > 0 else -bound
                # z3's simplex sometimes stalls on these LPs (same query: 1 s or a timeout);
                # equation solving first avoids it, and an unknown is retried with other seeds
                ans = s.run(encode.box_bound_check(inst, inst.eps, b, c, sign, bound).text(), "LRA-box",
                            f"u[{inst.type_label(b)}][{c}] {side} x + {shown}", tries=BOX_TRIES,
                            budget=min(s.timeout_s, BOX_TRY_S))
                if ans.result == "unsat":
                    lo0, hi0 = box.get((b, c), (None, None))
                    box[(b, c)] = (lo0, bound) if sign > 0 else (-bound, hi0)
    if symmetric:
        for b in range(2, inst.k + 1):
            for c in encode.kept_coords(inst):
                if (1, _content_swap(b, c)) in box:
                    box[(b, c)] = box[(1, _content_swap(b, c))]
    return box or None


def run_chain(s: Session, result: SearchResult, stop_at_first: bool) -> None:
    inst = s.inst
    box = value_box(s)
    if box is None:
        result.reason = "value box not established (step 1); chain stopped"
        result.status = "unknown"
        return
    result.box = {f"u[{inst.type_label(b)}][{c}] - x": [None if lo is None else str(lo), None if hi is None else str(hi)]
                  for (b, c), (lo, hi) in box.items()}
    all_classes = enumerate_classes(inst)
    groups: dict[tuple[int, str], list[PositionClass]] = {}
    for cls in s.at or violation_classes(inst):
        groups.setdefault((cls.query, cls.phase(inst)), []).append(cls)
    statuses = []
    for (query, phase), targets in groups.items():
        wanted = (PRE,) if phase == PRE else (PRE, POST)
        scope = [c for c in all_classes if c.phase(inst) in wanted and c.query == query]
        base = encode.pattern_script(inst, inst.eps, scope, box)
        extras = [(cls.label(inst), encode.violation(inst, cls, s.theta)) for cls in targets]
        if s.incremental:
            answers = s.run_each(base, extras, "NRA-class")
        else:
            answers = [s.run(base.text() + e.text(declared=base.decls), "NRA-class", w) for w, e in extras]
        for n, (cls, ans) in enumerate(zip(targets, answers)):
            if ans.result == "unknown":
                # z3 sometimes stalls on a query it answers in milliseconds on another run
                # (seen under load): retry it alone with other seeds before saying unknown
                where, extra = extras[n]
                ans = s.run(base.text() + extra.text(declared=base.decls), "NRA-class", where,
                            tries=((1, False), (2, False)), budget=s.timeout_s / 2)
            status, info = answer_status(s, cls, ans, lambda: sat_status(s, cls, ans, all_classes,
                                                                           exact_first=True, box=box))
            statuses.append(status)
            if status in ("counterexample", "candidate") and (result.where is None or status == "counterexample"):
                result.where = cls.label(inst)
                result.model, result.replay, result.reason = info.get("model"), info.get("replay"), info.get("reason", "")
            if status == "unknown" and not result.reason:
                result.reason = info.get("reason", "")
            if status == "counterexample" and stop_at_first:
                result.status = "counterexample"
                return
    result.status = combine(statuses)
    if result.status == "proof":
        result.reason = f"value box (LRA, UNSAT) + {len(statuses)} class queries UNSAT"
