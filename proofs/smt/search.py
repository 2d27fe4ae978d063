"""``search_counterexample``: is there a head that solves the instance within eps but puts less
than theta on BOS at some covered non-trigger query? (T1 predicts: no.)

Verdicts, and why each is honest:

- ``proof``: every query was UNSAT. Each query is the exact token-consistent encoding or a
  relaxation of it (fewer classes, a pre-trigger slice, or extra *proved* lemmas such as the
  value box), so UNSAT transfers to every real head (see ``encode``).
- ``counterexample``: a SAT model was rebuilt as a real head and replayed on every sequence of
  the instance (``replay``): error <= eps and BOS mass < theta confirmed.
- ``candidate``: SAT from a relaxation whose model did not replay (or could not be rebuilt).
- ``unknown``: z3 said unknown, ran out of time, or was hard-killed; never a pass.

For ``theta=None`` the question is the positive control "is there a head at all (with the BOS
mass capped by ``sink_cap`` at covered classes, if given)": ``solution`` (found and replayed),
``proof`` (no head: UNSAT), ``candidate`` or ``unknown``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from constructions import attention
from constructions.errors import BadInput, NotExpressible

from . import encode
from .classes import POST, PRE, TRIG, PositionClass, enumerate_classes, violation_classes
from .hardkill import Answer, Z3Runner
from .instance import BOS, Instance
from .smt2 import Script
from .replay import HeadParams, LayerModel, Replay, class_bos_mass, replay

METHODS = ("chain", "reparam", "pattern", "free_pattern", "scores")
STATUSES = ("proof", "counterexample", "solution", "candidate", "unknown")
# kinds with the exp-free token-consistent pattern encoding -> "slot" (weights E / (1 + sum E))
PATTERN_KINDS = {"softmax": False, "sigmoid_norm": False, "softmax1": True, "sink_logit": True}


def default_method(kind: str) -> str:
    """chain for shift-invariant normalised kinds, pattern for slot kinds, scores otherwise."""
    if kind in PATTERN_KINDS:
        return "pattern" if PATTERN_KINDS[kind] else "chain"
    return "scores"


MARGIN = Fraction(15, 16)  # a SAT at eps is re-solved at MARGIN * eps (eps/2 for positive controls), replayed at eps


@dataclass
class Step:
    """One query of the certificate."""

    lemma: str  # "LRA-box", "NRA-class", "pattern-class", ...
    where: str  # the class (or "trigger classes")
    expected: str  # what a proof needs ("unsat")
    result: str  # z3's answer
    seconds: float
    reason: str = ""
    smt2: str | None = field(default=None, repr=False)


@dataclass
class SearchResult:
    status: str
    kind: str
    method: str
    instance: str
    theta: str | None
    seconds: float
    steps: list[Step] = field(default_factory=list)
    reason: str = ""
    where: str | None = None  # the class of the counterexample / candidate
    model: LayerModel | None = None
    replay: Replay | None = None
    box: dict[str, list[str | None]] | None = None

    @property
    def proved(self) -> bool:
        return self.status == "proof"

    def summary(self) -> dict[str, Any]:
        from constructions.files import to_jsonable

        out = to_jsonable({k: getattr(self, k) for k in ("status", "kind", "method", "instance", "theta",
                                                          "seconds", "reason", "where", "replay", "box")})
        out["steps"] = [{k: v for k, v in to_jsonable(s).items() if k != "smt2"} for s in self.steps]
        out["queries"] = len(self.steps)
        out["unsat"] = sum(s.result == "unsat" for s in self.steps)
        return out


def _combine(statuses: list[str]) -> str:
    for s in ("counterexample", "solution", "candidate", "unknown"):
        if s in statuses:
            return s
    return "proof"


# ---- models from z3 answers --------------------------------------------------------------


def _to_mpf(v):
    import mpmath

    if isinstance(v, Fraction):
        return mpmath.mpf(v.numerator) / v.denominator
    return mpmath.mpf(v)


def softmax_model(inst: Instance, weights: dict[tuple[int, int], Any], values: dict[int, list[Any]],
                  kind: str = "softmax") -> LayerModel:
    """Real scores realising pattern weights E (missing pairs weigh 1): log E for softmax,
    softmax1 and sink_logit (slot logit 0); for sigmoid_norm, sigmoid(s_qb) = c_q E_qb with
    c_q = 1 / (2 max(1, max_b E_qb)) < 1 per query row (the normalisation cancels c_q)."""
    import mpmath

    from .replay import DIGITS

    with mpmath.workdps(DIGITS):
        scores = {}
        for q in inst.query_types:
            row = {b: _to_mpf(weights.get((q, b), Fraction(1))) for b in inst.types}
            if kind == "sigmoid_norm":
                c = 1 / (2 * max([mpmath.mpf(1)] + list(row.values())))
                scores.update({(q, b): mpmath.log(c * w / (1 - c * w)) for b, w in row.items()})
            else:
                scores.update({(q, b): mpmath.log(w) for b, w in row.items()})
        extras = {"sink": mpmath.mpf(0)} if kind == "sink_logit" else {}
    return LayerModel(kind, [HeadParams(scores, values, extras)], exact=False)


def _values_from(inst: Instance, model: dict[str, Any], prefix: str = "U") -> dict[int, list[Any]]:
    out = {}
    for b in inst.types:
        out[b] = [model.get(f"{prefix}_{b}_{c}", Fraction(0)) for c in range(inst.d)]
    return out


def pattern_model(inst: Instance, model: dict[str, Any], kind: str = "softmax") -> LayerModel:
    weights = {(q, b): model[encode.e_name(q, b)] for q in inst.query_types for b in inst.types
               if encode.e_name(q, b) in model}
    return softmax_model(inst, weights, _values_from(inst, model), kind)


def reparam_model(inst: Instance, model: dict[str, Any], eta: Fraction, kind: str = "softmax") -> LayerModel:
    """Map a re-parametrised model back: u_b = w_b / E_Tb, E_ab = R_ab E_Tb,
    u_T = (A - u_BOS) / E_TT, and the content->trigger weights (unconstrained in the slice)
    set to a small eta."""
    import mpmath

    from .replay import DIGITS

    T = inst.trigger
    with mpmath.workdps(DIGITS):
        get = lambda name, default=Fraction(1): _to_mpf(model.get(name, default))
        F = {b: get(encode.f_name(b)) for b in inst.query_types}
        values = {BOS: [get(encode.u_name(BOS, c), Fraction(0)) for c in range(inst.d)]}
        for b in inst.content_types:
            values[b] = [get(encode.w_name(b, c), Fraction(0)) / F[b] for c in range(inst.d)]
        values[T] = [(get(encode.a_name(c), Fraction(0)) - values[BOS][c]) / F[T] for c in range(inst.d)]
        weights = {(T, b): F[b] for b in inst.query_types}
        for a in inst.content_types:
            for b in inst.content_types:
                weights[(a, b)] = get(encode.r_name(a, b)) * F[b]
            weights[(a, T)] = _to_mpf(eta)
        return softmax_model(inst, weights, values, kind)


# ---- the search -------------------------------------------------------------------------


class _Search:
    def __init__(self, inst: Instance, theta, method: str, timeout_s: float, emit_smt2, kind: str,
                 sink_cap, incremental: bool) -> None:
        self.inst, self.method, self.timeout_s, self.kind = inst, method, timeout_s, kind
        self.theta = None if theta is None else Fraction(theta)
        self.sink_cap = None if sink_cap is None else Fraction(sink_cap)
        self.emit_dir = emit_smt2
        self.incremental = incremental
        self.steps: list[Step] = []
        self.at: list[PositionClass] | None = None  # restrict the violation classes (tests, demos)
        self.runner = Z3Runner()
        self.n_emitted = 0
        # what the claim predicts for a violation query: none for kinds that cannot abstain
        self.slot = PATTERN_KINDS.get(kind, False)
        self.prediction = "sat (no sink needed)" if attention.get(kind).can_abstain else "unsat (sink needed)"

    # -- queries --

    def emit(self, text: str, lemma: str, where: str, expected: str) -> None:
        if self.emit_dir is None:
            return
        from .smt2 import write_query

        self.n_emitted += 1
        write_query(self.emit_dir, f"{self.n_emitted:04d}_{lemma}.smt2", text, {
            "instance": self.inst.describe(), "kind": self.kind, "method": self.method,
            "theta": str(self.theta), "step": f"{lemma} at {where}", "expected": expected,
            "meaning": "unsat = this step of the proof holds" if expected == "unsat" else "sat = a head exists",
            "prediction for violation queries of this kind": self.prediction,
        })

    def run(self, text: str, lemma: str, where: str, expected: str = "unsat", eps_note: str = "",
            tries: tuple[tuple[int, bool], ...] = ((0, False),), budget: float | None = None) -> Answer:
        """One query. With several ``tries`` (z3 random seed, preprocess with solve-eqs) an
        unknown is retried the next way, each try with ``budget`` seconds and recorded."""
        self.emit(text, lemma, where, expected)
        budget = self.timeout_s if budget is None else budget
        for seed, preprocess in tries:
            ans = self.runner.check(text, budget, seed, preprocess)
            note = f" (seed {seed}{', solve-eqs' if preprocess else ''})" if len(tries) > 1 else ""
            self.steps.append(Step(lemma, where + eps_note + note, expected, ans.result, round(ans.seconds, 4), ans.reason))
            if ans.result != "unknown":
                break
        return ans

    def run_each(self, base: Script, extras: list[tuple[str, Script]], lemma: str) -> list[Answer]:
        """Incremental: one base, one check per (where, extra)."""
        texts = [e.text(declared=base.decls) for _, e in extras]
        for (where, _), extra in zip(extras, texts):
            self.emit(base.text() + extra, lemma, where, "unsat")
        answers = self.runner.check_each(base.text(), texts, self.timeout_s)
        for (where, _), ans in zip(extras, answers):
            self.steps.append(Step(lemma, where, "unsat", ans.result, round(ans.seconds, 4), ans.reason))
        return answers

    # -- confirming a SAT --

    def confirm(self, model: LayerModel, cls: PositionClass | None) -> tuple[str, Replay | None, str]:
        """Replay on every sequence; a violation also needs BOS mass < theta at ``cls``."""
        try:
            rep = replay(self.inst, model)
        except NotExpressible as e:
            return "candidate", None, f"relaxation-sat; not replayable: {e}"
        if not rep.ok:
            return "candidate", rep, f"relaxation-sat; replay error {rep.max_error} > eps {rep.eps}"
        if cls is None:
            if self.sink_cap is not None and rep.min_bos_covered is not None and \
                    _to_mpf(rep.min_bos_covered) > _to_mpf(self.sink_cap):
                return "candidate", rep, "replayed head exceeds the sink cap"
            return "solution", rep, "replayed on every sequence"
        bos = class_bos_mass(self.inst, model, cls)
        if not _to_mpf(bos) < _to_mpf(self.theta):
            return "candidate", rep, f"replayed BOS mass {bos} >= theta at {cls.label(self.inst)}"
        return "counterexample", rep, f"replayed on every sequence; BOS mass at {cls.label(self.inst)} is {float(bos):.6g}"

    def _solve_with_margin(self, script, step: str, cls: PositionClass | None, classes: list[PositionClass],
                           extra: Script, base_eps: Fraction):
        """Solve ``script`` at a tighter tolerance (MARGIN * eps for one class, eps/2 for all) so
        that the model replays within eps; returns (answer, tolerance used)."""
        half = base_eps * (MARGIN if cls is not None else Fraction(1, 2))
        text = script(self.inst, half, classes, slot=self.slot).extended(extra).text()
        ans = self.run(text, step, cls.label(self.inst) if cls else "all classes", "sat", f" (eps'={half})")
        return ans, half

    def confirm_pattern(self, cls: PositionClass | None, classes: list[PositionClass], extra: Script,
                        base_eps: Fraction) -> tuple[str, Replay | None, str, LayerModel | None]:
        """Re-solve the exact encoding with a margin (MARGIN * eps, or eps/2) and replay it at eps."""
        inst = self.inst
        ans, half = self._solve_with_margin(encode.pattern_script, "pattern-resolve", cls, classes, extra, base_eps)
        if ans.result != "sat":
            return "candidate", None, f"sat at eps, {ans.result} at eps'={half} ({ans.reason})", None
        model = pattern_model(inst, ans.model, self.kind)
        status, rep, why = self.confirm(model, cls)
        return status, rep, why, model

    def confirm_ideal(self, cls: PositionClass | None, classes: list[PositionClass], extra: Script,
                      base_eps: Fraction) -> tuple[str, Replay | None, str, LayerModel | None]:
        """Values fixed to the ideal images make the query linear (a restriction: a SAT is a
        real head); solved with a margin and replayed at eps."""
        inst = self.inst
        ans, half = self._solve_with_margin(encode.ideal_values_script, "ideal-values-solve", cls, classes, extra,
                                            base_eps)
        if ans.result != "sat":
            return "candidate", None, f"ideal-values restriction {ans.result} at eps'={half}", None
        weights = {(q, b): ans.model[encode.e_name(q, b)] for q in inst.query_types for b in inst.types
                   if encode.e_name(q, b) in ans.model}
        model = softmax_model(inst, weights, encode.ideal_values(inst), self.kind)
        status, rep, why = self.confirm(model, cls)
        return status, rep, why, model

    def close(self) -> None:
        self.runner.close()


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
                          stop_at_first: bool = True, at: list[PositionClass] | None = None) -> SearchResult:
    """Search a head of ``kind`` solving ``inst`` within ``inst.eps`` with BOS mass < ``theta`` at
    some covered non-trigger class (``theta=None``: any head, the positive control)."""
    attention.get(kind)
    start = time.perf_counter()
    result = SearchResult("unknown", kind, method, inst.describe(), None if theta is None else str(Fraction(theta)), 0.0)
    why_not = _check_method(kind, method, inst)
    if why_not:
        result.reason = why_not
        return result
    s = _Search(inst, theta, method, timeout_s, emit_smt2, kind, sink_cap, incremental)
    s.at = at
    try:
        if method == "scores":
            from .relu import run_scores

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
            _chain(s, result, stop_at_first)
    finally:
        s.close()
    result.steps = s.steps
    result.seconds = time.perf_counter() - start
    return result


# ---- positive control -----------------------------------------------------------------------


def _solve(s: _Search, result: SearchResult) -> None:
    inst = s.inst
    classes = enumerate_classes(inst)
    extra = Script()
    if s.sink_cap is not None:
        extra = encode.sink_cap(inst, [c for c in classes if c.phase(inst) != TRIG and _covered(inst, c)], s.sink_cap, s.slot)
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
    model = _mapped_back(inst, ans.model, s.kind)
    result.model = model
    result.status, result.replay, result.reason = s.confirm(model, None)


def _covered(inst: Instance, cls: PositionClass) -> bool:
    from .classes import covered

    return covered(inst, cls)


def _mapped_back(inst: Instance, model: dict[str, Any], kind: str = "softmax") -> LayerModel:
    vmax = max([abs(float(v)) for v in model.values() if isinstance(v, Fraction)] + [1.0])
    eta = Fraction(inst.eps) / Fraction(8) / Fraction(math.ceil(vmax))
    return reparam_model(inst, model, eta if eta > 0 else Fraction(1, 10 ** 6), kind)


# ---- violation search, one query per class --------------------------------------------------


def _per_class(s: _Search, result: SearchResult, stop_at_first: bool, query) -> None:
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
    result.status = _combine(statuses)
    if result.status == "proof":
        result.reason = f"all {len(statuses)} class queries UNSAT"


def _sat_status(s: _Search, cls: PositionClass, ans: Answer, exact_classes: list[PositionClass] | None,
                mapped: LayerModel | None = None, exact_first: bool = False, box=None) -> tuple[str, dict]:
    """Turn a SAT answer of a (possibly relaxed) query into proof / counterexample / candidate.

    A mapped-back model is replayed first. Otherwise, if the SAT came from a relaxation
    (``exact_first``), the exact encoding (all classes, plus the proved box as a hint) is asked
    at eps: UNSAT there still closes the class. A SAT of the exact encoding is re-solved with a margin
    and replayed, so only a replayed head counts as a counterexample."""
    inst = s.inst
    if mapped is not None:
        status, rep, why = s.confirm(mapped, cls)
        if status == "counterexample":
            return status, {"model": mapped, "replay": rep, "reason": why}
    if exact_classes is None:
        return "candidate", {"reason": "relaxation-sat (no head to replay)"}
    viol = encode.violation(inst, cls, s.theta, s.slot)
    if exact_first:
        text = encode.pattern_script(inst, inst.eps, exact_classes, box, s.slot).extended(viol).text()
        exact = s.run(text, "pattern-class", cls.label(inst))
        if exact.result == "unsat":
            return "proof", {}
        if exact.result != "sat":
            return "unknown", {"reason": f"{cls.label(inst)}: relaxation sat, exact query {exact.result} ({exact.reason})"}
    status, rep, why, model = s.confirm_ideal(cls, exact_classes, viol, inst.eps)
    if status != "counterexample":
        status, rep, why, model = s.confirm_pattern(cls, exact_classes, viol, inst.eps)
    return status, {"model": model, "replay": rep, "reason": why}


def _answer_status(s: _Search, cls, ans: Answer, on_sat) -> tuple[str, dict]:
    if ans.result == "unsat":
        return "proof", {}
    if ans.result == "sat":
        return on_sat()
    return "unknown", {"reason": f"{cls.label(s.inst)}: {ans.reason or 'unknown'}"}


def _pattern_query(s: _Search, cls: PositionClass):
    inst = s.inst
    classes = enumerate_classes(inst)
    text = encode.pattern_script(inst, inst.eps, classes, slot=s.slot).extended(encode.violation(inst, cls, s.theta, s.slot)).text()
    ans = s.run(text, "pattern-class", cls.label(inst))
    return _answer_status(s, cls, ans, lambda: _sat_status(s, cls, ans, classes))


def _reparam_query(s: _Search, cls: PositionClass):
    inst = s.inst
    if cls.phase(inst) != PRE:
        s.steps.append(Step("reparam-class", cls.label(inst), "unsat", "unknown", 0.0, "not in the pre-trigger slice"))
        return "unknown", {"reason": "method 'reparam' covers pre-trigger classes only"}
    text = encode.reparam_script(inst, inst.eps).extended(encode.reparam_violation(inst, cls, s.theta)).text()
    ans = s.run(text, "reparam-class", cls.label(inst))
    return _answer_status(s, cls, ans, lambda: _sat_status(s, cls, ans, enumerate_classes(inst),
                                                           _mapped_back(inst, ans.model, s.kind)))


def _free_pattern_query(s: _Search, cls: PositionClass):
    inst = s.inst
    ans = s.run(encode.free_pattern_script(inst, inst.eps, s.theta, cls).text(), "free-pattern-class", cls.label(inst))
    return _answer_status(s, cls, ans, lambda: ("candidate", {
        "reason": "free-pattern SAT: a simplex point per class, not a head (token consistency dropped)"}))


# ---- the lemma chain ------------------------------------------------------------------------

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


def value_box(s: _Search) -> dict[tuple[int, int], tuple[Fraction | None, Fraction | None]] | None:
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


def _chain(s: _Search, result: SearchResult, stop_at_first: bool) -> None:
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
            status, info = _answer_status(s, cls, ans, lambda: _sat_status(s, cls, ans, all_classes,
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
    result.status = _combine(statuses)
    if result.status == "proof":
        result.reason = f"value box (LRA, UNSAT) + {len(statuses)} class queries UNSAT"
