"""Forging "proved (sympy + Coq)": each attack compiles, and each must leave its statements unknown.

Every attack is planted in a scratch copy of the development and checked with the source scan
blinded (``scan`` and ``duplicate_names`` return nothing): what the scan would catch, the
kernel-side checks (``coqchk -o``, ``Print Assumptions`` read strictly, the pins) must catch too.
The scan's own message is tested beside it, on the planted text. Attacks go into the last files
of the compile order where they can, so that only those are compiled again.
"""

import shutil

import pytest

from proofs.coq import kernel, scan as source_scan
from proofs.coq.overlay import with_kernel
from proofs.coq.twins import TWINS
from tests.test_coq import _plant, copy, report, sympy_verdicts  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(kernel.coqc_path() is None or shutil.which("coqchk") is None,
                                reason=f"coqc / coqchk not found; install them with: {kernel.INSTALL_HINT}")

# T1's twin and the last file's: enough to see a failure charged to a theorem and to the development.
TWINNED = ["t1_single_layer_sink", "t2_multi_layer_existential"]
THEOREMS = [t for name in TWINNED for t in TWINS[name]]
AFTER_OPEN = "Open Scope R_scope.\n"


def _blinded_check(monkeypatch, folder):
    """``kernel.check`` of ``folder`` with the source scan reporting nothing."""
    monkeypatch.setattr(kernel, "scan", lambda text, name="": [])
    monkeypatch.setattr(kernel, "duplicate_names", lambda texts: [])
    return kernel.check(folder, theorems=THEOREMS)


def _all_unknown(planted, sympy_verdicts, marker, report):  # noqa: F811
    for name in TWINNED:  # the control: unplanted, both twins earn the label
        assert with_kernel(sympy_verdicts[name], report).kernel == "coq", name
    assert planted.ran and not planted.ok, planted.reason
    markers = (marker,) if isinstance(marker, str) else marker
    assert all(m in planted.reason for m in markers), planted.reason
    for name in TWINNED:
        v = with_kernel(sympy_verdicts[name], planted)
        assert v.status == "unknown" and v.kernel != "coq" and markers[0] in v.kernel, (name, v.kernel)


THE_PHRASE = ("Hypothesis cheat : forall Closed under the global context : Prop, "
              "Closed -> under -> the -> global -> context -> False.\n")


@pytest.mark.slow
def test_a_hypothesis_behind_a_one_line_section_with_the_closed_phrase_in_its_type(
        report, copy, sympy_verdicts, monkeypatch, tmp_path, capsys):  # noqa: F811
    """The outside read's attack on T1.v: before, all 8 rows read "proved (sympy + Coq)"."""
    from constructions.files import read_json
    from empirical.pipeline import cli

    _plant(copy, "T1.v", AFTER_OPEN, AFTER_OPEN + "Section S. End S.\n" + THE_PHRASE)
    _plant(copy, "T1.v", "Proof. exact (conj t1a_pre_trigger (conj t1b_every_non_trigger_query t1c_exact_is_impossible)). Qed.",
           "Proof. exfalso. exact (cheat True True True True True I I I I I). Qed.")
    assert source_scan.scan((copy / "T1.v").read_text(), "T1.v")  # the scan sees it now; the kernel must too
    planted = _blinded_check(monkeypatch, copy)
    _all_unknown(planted, sympy_verdicts, "Sinks.T1.cheat", report)  # coqchk: an axiom the development declares
    assert "T1.cheat" in planted.failed["t1_single_layer_sink"]  # Print Assumptions, read strictly, names it too
    monkeypatch.setattr(kernel, "_REPORT", planted)
    code = cli.main(["prove", "t1_single_layer_sink", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 1 and "proved (sympy + Coq)" not in out, out
    verdicts = {v["name"]: v for v in read_json(tmp_path / "out" / "proofs.json")["verdicts"]}
    assert verdicts["t1_single_layer_sink"]["status"] == "unknown"


@pytest.mark.parametrize("name, planted, marker", [
    ("a string in a comment hides an axiom from a lexer that ends the comment early",
     '(* " *) " *)\nAxiom cheat2 : False.\n', "Sinks.T2Stack.cheat2"),
    ("an axiom inside a Module", "Module Hidden.\nAxiom cheat : False.\nEnd Hidden.\n", "Sinks.T2Stack.Hidden.cheat"),
    ("a Local Axiom", "Local Axiom cheat : forall x : R, x = 0.\n", "Sinks.T2Stack.cheat"),
    ("a Context behind a one-line Section", "Section S. End S.\nContext (v : nat).\n", "Sinks.T2Stack.v"),
    ("guard checking switched off", "Unset Guard Checking.\nFixpoint loop (n : nat) : False := loop n.\n",
     ("unsafe (co)fixpoints:", "Sinks.T2Stack.loop")),
    ("the guard bypassed by an attribute", "#[bypass_check(guard)] Fixpoint loop (n : nat) : False := loop n.\n",
     ("unsafe (co)fixpoints:", "Sinks.T2Stack.loop")),
    ("positivity checking switched off",
     "Unset Positivity Checking.\nInductive bad : Type := mk : (bad -> False) -> bad.\nSet Positivity Checking.\n",
     ("positivity assumed: Sinks.T2Stack.bad",)),
])
def test_an_assumption_the_scan_would_miss_is_caught_by_the_kernel_side(
        report, copy, sympy_verdicts, monkeypatch, name, planted, marker):  # noqa: F811
    _plant(copy, "T2Stack.v", AFTER_OPEN, AFTER_OPEN + planted)
    assert source_scan.scan((copy / "T2Stack.v").read_text(), "T2Stack.v"), name  # the scan's early message
    _all_unknown(_blinded_check(monkeypatch, copy), sympy_verdicts, marker, report)


def test_a_shadowing_require_is_caught_by_the_kernel_side(report, copy, sympy_verdicts, monkeypatch):  # noqa: F811
    """A development file named like the standard library's: ``Require Import Reals`` in the next
    file loads it (coqc picks the development's ``Sinks.Reals``), and with it an axiom."""
    (copy / "Reals.v").write_text("Require Export Coq.Reals.Reals.\nModule Hidden.\nAxiom cheat : False.\nEnd Hidden.\n")
    project = (copy / "_CoqProject").read_text()
    (copy / "_CoqProject").write_text(project.replace("T2Stack.v", "Reals.v\nT2Stack.v"))
    assert source_scan.scan((copy / "Reals.v").read_text(), "Reals.v")
    _all_unknown(_blinded_check(monkeypatch, copy), sympy_verdicts, "Sinks.Reals.Hidden.cheat", report)


def test_an_admitted_lemma_is_caught_by_the_kernel_side(report, copy, sympy_verdicts, monkeypatch):  # noqa: F811
    _plant(copy, "T2Stack.v", AFTER_OPEN, AFTER_OPEN + "Lemma unused_false : False.\nProof.\nAdmitted.\n")
    _all_unknown(_blinded_check(monkeypatch, copy), sympy_verdicts, "Sinks.T2Stack.unused_false", report)
