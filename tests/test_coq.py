"""The Coq kernel check: the development compiles, its main theorems assume only the reals' axioms,
the verdicts carry it, and it can fail (a planted false variant, an Admitted, an added Axiom, a
timeout). Tests that need coqc skip elsewhere with the install command."""

import shutil

import pytest

from proofs import registry
from proofs.coq import kernel
from proofs.coq.overlay import with_kernel
from proofs.coq.twins import TWINS, main_theorems

needs_coqc = pytest.mark.skipif(kernel.coqc_path() is None,
                                reason=f"coqc not found; install it with: {kernel.INSTALL_HINT}")


@pytest.fixture(scope="module")
def report():
    if kernel.coqc_path() is None:
        pytest.skip(f"coqc not found; install it with: {kernel.INSTALL_HINT}")
    return kernel.default_report()


@pytest.fixture(scope="module")
def sympy_verdicts():
    """The sympy verdicts of a few twins (T1 and its lemmas, T3, T2), without the kernel check."""
    names = ["t1_single_layer_sink", "relu_construction_exact", "t2_multi_layer_existential"]
    return {v.name: v for v in registry.run(names, kernel=kernel.not_run("not run in this fixture"))}


def _overlaid(verdicts, report):
    return {name: with_kernel(v, report) for name, v in verdicts.items()}


@pytest.fixture
def copy(tmp_path):
    """A copy of the development to plant things in (the source tree is never touched)."""
    dest = tmp_path / "coq"
    dest.mkdir()
    for name in kernel.project_files() + ["_CoqProject"]:
        shutil.copy2(kernel.COQ_DIR / name, dest / name)
    return dest


def _plant(folder, file, old, new):
    path = folder / file
    text = path.read_text()
    assert old in text, f"{old!r} is not in {file}"
    path.write_text(text.replace(old, new, 1))


@needs_coqc
def test_the_development_compiles_and_assumes_only_the_axioms_of_the_reals(report):
    assert report.ran and report.ok, report.reason
    assert report.coqc.startswith("coqc ") and report.cpu_seconds > 0
    assert set(report.assumptions) == set(main_theorems())
    for name, axioms in report.assumptions.items():
        assert set(axioms) <= set(kernel.ALLOWED_AXIOMS), (name, axioms)
    assert "T1a /\\ T1b /\\ T1c" in report.statements["t1_single_layer_sink"]


@needs_coqc
def test_sinks_prove_shows_the_kernel_check(report, tmp_path, capsys):
    from constructions.files import read_json
    from empirical.pipeline import cli

    code = cli.main(["prove", "t1_single_layer_sink", "t2_multi_layer_existential", "t2_two_heads_flag_rows",
                     "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in ("t1_single_layer_sink", "bos_query_sees_only_bos", "token_consistency", "content_flag_lower_bound",
                 "sink_bound_direction", "trigger_row_ratio_bound", "flag_sum_lower_bound"):
        assert "proved (sympy + Coq)" in lines[name], lines[name]
    assert "refuted (sympy + Coq)" in lines["t2_multi_layer_existential"]
    assert "Coq kernel check (coqc" in out and "passed" in out
    record = read_json(tmp_path / "proofs.json")
    assert record["kernel"]["ok"] and record["kernel"]["coqc"] == report.coqc
    by_name = {v["name"]: v for v in record["verdicts"]}
    assert by_name["t1_single_layer_sink"]["kernel"] == "coq" and by_name["t2_two_heads_flag_rows"]["kernel"] is None
    assert any(t["title"].startswith("Kernel check") for t in record["tables"])


def test_without_coqc_the_verdict_says_coq_not_run(sympy_verdicts):
    verdicts = _overlaid(sympy_verdicts, kernel.not_run("coqc not found"))
    assert verdicts["t1_single_layer_sink"].status == "proved"
    assert verdicts["t1_single_layer_sink"].label == "proved (sympy; Coq not run)"
    assert verdicts["t2_multi_layer_existential"].label == "refuted (sympy; Coq not run)"
    assert verdicts["softmax_rows_on_simplex"].kernel == "not run"


def test_sinks_coq_off_skips_the_check(monkeypatch):
    monkeypatch.setenv("SINKS_COQ", "off")
    assert not kernel.default_report().ran


def _failed(reason):
    return kernel.KernelReport(ran=True, ok=False, reason=reason, coqc="coqc test")


def test_a_failed_kernel_check_makes_every_twin_unknown(sympy_verdicts):
    verdicts = _overlaid(sympy_verdicts, _failed("T1.v did not compile"))
    for name in ("t1_single_layer_sink", "content_flag_lower_bound", "relu_construction_exact", "t2_multi_layer_existential"):
        v = verdicts[name]
        assert v.status == "unknown" and v.kernel.startswith("failed: ") and "T1.v did not compile" in v.kernel, name
        assert any(e.startswith("did not close: Coq kernel check failed") for e in v.evidence)


def test_an_extra_assumption_fails_its_theorem_and_every_citer_only():
    report = kernel.KernelReport(ran=True, ok=False, reason="x", coqc="coqc test",
                                 assumptions={t: kernel.ALLOWED_AXIOMS for t in main_theorems()},
                                 failed={"relu_rows_can_vanish": "assumes Sinks.ReluHead.cheat"})
    verdicts = {v.name: v for v in registry.run(["relu_construction_exact", "sink_bound_direction",
                                                  "t2_two_heads_flag_rows"], kernel=report)}
    assert verdicts["relu_rows_can_vanish"].status == "unknown" and "cheat" in verdicts["relu_rows_can_vanish"].kernel
    v = verdicts["relu_construction_exact"]  # its own theorem passed; it cites the one that did not
    assert v.status == "unknown" and v.kernel == "coq"
    assert any("cites relu_rows_can_vanish, which is unknown in this run" in e for e in v.evidence)
    assert verdicts["sink_bound_direction"].label == "proved (sympy + Coq)"
    assert verdicts["t2_two_heads_flag_rows"].status == "proved" and verdicts["t2_two_heads_flag_rows"].kernel is None


def test_print_assumptions_output_is_read():
    closed = "Closed under the global context\n"
    assert kernel.parse_assumptions(closed) == ((), "")
    text = ("Axioms:\nClassicalDedekindReals.sig_not_dec : forall P : Prop, {~ ~ P} + {~ P}\n"
            "FunctionalExtensionality.functional_extensionality_dep\n  : forall (A : Type), A\n"
            "Sinks.ContentFlag.content_flag_algebra\n  : forall A, A\n")
    axioms, problem = kernel.parse_assumptions(text)
    assert axioms == ("ClassicalDedekindReals.sig_not_dec", "FunctionalExtensionality.functional_extensionality_dep",
                      "Sinks.ContentFlag.content_flag_algebra") and not problem
    assert kernel.parse_assumptions("Section Variables:\nx : R\n")[1]  # any other kind of assumption is reported


def test_print_assumptions_is_read_strictly():
    """No phrase inside a type changes the reading; anything off the format is unreadable (a failure)."""
    phrase = ("Axioms:\nT1.cheat\n  : forall Closed under the global context : Prop,\n"
              "    Closed -> under -> the -> global -> context -> False\n")
    assert kernel.parse_assumptions(phrase) == (("T1.cheat",), "")
    assert kernel.parse_assumptions("Closed under the global context\nAxioms:\nT1.cheat : False\n")[1]
    assert kernel.parse_assumptions("Section Variables:\nv\n: nat\n") == ((), "Section Variables: v")
    axioms, problem = kernel.parse_assumptions("Axioms:\nloop is assumed to be guarded.\nbad is assumed to be positive.\n")
    assert axioms == () and "loop is assumed to be guarded" in problem and "bad is assumed to be positive" in problem
    for garbage in ("", "Axioms\nx : False\n", "x : False\n", "Axioms:\nx : False\nsome other words here\n",
                    "Axioms:\n  : False\n", "Axioms:\nx\n", "Axioms:\nx\nSection Variables:\nv : nat\n"):
        assert "unreadable" in kernel.parse_assumptions(garbage)[1], garbage


def test_the_scan_finds_added_assumptions_and_ignores_comments():
    assert kernel.scan("(* no Axiom here, nor Admitted *)\nLemma a : True. Proof. exact I. Qed.\n") == []
    assert kernel.scan("Axiom cheat : False.\n")
    assert kernel.scan("Lemma a : False. Proof. Admitted.\n")
    assert kernel.scan("Lemma a : False. Proof. admit. Qed.\n")
    assert kernel.scan("Parameter p : nat.\n")
    assert kernel.scan("Variable x : nat.\n")  # outside a Section: an axiom
    assert kernel.scan("Section S.\nVariable x : nat.\nEnd S.\n") == []
    assert kernel.scan("Unset Guard Checking.\n")


def test_the_scan_finds_sentences_that_reinterpret_a_statements_text():
    """A Notation, Infix, Coercion or Arguments could make the `<=` or `/` the fidelity parser
    reads mean another thing; importing the standard library's ListNotations is fine."""
    for sentence in ('Notation "x <=\' y" := (Rle y x) (at level 70).', 'Local Notation two := 3.',
                     'Infix "+++" := Rplus (at level 50).', "Coercion INR : nat >-> R.", "Arguments f {A} x."):
        assert kernel.scan(sentence + "\n"), sentence
    assert kernel.scan("Import ListNotations.\n(* a Notation in a comment *)\n") == []


def test_a_short_name_defined_twice_is_reported():
    """The shadowing plant: a second ``T1a`` in a later module, which the fidelity
    parser (the last definition in compile order) would read instead of the theorem's."""
    texts = {"T1.v": "Definition T1a : Prop :=\n  True.\n", "Cancelling.v": "(* T1a *)\nDefinition T1a : Prop := False.\n",
             "Task.v": "Lemma valid : True. Proof. exact I. Qed.\n"}
    (line,) = kernel.duplicate_names(texts)
    assert line.startswith("T1a defined in T1.v, Cancelling.v")
    assert kernel.duplicate_names({"A.v": "Definition a := 1.\nLemma b : True.\n"}) == []


@needs_coqc
def test_a_planted_false_t1a_is_rejected_by_coqc(report, copy):
    # f_pre/4 is false: the softmax family at L = 16, beta = 10 has 1 - a = 6.35e-4 > f_pre(eta)/4 = 4.09e-4
    _plant(copy, "T1.v", "1 - f_pre eta <= softmax_weight", "1 - f_pre eta / 4 <= softmax_weight")
    planted = kernel.check(copy)
    assert planted.ran and not planted.ok and planted.reason.startswith("T1.v did not compile"), planted.reason


@needs_coqc
def test_the_direction_bound_without_its_denominator_is_rejected_by_coqc(report, copy):
    _plant(copy, "DirectionBound.v", "0 < m + beta ->\n  (m - eps) / (m + beta) <= a 0%nat.",
           "0 < m + beta ->\n  m - eps <= a 0%nat.")
    planted = kernel.check(copy)
    assert not planted.ok and planted.reason.startswith("DirectionBound.v did not compile"), planted.reason


@needs_coqc
def test_an_admitted_lemma_turns_the_verdicts_unknown(report, copy, sympy_verdicts):
    # in the last file, so that only it is compiled again
    _plant(copy, "Cancelling.v", "assert (0 <= E * (Lr - J - 1)) by (apply Rmult_le_pos; lra). lra.\nQed.",
           "assert (0 <= E * (Lr - J - 1)) by (apply Rmult_le_pos; lra). lra.\nAdmitted.")
    planted = kernel.check(copy)
    assert not planted.ok and "Admitted" in planted.reason
    assert any("trigger_error_bound" in a for a in planted.assumptions["t2_multi_layer_existential"])  # Print Assumptions sees it
    v = with_kernel(sympy_verdicts["t2_multi_layer_existential"], planted)
    assert v.status == "unknown" and "Admitted" in v.kernel


@needs_coqc
def test_a_standard_library_lemma_resting_on_excluded_middle_is_an_extra_assumption(report, copy, sympy_verdicts):
    # exp_ineq1_le (1 + x <= e^x) is proved with Classical_Prop.classic: no scan can see that
    _plant(copy, "Cancelling.v", "pose proof (exp_ge_1_plus beta ltac:(lra)) as Hexp.", "pose proof (exp_ineq1_le beta) as Hexp.")
    theorems = ["t1_single_layer_sink", "t2_multi_layer_existential"]
    planted = kernel.check(copy, theorems=theorems)
    assert not planted.ok and "Classical_Prop.classic" in planted.failed["t2_multi_layer_existential"]
    assert "t1_single_layer_sink" not in planted.failed  # attributed to the theorems that use it
    verdicts = _overlaid(sympy_verdicts, planted)
    assert verdicts["t2_multi_layer_existential"].status == "unknown"
    assert verdicts["t1_single_layer_sink"].label == "proved (sympy + Coq)"


@needs_coqc
def test_an_added_axiom_anywhere_turns_the_verdicts_unknown(report, copy, sympy_verdicts):
    # unused by every theorem (Print Assumptions cannot see it): the scan must
    _plant(copy, "ReluHead.v", "Open Scope R_scope.\n", "Open Scope R_scope.\nAxiom cheat : forall x : R, x = 0.\n")
    planted = kernel.check(copy)
    assert planted.ran and not planted.ok and "Axiom" in planted.reason
    verdicts = _overlaid(sympy_verdicts, planted)
    assert all(v.status == "unknown" for v in verdicts.values() if v.name in TWINS)


@needs_coqc
@pytest.mark.parametrize("plant", ["Definition T1a : Prop := True.\n", 'Notation "x <=\' y" := (Rle y x) (at level 70).\n'])
def test_a_shadowing_definition_or_a_notation_turns_the_verdicts_unknown(report, copy, sympy_verdicts, plant):
    # in the last file, so that only it is compiled again; both compile, so only the scan sees them
    _plant(copy, "Cancelling.v", "Import ListNotations.\n", "Import ListNotations.\n" + plant)
    planted = kernel.check(copy)
    assert planted.ran and not planted.ok and "forbidden in the source" in planted.reason, planted.reason
    verdicts = _overlaid(sympy_verdicts, planted)
    assert verdicts["t1_single_layer_sink"].status == "unknown"
    assert all(v.status == "unknown" for v in verdicts.values() if v.name in TWINS)


@needs_coqc
def test_a_timeout_is_unknown_never_proved(report, sympy_verdicts):
    slow = kernel.check(timeout=0.05)
    assert slow.ran and not slow.ok and "timed out" in slow.reason
    assert with_kernel(sympy_verdicts["sink_bound_direction"], slow).status == "unknown"
