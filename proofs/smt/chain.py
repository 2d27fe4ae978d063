"""The lemma chain (method "chain"), the default proof method for shift-invariant kinds.

Step 1, the value box: every value image u_b is boxed around its token vector using the trigger
classes alone (Charnes-Cooper LPs, ``encode.box_lp``). Step 2: one NRA query per class (up to
content-type symmetry), the box added as a proved hint. See ``encode`` for why UNSAT transfers.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

from . import encode, farkas
from .classes import POST, PRE, PositionClass, enumerate_classes, violation_classes
from .session import Session, answer_status, sat_status
from .smt2 import Script
from .linear import NotLinear, parse_facts
from .verdict import LP_CHECKER, SearchResult, Step, combine

BOX_DIGITS = 10 ** 4
BOX_TRIES = ((0, True), (0, False), (1, True), (1, False))  # (seed, solve-eqs first)
BOX_TRY_S = 5.0  # one closed LP normally answers in ~1 s; a stalled one gets another try


def _round_up(x: Fraction, slack: Fraction = Fraction(1, 1000)) -> Fraction:
    """A short rational more than ``slack`` above x (z3 fallback: bounds within 1e-4 of the LP
    optimum made z3 stall, so it gets 1/1000; an exact certificate needs no slack)."""
    return Fraction(math.floor((x + slack) * BOX_DIGITS) + 1, BOX_DIGITS)


def _content_swap(b: int, c: int) -> int:
    """Coordinate c after swapping content types 1 and b (their one-hot coordinates 2 and b+1)."""
    return {2: b + 1, b + 1: 2}.get(c, c)


def _where(s: Session, b: int, c: int, sign: int, bound: Fraction) -> str:
    return f"u[{s.inst.type_label(b)}][{c}] {'<=' if sign > 0 else '>='} x + {bound if sign > 0 else -bound}"


NO_OPTIMUM = ("unbounded", "infeasible")  # HiGHS: this side has no finite bound to certify


def certified_bound(s: Session, b: int, c: int, sign: int, base: Script) -> Fraction | str:
    """sign * (u_b,c - x_b,c) <= bound with an exact Farkas certificate of the step's own query
    (HiGHS finds the LP dual, ``farkas.check_infeasible`` checks it in Fractions). Otherwise why
    not: one of NO_OPTIMUM (nothing to certify), or a failure (then z3 is asked instead)."""
    inst = s.inst
    start = time.perf_counter()
    lp = encode.box_lp(inst, inst.eps, b, c, sign, base)
    try:
        found = farkas.certified_max(parse_facts(lp.asserts), "OBJ")
    except NotLinear as e:
        return f"not linear: {e}"
    if isinstance(found, str):
        return found
    value, y, _ = found
    bound = _round_up(value, Fraction(0))
    query = encode.box_bound_check(inst, inst.eps, b, c, sign, bound, base)
    rows = parse_facts(query.asserts)
    if not farkas.check_infeasible(rows, farkas.bound_certificate(y, len(rows) - 1)):
        return "certificate did not check"
    text = query.text()
    s.emit(text, "LRA-box", _where(s, b, c, sign, bound), "unsat")
    s.steps.append(Step("LRA-box", _where(s, b, c, sign, bound), "unsat", "unsat", round(time.perf_counter() - start, 4),
                        f"Farkas certificate, {len(y) + 1} rows", text if s.keep_text else None, LP_CHECKER))
    return bound


def z3_bound(s: Session, b: int, c: int, sign: int, base: Script) -> Fraction | None:
    """The fallback: z3 maximises, then one UNSAT query certifies the rounded bound."""
    inst = s.inst
    ans = s.runner.maximize(encode.box_lp(inst, inst.eps, b, c, sign, base).text(), s.timeout_s)
    s.note_clock(ans, f"LRA-box maximise at u[{inst.type_label(b)}][{c}] side {sign:+d}")
    obj = ans.model.get("OBJ") if ans.result == "sat" else None
    if not isinstance(obj, Fraction):
        return None
    bound = _round_up(obj)
    # z3's simplex sometimes stalls on these LPs (same query: 1 s or a timeout);
    # equation solving first avoids it, and an unknown is retried with other seeds
    ans = s.run(encode.box_bound_check(inst, inst.eps, b, c, sign, bound, base).text(), "LRA-box",
                _where(s, b, c, sign, bound), tries=BOX_TRIES, budget=min(s.timeout_s, BOX_TRY_S))
    return bound if ans.result == "unsat" else None


def value_box(s: Session) -> dict[tuple[int, int], tuple[Fraction | None, Fraction | None]] | None:
    """Step 1: one bound per (type, coordinate, side), each certified by an exact LP certificate
    (or, failing that, by z3's UNSAT). On a symmetric instance only content type 1 (and T) is
    computed; type b's box is type 1's with the coordinates of 1 and b swapped (the symmetry maps
    solutions to solutions)."""
    inst = s.inst
    symmetric = inst.symmetric()
    computed = [1, inst.trigger] if symmetric else list(inst.query_types)
    box: dict[tuple[int, int], tuple[Fraction | None, Fraction | None]] = {}
    base = encode.box_base(inst, inst.eps)
    for b in computed:
        for c in encode.kept_coords(inst):
            for sign in (1, -1):
                bound = certified_bound(s, b, c, sign, base) if s.box_certificates else "not asked"
                if isinstance(bound, str) and bound not in NO_OPTIMUM:
                    bound = z3_bound(s, b, c, sign, base)
                if isinstance(bound, Fraction):
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
