"""SMT search (proofs/smt): proofs on small instances, the traps F1-F6, positive controls,
planted bugs. Every SAT that counts is replayed on every sequence; unknown never passes."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from constructions import attention, task
from proofs.smt import encode
from proofs.smt.classes import POST, PRE, PositionClass, enumerate_classes, violation_classes
from proofs.smt.hardkill import RLIMIT, SAFETY_S, Z3Runner
from proofs.smt.instance import Instance, reference_instance
from proofs.smt.multihead import cancelling_heads
from proofs.smt.replay import replay
from proofs.smt.search import search_counterexample

EPS = F(1, 100)
HALF = F(1, 2)
WORK = {"timeout_s": SAFETY_S, "rlimit": RLIMIT}  # a z3 work limit: the same verdict on every machine


def _post(inst, result):
    return result.where is not None and "Tx1" in result.where


# ---- instances and classes ------------------------------------------------------------------


def test_reference_instance_targets_are_the_task_targets():
    inst = reference_instance(2, 4, EPS)
    assert inst.is_reference and inst.independent() and inst.symmetric()
    variant = Instance(inst.contents, 4, EPS, mean="inclusive", bos_in_mean=False, max_triggers=None)
    seqs = list(inst.type_sequences())
    assert len(seqs) == inst.count_sequences() == 3 * 2 ** 3
    for types in seqs:
        j = types.index(inst.trigger)
        assert inst.target(types) == task.target(inst.features(types), j)
        assert variant.target(types) == inst.target(types)  # the variant code agrees where they overlap


def test_classes_cover_every_prefix_of_every_sequence():
    inst = reference_instance(2, 5, EPS)
    classes = set(enumerate_classes(inst))
    seen = set()
    for types in inst.type_sequences():
        for i in range(1, len(types)):
            counts = tuple(types[1: i + 1].count(t) for t in inst.query_types)
            seen.add(PositionClass(types[i], counts))
    assert seen == classes
    assert len(violation_classes(inst)) < len([c for c in classes if c.phase(inst) in (PRE, POST)])


# ---- proofs (UNSAT certificates) -------------------------------------------------------------


@pytest.mark.parametrize("length", [3, 4, 5, 6])
def test_sink_proved_two_types(length):
    """T1 on the reference task: BOS mass >= 1/2 at every non-trigger query, before AND after the
    trigger (the trigger's own features keep it from acting as a second sink)."""
    inst = reference_instance(2, length, EPS)
    r = search_counterexample(inst, HALF, "chain", **WORK)
    assert r.status == "proof", (r.status, r.reason)
    assert r.steps[0].lemma == "LRA-box" and not any(s.result == "sat" for s in r.steps)
    # one UNSAT per class (a stalled query may have been retried: its unknown stays on record)
    assert sum(s.lemma == "NRA-class" and s.result == "unsat" for s in r.steps) == len(violation_classes(inst))


def test_emit_smt2_files_have_headers(tmp_path):
    inst = reference_instance(2, 3, EPS)
    r = search_counterexample(inst, HALF, "chain", **WORK, emit_smt2=tmp_path)
    files = sorted(tmp_path.glob("*.smt2"))
    assert r.status == "proof" and len(files) == len(r.steps), (r.status, r.reason)
    text = files[-1].read_text()
    assert "; instance:" in text and "; step: NRA-class" in text and "; expected: unsat" in text
    assert text.rstrip().endswith("(check-sat)\n(exit)")
    import re

    assert not re.search(r"\(\+ [^\s()]+\)", text)  # no one-argument sums
    # each file is a complete script: a fresh solver answers it as recorded
    body = text.split("(set-logic ALL)")[1].replace("(check-sat)", "").replace("(exit)", "")
    with Z3Runner(rlimit=RLIMIT) as runner:
        assert runner.check(body, SAFETY_S).result == "unsat"


def test_sums_are_guarded():
    from proofs.smt.smt2 import add

    assert add("x") == "x" and add() == "0.0" and add("x", "0.0") == "x"


# ---- unknown is never a pass -----------------------------------------------------------------


def test_hard_kill_gives_unknown():
    """A query z3 cannot finish is killed at the budget and reported unknown."""
    inst = reference_instance(2, 4, F(1, 10))
    text = encode.pattern_script(inst, inst.eps, enumerate_classes(inst)).text()
    with Z3Runner(grace_s=0.0) as runner:
        ans = runner.check(text, 0.2)
    assert ans.result in ("unknown", "sat")  # tiny budgets sometimes suffice; never "unsat"
    r = search_counterexample(inst, None, "pattern", timeout_s=0.05)
    assert r.status != "proof"


def test_unknown_steps_make_the_verdict_unknown(monkeypatch):
    from proofs.smt import hardkill

    real = hardkill.Z3Runner.check_each

    def fake(self, base, extras, timeout_s, *args):
        answers = real(self, base, extras, timeout_s, *args)
        return [hardkill.Answer("unknown", a.seconds, "planted unknown") for a in answers]

    monkeypatch.setattr(hardkill.Z3Runner, "check_each", fake)
    r = search_counterexample(reference_instance(2, 3, EPS), HALF, "chain", **WORK)
    assert r.status == "unknown"


# ---- traps -----------------------------------------------------------------------------------


def test_trap_f2_trigger_is_a_second_sink_in_the_abstract_task():
    """Abstract task (trigger counts as zero in the mean, BOS value free): after the trigger, the
    trigger can take the mass; the counterexample is replayed on every sequence."""
    inst = reference_instance(2, 4, EPS, trigger_value="zero", bos_value="free")
    r = search_counterexample(inst, HALF, "chain", **WORK)
    assert r.status == "counterexample" and _post(inst, r)
    assert r.replay.ok and float(r.replay.max_error) <= float(EPS)
    assert float(r.replay.min_bos_post_trigger) < 0.5 and float(r.replay.min_bos_pre_trigger) > 0.9
    pre_only = search_counterexample(reference_instance(2, 4, EPS, trigger_value="zero", bos_value="free",
                                                        covered="pre_trigger"), HALF, "chain", **WORK)
    assert pre_only.status == "proof"


def test_trap_f3_length_two_has_sink_free_solutions():
    inst = reference_instance(2, 2, F(1, 10))
    r = search_counterexample(inst, HALF, "pattern", **WORK)
    assert r.status == "counterexample" and r.replay.ok
    assert float(r.replay.min_bos_covered) < 0.5


def test_trap_f4_softmax_cannot_solve_with_eps_zero():
    r = search_counterexample(reference_instance(2, 4, 0), None, "pattern", **WORK)
    assert r.status == "proof"  # no head at all: weights are strictly positive


def test_trap_f1_exclusive_mean_with_many_triggers_is_unsolvable():
    inst = reference_instance(2, 3, F(1, 10), mean="exclusive", max_triggers=None)
    assert search_counterexample(inst, None, "pattern", **WORK).status == "proof"
    inclusive = reference_instance(2, 3, F(1, 10), max_triggers=None)
    assert search_counterexample(inclusive, None, "pattern", **WORK).status == "solution"


def test_trap_f5_relu_exclusive_mean_has_no_exact_head():
    exclusive = reference_instance(2, 4, 0, mean="exclusive")
    assert search_counterexample(exclusive, None, "scores", kind="relu", **WORK).status == "proof"
    inclusive = reference_instance(2, 4, 0)
    assert search_counterexample(inclusive, None, "scores", kind="relu", **WORK).status == "solution"


def test_trap_f6_free_pattern_has_sink_free_solutions():
    """Without token consistency (a free simplex point per class) a 'no sink' assignment exists at
    a class where the token-consistent proof above says none does; it is no head, so only a candidate."""
    inst = reference_instance(2, 3, F(1, 10))
    cls = PositionClass(1, (1, 1, 0))
    r = search_counterexample(inst, HALF, "free_pattern", **WORK, at=[cls])
    assert r.status == "candidate" and r.replay is None
    assert search_counterexample(inst, HALF, "chain", **WORK, at=[cls]).status == "proof"


# ---- positive controls -------------------------------------------------------------------------


def test_softmax_with_sink_allowed_is_found_and_replayed():
    inst = reference_instance(2, 4, F(1, 10))
    r = search_counterexample(inst, None, "pattern", **WORK)
    assert r.status == "solution" and r.replay.ok
    assert r.replay.sequences == inst.count_sequences()
    assert float(r.replay.max_error) <= 0.1 and float(r.replay.min_bos_covered) > 0.5  # it sinks
    mapped = search_counterexample(inst, None, "reparam", **WORK)
    assert mapped.status == "solution" and mapped.replay.ok


def test_relu_with_zero_bos_weight_is_found_and_replayed_exactly():
    inst = reference_instance(2, 4, 0)
    r = search_counterexample(inst, None, "scores", kind="relu", sink_cap=0, **WORK)
    assert r.status == "solution" and r.replay.exact
    assert r.replay.max_error == "0" and r.replay.max_bos_covered == "0"
    v = search_counterexample(inst, F(1, 100), "scores", kind="relu", **WORK)
    assert v.status == "counterexample"  # the 'violation' exists for ReLU: no sink needed


def test_two_heads_that_cancel_need_no_sink():
    out = cancelling_heads(reference_instance(2, 4, F(1, 10)), cap=HALF, **WORK)
    assert out["status"] == "solution"
    assert all(r.ok and float(r.max_bos_covered) <= 0.5 for r in out["replay"])


# ---- planted bugs flip verdicts ----------------------------------------------------------------


def test_planted_bos_in_mean_flips_relu_and_fails_replay():
    good = reference_instance(2, 4, 0)
    buggy = reference_instance(2, 4, 0, bos_in_mean=True)
    found = search_counterexample(good, None, "scores", kind="relu", sink_cap=0, **WORK)
    assert found.status == "solution"
    assert search_counterexample(buggy, None, "scores", kind="relu", sink_cap=0, **WORK).status == "proof"
    assert not replay(buggy, found.model).ok  # the replay sees the difference too


def test_planted_loose_tolerance_flips_the_proof(monkeypatch):
    inst = reference_instance(2, 4, EPS)
    assert search_counterexample(inst, HALF, "chain", **WORK).status == "proof"
    real = encode.output_facts
    monkeypatch.setattr(encode, "output_facts", lambda y, eps, Z, outs: real(y, eps * 60, Z, outs))
    r = search_counterexample(inst, HALF, "pattern", **WORK, at=[PositionClass(1, (1, 0, 0))])
    assert r.status not in ("proof", "counterexample")  # SAT under the bug, not confirmed by the replay


# ---- every registered kind is encoded or reported --------------------------------------------


@pytest.mark.parametrize("kind", attention.names())
def test_every_kind_is_encoded_or_reported(kind):
    """Kinds that cannot abstain (rows sum to one) need the sink: proof. Kinds that can abstain
    do not: a sink-free head is found and replayed. A kind added later without an encoding
    must come back unknown with a reason, never crash and never pass."""
    from proofs.smt.search import default_method

    inst = reference_instance(2, 3, EPS)
    r = search_counterexample(inst, HALF, default_method(kind), kind=kind, **WORK)
    assert r.status in ("proof", "counterexample", "candidate", "unknown")
    if r.status == "unknown":
        assert r.reason
    known = {"softmax", "sigmoid_norm", "relu", "softmax1", "sink_logit", "sigmoid", "gated", "softpick"}
    if kind in known:
        expected = "counterexample" if attention.get(kind).can_abstain else "proof"
        assert r.status == expected, (r.status, r.reason)
        if expected == "counterexample":
            assert r.replay.ok and float(r.replay.min_bos_covered) < 0.5


def test_hull_lemma_is_unsat_at_32_positions_and_tight():
    with Z3Runner(rlimit=RLIMIT) as runner:
        ans = runner.check(encode.hull_lemma_script(32, F(1), F(1, 10), EPS).text(), SAFETY_S)
        assert ans.result == "unsat"
        # planted: claim a bound stronger than the lemma's (m - eps/2) -> z3 finds the tight example
        stronger = encode.hull_lemma_script(32, F(1), F(1, 10), EPS)
        stronger.asserts[-1] = encode.lt(encode.scale(F(11, 10), "a_0"), encode.num(1 - EPS / 2))
        assert runner.check(stronger.text(), SAFETY_S).result == "sat"
