"""One search session: the hard-killed z3 worker, the per-step record, ``--emit-smt2``, and how
a SAT answer is confirmed (re-solved with a margin, rebuilt as a real head, replayed on every
sequence). Shared by the drivers (``search``, ``chain``, ``relu``), which never import each other.
"""

from __future__ import annotations

from fractions import Fraction

from constructions import attention
from constructions.errors import NotExpressible

from . import encode
from .classes import PositionClass
from .hardkill import Answer, Z3Runner, clock_fired
from .instance import Instance
from .models import pattern_model, softmax_model, to_mpf
from .replay import LayerModel, Replay, class_bos_mass, replay
from .smt2 import Script
from .verdict import Step

# a SAT at eps is re-solved at MARGIN * eps (eps/2 for positive controls), replayed at eps
MARGIN = Fraction(15, 16)


class Session:
    def __init__(self, inst: Instance, theta, method: str, timeout_s: float, emit_smt2, kind: str,
                 sink_cap, incremental: bool, slot: bool = False, rlimit: int | None = None) -> None:
        self.inst, self.method, self.timeout_s, self.kind = inst, method, timeout_s, kind
        self.rlimit = rlimit  # z3 resource units per query: with it the seconds are a safety net only
        self.theta = None if theta is None else Fraction(theta)
        self.sink_cap = None if sink_cap is None else Fraction(sink_cap)
        self.emit_dir = emit_smt2
        self.incremental = incremental
        self.steps: list[Step] = []
        self.at: list[PositionClass] | None = None  # restrict the violation classes (tests, demos)
        self.runner = Z3Runner(rlimit=rlimit)
        self.safety_net: list[str] = []  # under a work limit: the queries the wall clock stopped
        self.keep_text = False  # keep each step's query (a recheck by a second solver reads it)
        self.box_certificates = True  # value-box bounds by exact LP certificates (False: z3 only)
        self.n_emitted = 0
        # what the claim predicts for a violation query: none for kinds that cannot abstain
        self.slot = slot  # a slot kind (weights E / (1 + sum E)): the BOS weight is free too
        self.prediction = "sat (no sink needed)" if attention.get(kind).can_abstain else "unsat (sink needed)"

    # -- queries --

    def note_clock(self, ans: Answer, step: str) -> None:
        """Record a query the wall clock stopped although a work limit was set (the safety net)."""
        if self.rlimit and clock_fired(ans, self.rlimit):
            self.safety_net.append(step)

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
        unknown is retried the next way, each try with ``budget`` seconds and recorded. Under a
        work limit (``rlimit``) every try gets it and the full ``timeout_s`` as its safety net:
        a shorter wall-clock budget would let the machine's speed decide the answer."""
        self.emit(text, lemma, where, expected)
        budget = self.timeout_s if budget is None or self.rlimit else budget
        for seed, preprocess in tries:
            ans = self.runner.check(text, budget, seed, preprocess)
            note = f" (seed {seed}{', solve-eqs' if preprocess else ''})" if len(tries) > 1 else ""
            self.steps.append(Step(lemma, where + eps_note + note, expected, ans.result, round(ans.seconds, 4), ans.reason,
                                   text if self.keep_text else None, work=ans.work))
            self.note_clock(ans, f"{lemma} at {where + eps_note + note}")
            if ans.result != "unknown":
                break
        return ans

    def run_each(self, base: Script, extras: list[tuple[str, Script]], lemma: str) -> list[Answer]:
        """Incremental: one base, one check per (where, extra)."""
        texts = [e.text(declared=base.decls) for _, e in extras]
        for (where, _), extra in zip(extras, texts):
            self.emit(base.text() + extra, lemma, where, "unsat")
        answers = self.runner.check_each(base.text(), texts, self.timeout_s)
        for (where, _), extra, ans in zip(extras, texts, answers):
            self.steps.append(Step(lemma, where, "unsat", ans.result, round(ans.seconds, 4), ans.reason,
                                   base.text() + extra if self.keep_text else None, work=ans.work))
            self.note_clock(ans, f"{lemma} at {where}")
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
                    to_mpf(rep.min_bos_covered) > to_mpf(self.sink_cap):
                return "candidate", rep, "replayed head exceeds the sink cap"
            return "solution", rep, "replayed on every sequence"
        bos = class_bos_mass(self.inst, model, cls)
        if not to_mpf(bos) < to_mpf(self.theta):
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


def sat_status(s: Session, cls: PositionClass, ans: Answer, exact_classes: list[PositionClass] | None,
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


def answer_status(s: Session, cls, ans: Answer, on_sat) -> tuple[str, dict]:
    if ans.result == "unsat":
        return "proof", {}
    if ans.result == "sat":
        return on_sat()
    return "unknown", {"reason": f"{cls.label(s.inst)}: {ans.reason or 'unknown'}"}

