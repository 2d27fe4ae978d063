"""``search_counterexample``: is there a head that solves the instance within eps but puts less
than theta on BOS at some covered non-trigger query? (T1 predicts: no.)

Verdicts, and why each is honest:

- ``proof``: every query was UNSAT. Each query is the exact token-consistent encoding or a
  relaxation of it (fewer classes, a pre-trigger slice, or extra *proved* lemmas such as the
  value box), so UNSAT transfers to every real head (see ``encode``).
- ``counterexample``: a SAT model was rebuilt as a real head and replayed on every sequence of
  the instance (``replay``): error <= eps and BOS mass < theta confirmed.
- ``candidate``: SAT from a relaxation whose model did not replay (or could not be rebuilt).
- ``unknown``: z3 said unknown, ran out of its work limit (``rlimit``) or time, or was
  hard-killed; never a pass.

For ``theta=None`` the question is the positive control "is there a head at all (with the BOS
mass capped by ``sink_cap`` at covered classes, if given)": ``solution`` (found and replayed),
``proof`` (no head: UNSAT), ``candidate`` or ``unknown``.
"""

from __future__ import annotations

import time
from fractions import Fraction

from constructions import attention
from constructions.errors import BadInput

from . import encode, recheck
from .chain import run_chain
from .classes import PRE, TRIG, PositionClass, covered, enumerate_classes, violation_classes
from .instance import Instance
from .relu import run_scores
from .models import mapped_back, pattern_model, reparam_model, softmax_model  # noqa: F401 (re-exported)
from .session import MARGIN, Session, answer_status, sat_status  # noqa: F401 (MARGIN re-exported)
from .smt2 import Script
from .verdict import STATUSES, SearchResult, Step, combine  # noqa: F401 (re-exported)

METHODS = ("chain", "reparam", "pattern", "free_pattern", "scores")
# kinds with the exp-free token-consistent pattern encoding -> "slot" (weights E / (1 + sum E))
PATTERN_KINDS = {"softmax": False, "sigmoid_norm": False, "softmax1": True, "sink_logit": True}


def default_method(kind: str) -> str:
    """chain for shift-invariant normalised kinds, pattern for slot kinds, scores otherwise."""
    if kind in PATTERN_KINDS:
        return "pattern" if PATTERN_KINDS[kind] else "chain"
    return "scores"


def _check_method(kind: str, method: str, inst: Instance) -> str | None:
    """Why (kind, method) cannot run on this instance, or None."""
    if method not in METHODS:
        raise BadInput(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if method == "scores":
        return None
    if kind not in PATTERN_KINDS:
        return f"kind {kind!r} has no token-consistent pattern encoding; use method 'scores'"
    if method in ("chain", "reparam") and PATTERN_KINDS[kind]:
        return f"method {method!r} assumes the BOS weight 1 of a shift-invariant kind; use 'pattern' for {kind!r}"
    if method in ("chain", "reparam") and inst.max_triggers != 1:
        return f"method {method!r} needs exactly one trigger per sequence (max_triggers=1)"
    return None


def search_counterexample(inst: Instance, theta=None, method: str = "chain", timeout_s: float = 10.0, *,
                          kind: str = "softmax", emit_smt2=None, sink_cap=None, incremental: bool = False,
                          stop_at_first: bool = True, at: list[PositionClass] | None = None,
                          recheck_with: str | None = None, rlimit: int | None = None,
                          recheck_rlimit: int | None = None) -> SearchResult:
    """Search a head of ``kind`` solving ``inst`` within ``inst.eps`` with BOS mass < ``theta`` at
    some covered non-trigger class (``theta=None``: any head, the positive control).
    ``recheck_with="cvc5"``: afterwards every step's query is re-solved by cvc5 (``recheck``).
    ``rlimit``: z3 resource units per query, so that the verdict is the same on every machine;
    ``timeout_s`` is then only the safety net against a hang (the steps where it fired are listed
    in ``result.safety_net``, and a candidate that rests on one is reported unknown);
    ``recheck_rlimit`` is the second solver's (cvc5's units, ``recheck.CVC5_RLIMIT``)."""
    attention.get(kind)
    if recheck_with is not None and not recheck.available(recheck_with):
        raise BadInput(f"recheck solver {recheck_with!r} is not installed (valid: {', '.join(recheck.SOLVERS)}; "
                       "pip install '.[smt]')")
    start = time.perf_counter()
    result = SearchResult("unknown", kind, method, inst.describe(), None if theta is None else str(Fraction(theta)), 0.0)
    why_not = _check_method(kind, method, inst)
    if why_not:
        result.reason = why_not
        return result
    s = Session(inst, theta, method, timeout_s, emit_smt2, kind, sink_cap, incremental, PATTERN_KINDS.get(kind, False),
                rlimit)
    s.at = at
    s.keep_text = recheck_with is not None
    try:
        if method == "scores":
            run_scores(s, result, stop_at_first)
        elif theta is None:
            _solve(s, result)
        elif method == "free_pattern":
            _per_class(s, result, stop_at_first, _free_pattern_query)
        elif method == "pattern":
            _per_class(s, result, stop_at_first, _pattern_query)
        elif method == "reparam":
            _per_class(s, result, stop_at_first, _reparam_query)
        else:
            run_chain(s, result, stop_at_first)
    finally:
        s.close()
    result.steps, result.rlimit, result.safety_net = s.steps, rlimit, s.safety_net
    if result.safety_net and result.status == "candidate":  # a clock-stopped re-solve: not a finding
        result.status = "unknown"
        result.reason = f"wall-clock safety net fired ({result.safety_net[0]}); {result.reason}"
    if recheck_with is not None:
        recheck.recheck(result, timeout_s, recheck_with, recheck_rlimit)
    result.seconds = time.perf_counter() - start
    return result


# ---- positive control -----------------------------------------------------------------------


def _solve(s: Session, result: SearchResult) -> None:
    inst = s.inst
    classes = enumerate_classes(inst)
    extra = Script()
    if s.sink_cap is not None:
        extra = encode.sink_cap(inst, [c for c in classes if c.phase(inst) != TRIG and covered(inst, c)], s.sink_cap, s.slot)
    rows = None if s.slot else s.run(encode.trigger_rows_script(inst, inst.eps).text(), "LRA-trigger-rows",
                                      "trigger classes", "sat")
    if rows is not None and rows.result == "unsat":
        result.status, result.reason = "proof", "no head solves even the trigger rows (LRA relaxation UNSAT)"
        return
    if inst.eps > 0 and s.method != "reparam":
        status, rep, why, model = s.confirm_ideal(None, classes, extra, inst.eps)
        if status == "solution":
            result.status, result.replay, result.reason, result.model = status, rep, why, model
            return
    if inst.eps == 0 or s.method != "reparam":
        text = encode.pattern_script(inst, inst.eps, classes, slot=s.slot).extended(extra).text()
        ans = s.run(text, "pattern-solve", "all classes", "sat")
        if ans.result == "unsat":
            result.status, result.reason = "proof", "no head solves the instance (UNSAT)"
            return
        if ans.result != "sat":
            result.status, result.reason = "unknown", ans.reason
            return
        if inst.eps == 0:  # nothing to halve; replay the model as it is
            model = pattern_model(inst, ans.model, s.kind)
            result.status, result.replay, result.reason = s.confirm(model, None)
            result.model = model
            return
        status, rep, why, model = s.confirm_pattern(None, classes, extra, inst.eps)
        result.status, result.replay, result.reason, result.model = status, rep, why, model
        return
    # reparam slice at eps/2, mapped back with a small content->trigger weight
    half = inst.eps / 2
    ans = s.run(encode.reparam_script(inst, half).text(), "reparam-solve", "trigger + pre-trigger classes", "sat", f" (eps/2={half})")
    if ans.result != "sat":
        result.status = "proof" if ans.result == "unsat" else "unknown"
        result.reason = "the pre-trigger slice has no head (UNSAT transfers)" if ans.result == "unsat" else ans.reason
        return
    model = mapped_back(inst, ans.model, s.kind)
    result.model = model
    result.status, result.replay, result.reason = s.confirm(model, None)


# ---- violation search, one query per class --------------------------------------------------


def _per_class(s: Session, result: SearchResult, stop_at_first: bool, query) -> None:
    statuses = []
    for cls in s.at or violation_classes(s.inst):
        status, info = query(s, cls)
        statuses.append(status)
        if status in ("counterexample", "candidate") and (result.where is None or status == "counterexample"):
            result.where = cls.label(s.inst)
            result.model, result.replay, result.reason = info.get("model"), info.get("replay"), info.get("reason", "")
        if status == "unknown" and not result.reason:
            result.reason = info.get("reason", "")
        if status == "counterexample" and stop_at_first:
            break
    result.status = combine(statuses)
    if result.status == "proof":
        result.reason = f"all {len(statuses)} class queries UNSAT"


def _pattern_query(s: Session, cls: PositionClass):
    inst = s.inst
    classes = enumerate_classes(inst)
    text = encode.pattern_script(inst, inst.eps, classes, slot=s.slot).extended(encode.violation(inst, cls, s.theta, s.slot)).text()
    ans = s.run(text, "pattern-class", cls.label(inst))
    return answer_status(s, cls, ans, lambda: sat_status(s, cls, ans, classes))


def _reparam_query(s: Session, cls: PositionClass):
    inst = s.inst
    if cls.phase(inst) != PRE:
        s.steps.append(Step("reparam-class", cls.label(inst), "unsat", "unknown", 0.0, "not in the pre-trigger slice"))
        return "unknown", {"reason": "method 'reparam' covers pre-trigger classes only"}
    text = encode.reparam_script(inst, inst.eps).extended(encode.reparam_violation(inst, cls, s.theta)).text()
    ans = s.run(text, "reparam-class", cls.label(inst))
    return answer_status(s, cls, ans, lambda: sat_status(s, cls, ans, enumerate_classes(inst),
                                                           mapped_back(inst, ans.model, s.kind)))


def _free_pattern_query(s: Session, cls: PositionClass):
    inst = s.inst
    ans = s.run(encode.free_pattern_script(inst, inst.eps, s.theta, cls).text(), "free-pattern-class", cls.label(inst))
    return answer_status(s, cls, ans, lambda: ("candidate", {
        "reason": "free-pattern SAT: a simplex point per class, not a head (token consistency dropped)"}))


# ---- the lemma chain ------------------------------------------------------------------------
