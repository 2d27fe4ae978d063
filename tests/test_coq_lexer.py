"""The source scan reads comments and strings as Coq does: held to coqc itself on adversarial texts.

Each text hides (or does not hide) ``Definition sinks_visible := 0.`` behind comment and string
tricks; coqc decides whether the definition exists (a second file Requires the first and Checks
it), and ``source.strip_comments`` / ``source.sentences`` must agree.
"""

import shutil
import subprocess

import pytest

from proofs.coq import scan, source

DEF = "Definition sinks_visible := 0."
HEADER = "Require Import String.\nOpen Scope string_scope.\n"
TEXTS = {
    "a string inside a comment holds its *)": '(* " *) " *)\n{DEF}\n',
    "a comment's string holding *)": '(* "*)" *)\n{DEF}\n',
    "nested comments": "(* (* nested *) still a comment *)\n{DEF}\n",
    "a definition inside a nested comment": "(* (* nested *) still a comment\n{DEF}\n*)\n",
    "an escaped quote inside a comment's string": '(* "a""b *) c" *)\n{DEF}\n',
    "a string outside a comment holding (*": 'Definition s := "(*".\n{DEF}\n',
    "a string outside a comment holding *) (*, then a comment": 'Definition s := "*) (*".\n(* {DEF} *)\n',
    "(*) opens a comment": "(*) {DEF} *)\n",
    "a doc comment's string": '(** doc " *) " {DEF} *)\n',
    "an escaped quote in a string outside a comment": 'Definition s := "a""(*".\n{DEF}\n',
}


def _coq_defines(tmp_path, text: str) -> bool | None:
    """Whether coqc defines ``sinks_visible`` from ``text`` (None when the text does not compile)."""
    (tmp_path / "Probe.v").write_text(text)
    (tmp_path / "Use.v").write_text("Require Import Probe.\nCheck sinks_visible.\n")
    if subprocess.run(["coqc", "-q", "Probe.v"], cwd=tmp_path, capture_output=True).returncode != 0:
        return None
    return subprocess.run(["coqc", "-q", "Use.v"], cwd=tmp_path, capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("coqc") is None, reason="coqc not found; install it with: apt-get install -y coq")
@pytest.mark.parametrize("case", list(TEXTS))
def test_the_scan_sees_what_coqc_compiles(tmp_path, case):
    text = HEADER + TEXTS[case].replace("{DEF}", DEF)
    coq = _coq_defines(tmp_path, text)
    assert coq is not None, f"{case}: the text must compile to be a fair test"
    ours = any(s == DEF[:-1] for _, s in source.sentences(text))
    assert ours == coq, f"{case}: coqc defines it: {coq}, the scan sees it: {ours}"
    assert ("Definition sinks_visible" in source.strip_comments(text)) == coq


def test_an_axiom_after_a_comment_with_a_string_is_seen():
    """The outside read's text: a lexer that ends the comment at the first *) blanks the rest."""
    text = '(* " *) " *)\nAxiom cheat2 : False.\n'
    assert scan.scan(text, "T.v") == ["T.v:2: Axiom"]


def test_a_one_line_section_does_not_hide_a_hypothesis():
    assert scan.scan("Section S. End S.\nHypothesis cheat : False.\n", "T.v") == ["T.v:2: Hypothesis outside a Section"]
    assert scan.scan("Section S. Variable x : nat. End S.\n") == []
    assert scan.scan("Module M. Variable x : nat. End M.\n")  # a Module is not a Section
    assert scan.scan("Section S.\nModule M. End M.\nEnd S.\n") == []
    assert scan.scan("End S.\n")  # closes nothing


def test_sentences_on_one_line_are_each_read():
    text = "Lemma a : True. Proof. exact I. Qed. Definition T1a := True. #[local] Axiom b : False.\n"
    assert [s for _, s in source.sentences(text)][-2:] == ["Definition T1a := True", "#[local] Axiom b : False"]
    assert scan.duplicate_names({"A.v": text, "B.v": "Definition T1a := False.\n"})
