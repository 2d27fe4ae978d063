"""The proofs registry: every statement proved, every planted false statement refuted, and the
checkers able to fail (a wrong constant, a wrong coefficient, an unjustified atom)."""

import json
import os
import subprocess
import sys

import pytest
import sympy

from constructions.errors import BadInput
from proofs.statements import algebra
from proofs import registry
from proofs.statements.planted_false_statements import CONTROLS
from proofs.statements.verdict import Evidence, Verdict, timed

# Statements whose honest verdict is not "proved" (refuted by an exact counterexample, or open).
EXPECTED = registry.EXPECTED
STATEMENTS = [n for n in registry.names() if n not in CONTROLS and n not in EXPECTED]


@pytest.fixture(scope="module")
def verdicts():
    return {v.name: v for v in registry.run()}


@pytest.mark.parametrize("name", STATEMENTS)
def test_statement_is_proved(verdicts, name):
    v = verdicts[name]
    assert v.status == "proved", v.evidence
    assert not v.planted and v.evidence and v.cases and v.statement
    assert not any(line.startswith("did not close") for line in v.evidence)
    json.dumps(v.to_dict())  # JSON-serialisable


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_statement_has_its_expected_verdict(verdicts, name):
    v = verdicts[name]
    assert v.status == EXPECTED[name], v.evidence
    if v.status == "refuted":
        assert v.evidence[-1].startswith("counterexample:") and not any(e.startswith("did not close") for e in v.evidence)
    else:
        assert any(e.startswith(("did not close", "not checked")) for e in v.evidence)  # says what is missing


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_planted_false_statement_is_not_proved(verdicts, name):
    v = verdicts[name]
    assert v.planted
    assert v.status == "refuted", v.evidence
    assert v.evidence[-1].startswith("counterexample:")


def test_content_flag_bound_fails_when_tightened(monkeypatch):
    from proofs.statements import content_flag_lower_bound as m

    monkeypatch.setattr(m, "lower_bound", lambda: sympy.Rational(5, 6) - 2 * m.tr.eta)
    assert m.check().status == "unknown"


def test_flag_sum_bound_fails_with_a_smaller_error_term(monkeypatch):
    from proofs.statements import flag_sum_lower_bound as m

    monkeypatch.setattr(m, "m_r", lambda: 1 - 5 * m.e - 8 * m.e * (1 + 48 * m.e) / (1 - 96 * m.e))
    v = m.check()
    assert v.status == "unknown" and any("w_r - m_r" in line for line in v.evidence if line.startswith("did not"))


def test_certificate_rejects_wrong_terms():
    x, y = sympy.symbols("x y", real=True)
    atoms = [algebra.Atom("x", x, "premise"), algebra.Atom("y", y, "premise"),
             algebra.Atom("x - 1", x - 1, "interval")]
    assert algebra.certificate(x + 2 * y, [(1, ["x"]), (2, ["y"])], atoms)[0]
    assert not algebra.certificate(x + 2 * y, [(1, ["x"]), (1, ["y"])], atoms)[0]  # residual y
    assert not algebra.certificate(x - y, [(1, ["x"]), (-1, ["y"])], atoms)[0]  # negative coefficient
    assert not algebra.certificate(x, [(1, ["z"])], atoms)[0]  # undeclared atom
    # an "interval" atom must depend on eta alone and be >= 0 on the interval
    eta = sympy.Symbol("eta", nonnegative=True)
    assert not algebra.certificate(x - 1, [(1, ["x - 1"])], atoms, eta, sympy.Interval(0, 1))[0]
    ok_atom = algebra.Atom("1/2 - eta", sympy.Rational(1, 2) - eta, "interval")
    assert algebra.certificate(1 - 2 * eta, [(2, ["1/2 - eta"])], [ok_atom], eta, sympy.Interval(0, sympy.Rational(1, 2)))[0]
    assert not algebra.certificate(1 - 2 * eta, [(2, ["1/2 - eta"])], [ok_atom], eta, sympy.Interval(0, 1))[0]


def test_is_zero_never_guesses():
    x = sympy.Symbol("x", real=True)
    assert algebra.is_zero(sympy.sin(x) ** 2 + sympy.cos(x) ** 2 - 1)
    assert not algebra.is_zero(x - x ** 2)


def test_verdict_status_rules():
    with pytest.raises(ValueError):
        Verdict("x", "maybe", "s")
    assert timed("x", "s", lambda ev: ev.note("argued only")).status == "unknown"  # nothing checked
    assert timed("x", "s", lambda ev: (ev.step(True, "a"), ev.step(False, "b"))).status == "unknown"
    assert timed("x", "s", lambda ev: ev.step(True, "a")).status == "proved"
    ev = Evidence()
    ev.refute("c")
    assert ev.status == "refuted"


def test_unknown_statement_is_bad_input_listing_valid_names():
    with pytest.raises(BadInput, match="valid: .*t1_single_layer_sink"):
        registry.run(["no_such_statement"])


def _sinks(*args, cwd=None):
    # SINKS_COQ=off: a subprocess would compile the Coq development again; tests/test_coq.py checks
    # `sinks prove` with the kernel check in-process, where the compile is shared.
    env = {**os.environ, "SINKS_COQ": "off"}
    return subprocess.run([sys.executable, "-m", "empirical.pipeline.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env)


def test_prove_command_writes_results_with_provenance(tmp_path):
    r = _sinks("prove", "sink_bound_direction", "planted_convex_hull_no_denominator", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "sink_bound_direction" in r.stdout and "proved" in r.stdout and "refuted" in r.stdout
    record = json.loads((tmp_path / "proofs.json").read_text())
    assert [v["status"] for v in record["verdicts"]] == ["proved", "refuted"]
    assert record["all_as_expected"] and "versions" in record["provenance"]
    assert [c["verdict"] for c in record["claims"]] == ["refuted"]  # only the planted claim's statements ran


def test_prove_exit_status_follows_the_stated_verdicts(tmp_path, monkeypatch, capsys):
    """T2 refuted is the suite's finding (exit 0); had it been stated proved, the same verdict
    is reported as unexpected with exit 1."""
    import argparse

    from empirical.pipeline.commands import prove

    args = argparse.Namespace(names=["t2_multi_layer_existential"], out=str(tmp_path), list=False)
    assert prove.run(args) == 0
    monkeypatch.setitem(registry.EXPECTED, "t2_multi_layer_existential", "proved")
    assert prove.run(args) == 1
    assert "UNEXPECTED: the suite states proved" in capsys.readouterr().out


def test_prove_output_is_readable_by_the_report(tmp_path):
    from empirical.pipeline.reproduce import load_part

    r = _sinks("prove", "t1_single_layer_sink", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    record = load_part(tmp_path, "proofs")
    assert record is not None and record["tables"] and any(c["claim"].startswith("T1(c)") for c in record["claims"])


def test_prove_command_bad_name_is_one_line_exit_2(tmp_path):
    r = _sinks("prove", "nosuch", "--out", str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nosuch" in r.stderr and "valid:" in r.stderr
    assert not (tmp_path / "proofs.json").exists()


def test_prove_command_does_not_load_torch():
    code = ("import sys; from empirical.pipeline import cli; cli.main(['prove', '--list']); "
            "print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip().endswith("False"), r.stdout + r.stderr


def test_part_output_is_valid(verdicts, monkeypatch, tmp_path):
    from empirical.pipeline.parts import proofs as part
    from empirical.pipeline.reproduce import validate_output

    monkeypatch.setattr(registry, "run", lambda names=None: list(verdicts.values()))
    claims, tables, details = validate_output(part.run(tmp_path, True, "cpu"))
    by_claim = {c["claim"][:6]: c["verdict"] for c in claims}
    assert by_claim["T1(a):"] == by_claim["T1(b):"] == by_claim["T3: th"] == "proved"
    assert any(c["verdict"] == "unknown" and "L = 4" in c["claim"] for c in claims)
    assert tables and all(len(r) == len(tables[0]["columns"]) for r in tables[0]["rows"])
    json.dumps(details)


def test_t3_stack_step_fails_when_a_later_layer_writes(monkeypatch):
    import dataclasses

    from constructions import relu_head
    from proofs.statements import relu_construction_exact as m

    real = relu_head.build_stack

    def leaky(d, layers, heads):
        net = real(d, layers, heads)
        if layers < 2:
            return net
        W_O = tuple(tuple(1 if (r == c) else x for c, x in enumerate(row)) for r, row in enumerate(net.layers[1].W_O))
        return dataclasses.replace(net, layers=(net.layers[0], dataclasses.replace(net.layers[1], W_O=W_O)) + net.layers[2:])

    monkeypatch.setattr(relu_head, "build_stack", leaky)
    assert registry.run(["relu_construction_exact"])[-1].status == "unknown"


def test_tightened_t1a_is_refuted_only_below_the_tight_ratio(monkeypatch):
    from fractions import Fraction

    from proofs.statements import t1_tightness as m

    assert m.check_tightened().status == "refuted"  # 99/100 f_pre: the tight head violates it
    monkeypatch.setattr(m, "TIGHTENING", Fraction(1))  # T1(a) itself: the head satisfies it
    v = m.check_tightened()
    assert v.status == "unknown" and any("no counterexample" in e for e in v.evidence)


def test_sharp_pre_trigger_bound_fails_when_tightened(monkeypatch):
    from proofs.statements import t1_tightness as m

    monkeypatch.setattr(m, "m_5", lambda: 1 - 20 * m.e)  # claims h_t >= 1 - 20 eta: the certificate cannot close
    v = registry.run(["t1_pre_trigger_sharp"])[-1]
    assert v.status == "unknown" and any("h_t - m_5" in e for e in v.evidence if e.startswith("did not close"))
