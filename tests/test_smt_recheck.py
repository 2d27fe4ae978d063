"""``--recheck cvc5``: every step's query re-solved by a second solver (proofs/smt/recheck.py).
The tests with the real cvc5 skip where the optional extra is not installed (CI); the verdict
logic (agree / cvc5 unknown / disagreement) is tested everywhere with a stand-in answer."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from constructions.errors import BadInput
from proofs.smt import encode, recheck
from proofs.smt.hardkill import RLIMIT, SAFETY_S, Answer
from proofs.smt.instance import reference_instance
from proofs.smt.search import search_counterexample
from proofs.smt.verdict import LP_CHECKER

EPS = F(1, 100)
# work limits for z3 and cvc5: the same verdict on every machine
WORK = {"timeout_s": SAFETY_S, "rlimit": RLIMIT, "recheck_rlimit": recheck.CVC5_RLIMIT}
INST = reference_instance(2, 3, EPS)
HAVE_CVC5 = recheck.available("cvc5")
needs_cvc5 = pytest.mark.skipif(not HAVE_CVC5, reason="cvc5 not installed (optional extra: pip install '.[smt]')")


def _with_second_answer(monkeypatch, answer: str, reason: str = ""):
    monkeypatch.setattr(recheck, "available", lambda solver: True)
    monkeypatch.setattr(recheck.Cvc5Runner, "check", lambda self, text, timeout_s: Answer(answer, 0.0, reason))
    monkeypatch.setattr(recheck.Cvc5Runner, "close", lambda self: None)


@needs_cvc5
def test_cvc5_agrees_with_every_step_of_a_proof():
    r = search_counterexample(INST, F(1, 2), "chain", **WORK, recheck_with="cvc5")
    assert r.status == "proof" and r.recheck["disagree"] == 0
    assert r.recheck["agree"] + r.recheck["unknown"] == len(r.steps)
    for step in r.steps:
        assert step.checker.endswith("cvc5 agree") or " only (cvc5 " in step.checker
    box = [s for s in r.steps if s.lemma == "LRA-box"]
    assert box and all(s.checker == f"{LP_CHECKER}, cvc5 agree" for s in box)


@needs_cvc5
def test_cvc5_contradicts_a_false_unsat_claim():
    """A box bound 1/100 below the LP optimum is satisfiable: cvc5 says sat, so a step that
    claimed unsat for it is reported as a disagreement."""
    from proofs.smt import farkas
    from proofs.smt.linear import parse_facts

    value, _, _ = farkas.certified_max(parse_facts(encode.box_lp(INST, EPS, 1, 2, 1).asserts), "OBJ")
    text = encode.box_bound_check(INST, EPS, 1, 2, 1, value - F(1, 100)).text()
    with recheck.Cvc5Runner(recheck.CVC5_RLIMIT) as runner:
        second = runner.check(text, SAFETY_S)
    assert second.result == "sat"
    label, contradiction = recheck.verdict_of("unsat", second, "z3")
    assert contradiction and label.startswith("DISAGREE")


def test_a_disagreement_is_a_failed_check_never_a_proof(monkeypatch):
    _with_second_answer(monkeypatch, "sat")
    r = search_counterexample(INST, F(1, 2), "chain", **WORK, recheck_with="cvc5")
    assert r.status == "unknown" and r.reason.startswith("recheck failed")
    assert r.recheck["disagree"] == len(r.steps) and all(s.checker.startswith("DISAGREE") for s in r.steps)


def test_a_second_solver_without_answer_leaves_the_step_on_the_first(monkeypatch):
    _with_second_answer(monkeypatch, "unknown", "hard-kill")
    r = search_counterexample(INST, F(1, 2), "chain", **WORK, recheck_with="cvc5")
    assert r.status == "proof" and r.recheck["unknown"] == len(r.steps) and r.recheck["agree"] == 0
    assert {s.checker for s in r.steps if s.lemma == "NRA-class"} == {"z3 only (cvc5 unknown: hard-kill)"}


def test_recheck_needs_the_solver(monkeypatch):
    monkeypatch.setattr(recheck.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BadInput, match="not installed"):
        search_counterexample(INST, F(1, 2), "chain", recheck_with="cvc5")
    with pytest.raises(BadInput, match="not installed"):
        search_counterexample(INST, F(1, 2), "chain", recheck_with="nosuch")


def test_cli_rejects_a_missing_second_solver(tmp_path, capsys):
    from empirical.pipeline import cli

    assert cli.main(["search", "--length", "3", "--recheck", "nosuch", "--out", str(tmp_path)]) == 2
    assert "not installed" in capsys.readouterr().err and not (tmp_path / "smt.json").exists()


def test_cli_reports_the_checker_per_step_and_fails_on_a_disagreement(monkeypatch, tmp_path, capsys):
    import json

    from empirical.pipeline import cli

    _with_second_answer(monkeypatch, "sat")
    args = ["search", "--length", "3", "--theta", "1/2", "--recheck", "cvc5", "--out", str(tmp_path),
            "--rlimit", str(RLIMIT), "--timeout", str(SAFETY_S)]
    assert cli.main(args) == 1
    out = capsys.readouterr().out
    assert "verdict: unknown" in out and "DISAGREE" in out and "disagree" in out
    record = json.loads((tmp_path / "smt.json").read_text())
    assert record["search"]["recheck"]["disagree"] > 0 and record["provenance"]["config"]["recheck"] == "cvc5"
    assert all(s["checker"].startswith("DISAGREE") for s in record["search"]["steps"])
