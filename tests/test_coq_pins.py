"""``sinks prove`` fails closed on what Coq proved: the kernel-printed type of
every twin theorem and every project definition it unfolds to must be the pinned text
(``proofs/coq/pinned.json``). Three plants that compile, pass the assumption check and (two of
them) the source scan, each leave T1 not Coq-checked. Each plant compiles only the files it
changes and those after it up to T1Sharp.v (the others are reused from the shared compile)."""

import copy as copying
import shutil
import time

import pytest

from proofs.coq import coqc, kernel, pins
from proofs.coq.source import COQ_DIR, project_files
from proofs.coq.twins import main_theorems
from tests.test_coq import _plant

needs_coqc = pytest.mark.skipif(kernel.coqc_path() is None,
                                reason=f"coqc not found; install it with: {kernel.INSTALL_HINT}")
MODULES = [f[:-2] for f in project_files()]
T1 = ["t1_single_layer_sink", "t1_pre_trigger_sharp"]  # the planted theorem and one beside it


@pytest.fixture(scope="module")
def report():
    if kernel.coqc_path() is None:
        pytest.skip(f"coqc not found; install it with: {kernel.INSTALL_HINT}")
    return kernel.default_report()


def _chain(folder, last="T1Sharp.v"):
    """A scratch copy of the development's files up to ``last`` (in compile order)."""
    files = project_files()
    files = files[:files.index(last) + 1]
    folder.mkdir()
    for name in files:
        shutil.copy2(COQ_DIR / name, folder / name)
    (folder / "_CoqProject").write_text("-R . Sinks\n" + "\n".join(files) + "\n")
    return folder


def test_a_printed_text_names_the_project_constants_it_mentions():
    text = ("and T1.T1a (Sinks.Task.valid_trigger L j) Rdefinitions.Rle Heads.head_output' "
            "(fun x : Linear.vec => x) Coq.Reals.Rdefinitions.Rle NotAModule.x")
    assert pins.references(text, MODULES) == {"T1.T1a", "Task.valid_trigger", "Heads.head_output'", "Linear.vec"}


def test_the_pins_cover_every_definition_once_unpinned():
    """The definitions a twin's type unfolds to that were once unpinned: the union of the twins'
    closures must hold each of them."""
    pinned = pins.load()
    covered = set().union(*(pins.closure(t, pinned, MODULES) for t in main_theorems()))
    for name in ("Task.valid_trigger", "Task.in_box", "Task.content_in_box", "Task.error_le", "Task.worst_error_le",
                 "Heads.score", "Heads.softmax_weight", "Heads.relu_weight", "Heads.head_output", "Heads.layer_output",
                 "Heads.stack_output", "Heads.value", "TokenConsistency.h_t", "FlagSum.w_t", "FlagSum.w_r",
                 "Sums.sum", "Task.sequence", "Task.content_token", "Task.trigger_token", "Task.bos"):
        assert name in covered, name
    assert "Task.valid_trigger" in pins.closure("t1_single_layer_sink", pinned, MODULES)
    assert set(pinned["theorems"]) == set(main_theorems())


def test_the_pinned_python_side_is_what_the_python_statements_imply():
    assert pins.load()["python"] == pins.python_side()


def test_a_python_constant_changed_since_the_pinning_makes_every_twin_unknown():
    pinned = copying.deepcopy(pins.load())
    pinned["python"]["props"]["T1a"] = pinned["python"]["props"]["T1a"].replace("1/12", "1/13")
    assert pinned != pins.load()
    failed = pins.verify("coqc-not-needed", None, main_theorems(), MODULES, time.monotonic() + 1, pinned=pinned)
    assert set(failed) == set(main_theorems()) and "Python statements changed" in failed["t1_single_layer_sink"]


@needs_coqc
def test_regenerating_the_pins_from_the_sources_gives_the_committed_text(report):
    assert report.ok and report.unpinned == {}, report.reason
    deadline = time.monotonic() + 600
    build = coqc.compiled(COQ_DIR, deadline)  # the shared compile's .vo files, copied
    assert pins.generate(kernel.coqc_path(), build, main_theorems(), MODULES, deadline) == pins.load()


def _prove_t1(planted, monkeypatch, tmp_path, capsys):
    """``sinks prove t1_single_layer_sink`` with the planted development's kernel check."""
    from constructions.files import read_json
    from empirical.pipeline import cli

    monkeypatch.setattr(kernel, "_REPORT", planted)
    code = cli.main(["prove", "t1_single_layer_sink", "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("t1_single_layer_sink "))
    verdict = {v["name"]: v for v in read_json(tmp_path / "out" / "proofs.json")["verdicts"]}["t1_single_layer_sink"]
    return code, line, verdict


def _check_t1_unpinned(planted, pinned_reason, monkeypatch, tmp_path, capsys):
    assert planted.ran and not planted.ok
    assert pinned_reason in planted.unpinned["t1_single_layer_sink"], planted.unpinned
    assert set(planted.assumptions["t1_single_layer_sink"]) <= set(kernel.ALLOWED_AXIOMS)  # only the pin sees it
    code, line, verdict = _prove_t1(planted, monkeypatch, tmp_path, capsys)
    assert code == 1 and "unknown" in line and "Coq" not in line.split("unknown")[0], line
    assert verdict["status"] == "unknown" and verdict["kernel"] != "coq"
    assert "not the pinned statement" in verdict["kernel"] and pinned_reason in verdict["kernel"]


@needs_coqc
def test_t1_replaced_by_true_is_not_coq_checked(report, tmp_path, monkeypatch, capsys):
    folder = _chain(tmp_path / "coq")
    real = ("Theorem t1_single_layer_sink : T1a /\\ T1b /\\ T1c.\nProof. exact (conj t1a_pre_trigger "
            "(conj t1b_every_non_trigger_query t1c_exact_is_impossible)). Qed.")
    _plant(folder, "T1.v", real, "Theorem t1_single_layer_sink : True. Proof. exact I. Qed.")
    planted = kernel.check(folder, theorems=T1)
    assert planted.reason.count("did not compile") == 0 and "forbidden" not in planted.reason, planted.reason
    _check_t1_unpinned(planted, "its kernel-printed type is not the pinned one", monkeypatch, tmp_path, capsys)
    assert "t1_pre_trigger_sharp" not in planted.failed  # the theorem beside it still passes


@needs_coqc
def test_valid_trigger_narrowed_to_j_at_most_4_is_not_coq_checked(report, tmp_path, monkeypatch, capsys):
    folder = _chain(tmp_path / "coq")
    _plant(folder, "Task.v", "Definition valid_trigger (L j : nat) : Prop := (2 <= j <= L - 1)%nat.",
           "Definition valid_trigger (L j : nat) : Prop := (2 <= j <= L - 1)%nat /\\ (j <= 4)%nat.")
    planted = kernel.check(folder, theorems=T1)
    assert "did not compile" not in planted.reason and "forbidden" not in planted.reason, planted.reason
    _check_t1_unpinned(planted, "Task.valid_trigger, which its type unfolds to", monkeypatch, tmp_path, capsys)
    assert "Task.valid_trigger" in planted.unpinned["t1_pre_trigger_sharp"]


@needs_coqc
def test_t1a_shadowed_by_a_verbatim_copy_in_a_later_file_is_not_coq_checked(report, tmp_path, monkeypatch, capsys):
    """T1a is True in T1.v (the theorem is about it); T1Sharp.v holds a verbatim copy of the real
    T1a, which a parser keeping the last definition would read. The scan reports the duplicate
    name; the pin independently sees that T1.T1a is not the pinned definition."""
    folder = _chain(tmp_path / "coq")
    real = (COQ_DIR / "T1.v").read_text()
    start = real.index("Definition T1a : Prop :=")
    verbatim = real[start:real.index("\n\n", start)] + "\n"
    _plant(folder, "T1.v", "Definition T1a : Prop :=", "Definition T1a : Prop := True.\nDefinition T1a_real : Prop :=")
    _plant(folder, "T1.v", "Theorem t1a_pre_trigger : T1a.", "Theorem t1a_pre_trigger : T1a_real.")
    _plant(folder, "T1.v", "exact (conj t1a_pre_trigger (conj", "exact (conj I (conj")
    sharp = (folder / "T1Sharp.v").read_text()
    (folder / "T1Sharp.v").write_text(sharp + "\n" + verbatim)
    planted = kernel.check(folder, theorems=T1)
    assert "did not compile" not in planted.reason and "T1a defined in T1.v, T1Sharp.v" in planted.reason
    _check_t1_unpinned(planted, "T1.T1a, which its type unfolds to", monkeypatch, tmp_path, capsys)
