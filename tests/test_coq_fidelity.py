"""The Coq twins state what their Python statements state: the constants, intervals and quantifiers
read out of proofs/coq/*.v equal the ones the Python statements use, and changing one side alone
is caught. No coqc needed: the Coq source is parsed (proofs/coq/statements.py)."""

import importlib.resources

import pytest
import sympy

from proofs import registry
from proofs.coq import statements as st
from proofs.coq import twins
from proofs.coq.source import COQ_DIR, project_files


@pytest.fixture(scope="module")
def sentences():
    return st.source_sentences()


def test_every_twin_states_what_its_python_statement_states(sentences):
    assert twins.mismatches(sentences=sentences) == []


def test_every_twin_is_a_registered_statement_and_a_coq_theorem(sentences):
    assert set(twins.TWINS) <= set(registry.names())
    theorems = st.theorems(sentences)
    assert set(twins.main_theorems()) <= set(theorems)
    assert set(twins.main_theorems()) == set(twins.THEOREM_TYPES)


def _edit(sentences, old, new):
    edited = [s.replace(old, new) for s in sentences]
    assert edited != sentences, f"{old!r} is not in the Coq source"
    return edited


COQ_EDITS = [  # (what changed, old, new): one change on the Coq side only
    ("T1(a) eta interval", "eta <= 1 / 12 -> worst_error_le d L (head_output Softmax d h) eta -> forall j cs i",
     "eta <= 1 / 13 -> worst_error_le d L (head_output Softmax d h) eta -> forall j cs i"),
    ("f_pre", "12 * eta / (5 - 12 * eta)", "6 * eta / (5 - 12 * eta)"),
    ("m_r", "8 * eta * (1 + 48 * eta) / (1 - 96 * eta)", "8 * eta * (1 + 47 * eta) / (1 - 96 * eta)"),
    ("pre-trigger queries", "(1 <= i < j)%nat", "(2 <= i < j)%nat"),
    ("L >= 5 of T1(b)", "(5 <= L)%nat -> eta <= 1 / 120 ->", "(6 <= L)%nat -> eta <= 1 / 120 ->"),
    ("content flag bound", "5 / 6 - 3 * eta <= h_t d h c", "5 / 6 - 2 * eta <= h_t d h c"),
    ("ratio bound", "2 - 48 * eta <= rho d h c * (1 + 48 * eta)", "2 - 40 * eta <= rho d h c * (1 + 48 * eta)"),
    ("direction bound denominator", "0 < m + beta -> (m - eps) / (m + beta) <= a 0%nat",
     "0 < m + beta -> m - eps <= a 0%nat"),
    ("T2 BOS cap", "softmax_weight d h (sequence d j cs) i 0 <= 1 / 2", "softmax_weight d h (sequence d j cs) i 0 <= 3 / 4"),
    ("T2 error bound", "INR L * exp (- beta)", "INR L * exp (- beta / 2)"),
    ("ReLU head W_K", "unit_mat 0 (content_flag d) r c", "unit_mat 0 (content_flag d) r c + unit_mat 0 0 r c"),
    ("content token layout", "if Nat.eqb r (d - 1) then 1", "if Nat.eqb r (d - 2) then 1"),
    ("a dropped hypothesis", "(4 <= d)%nat -> (4 <= L)%nat -> eta <= 1 / 12 ->", "(4 <= d)%nat -> eta <= 1 / 12 ->"),
    ("non-vacuity of (b) at a looser eta", "eta <= 1 / 120 /\\ worst_error_le d L (head_output Softmax d h) eta",
     "eta <= 1 / 100 /\\ worst_error_le d L (head_output Softmax d h) eta"),
    ("sufficiency head's trigger score", "- beta * unit_mat 0 trigger_flag r c",
     "+ beta * unit_mat 0 trigger_flag r c"),
    ("content flag from S_2 and S_4",
     "c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 3 eta -> 5 / 6",
     "c 2 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta -> 5 / 6"),
    ("ratio bound without S_4", "c 3 eta -> equal_content_error_le d L (head_output Softmax d h) c 4 eta -> (exists",
     "c 3 eta -> (exists"),
    ("per-sequence error at the trigger only", "forall i r, (i < L)%nat -> (r < d)%nat -> Rabs (f (equal_content",
     "forall i r, (i < L)%nat -> (r < d)%nat -> (1 <= i)%nat -> Rabs (f (equal_content"),
    ("T2 stacks: one head per layer allowed", "(forall hs, In hs layers -> (2 <= length hs)%nat)",
     "(forall hs, In hs layers -> (1 <= length hs)%nat)"),
    ("T2 stacks: depth >= 2 only", "(1 <= depth)%nat -> ~ T2_stack_non_trigger",
     "(2 <= depth)%nat -> ~ T2_stack_non_trigger"),
    ("T2 stacks: weights read on the raw sequence",
     "softmax_weight d h (layer_input Softmax d layers (sequence d j cs) l) i 0",
     "softmax_weight d h (sequence d j cs) i 0"),
    ("no cancellation without the non-BOS mass factor", "(1 - a 0%nat) * Rabs (v r) <= Rabs (combine",
     "Rabs (v r) <= Rabs (combine"),
    ("no cancellation's example not opposite", "p 2%nat = -1", "p 2%nat = 1"),
    ("trigger flag bound's B/C term", "trigger_B d h c / trigger_C d h c * (1 / 3 - 4 * eta)",
     "trigger_B d h c / trigger_C d h c * (1 / 3 - 3 * eta)"),
    ("convex hull without the non-BOS mass factor", "(1 - a 0%nat) * delta - a 0%nat * N (u 0%nat) <= N (combine",
     "delta - a 0%nat * N (u 0%nat) <= N (combine"),
    ("a norm without |c|", "N (vscale c x) = Rabs c * N x", "N (vscale c x) = c * N x"),
    ("sufficiency BOS mass at the trigger", "= exp (- beta) / (exp (- beta) + INR j)",
     "= exp beta / (exp beta + INR j)"),
]


@pytest.mark.parametrize("what,old,new", COQ_EDITS, ids=[e[0] for e in COQ_EDITS])
def test_a_coq_constant_changed_alone_is_caught(sentences, what, old, new):
    assert twins.mismatches(sentences=_edit(sentences, old, new)), what


def _python_edits():
    from constructions import relu_head, softmax_head
    from proofs.statements import content_flag_lower_bound as cf, flag_sum_lower_bound as fs, t1_single_layer_sink as t1
    from proofs.statements import (t2_multi_layer_existential as t2, token_consistency as tc,
                                   trigger_row_ratio_bound as rb)
    from proofs.statements import sink_bound_convex_hull as sbc, trigger_flag_lower_bound as tf

    e = t1.eta
    weights = relu_head.head_weights

    def skewed_weights(d):
        W_Q, W_K, W_V = weights(d)
        return W_K, W_Q, W_V  # query and key maps swapped

    edits = [
        ("T1(a) eta interval", t1, "PRE_INTERVAL", sympy.Interval(0, sympy.Rational(1, 13))),
        ("T1(b) eta interval", t1, "ALL_INTERVAL", sympy.Interval(0, sympy.Rational(1, 240))),
        ("f_pre", t1, "f_pre", lambda x=e: 6 * x / (5 - 12 * x)),
        ("L >= 5 of T1(b)", t1, "L_MIN_ALL", 6),
        ("pre-trigger queries", t1, "PRE_QUERIES", "2 <= i < j"),
        ("content flag bound", cf, "lower_bound", lambda: sympy.Rational(5, 6) - 2 * cf.tr.eta),
        ("m_r", fs, "m_r", lambda: 1 - 5 * fs.e - 8 * fs.e * (1 + 48 * fs.e) / (1 - 96 * fs.e)),
        ("ratio identity", rb, "identity_rhs", lambda r, a, b, c: 11 * ((r + 2) * c - 2 * (r + 1) * b + r * a)),
        ("T2 BOS cap loosened", t2, "BOS_CAP", sympy.Integer(1)),
        ("T2 BOS cap tightened", t2, "BOS_CAP", sympy.Rational(1, 4)),
        ("T2 error bound tightened", t2, "error_bound", lambda b, n: n * sympy.exp(-b) / 2),
        ("T2 error bound loosened", t2, "error_bound", lambda b, n: 2 * n * sympy.exp(-b)),
        ("equal-token bound", tc, "equal_tokens_bound", lambda n, v, eps: 1 - eps / (n * v)),
        ("ReLU head weights", relu_head, "head_weights", skewed_weights),
        ("content flag lemma's triggers", cf, "L_MIN", 5),
        ("convex hull bound without its denominator", sbc, "DEFAULT_BOUND", sbc.delta - sbc.O),
        ("trigger flag bound", tf, "lower_bound", lambda bound=tf.lower_bound: bound() + tf.tr.eta),
        ("ratio lemma's triggers", rb, "L_MIN", 4),
        ("softmax family BOS mass", softmax_head, "bos_mass",
         lambda b, i, at_trigger=False, exp=None: sympy.exp(b) / (sympy.exp(b) + 2 * i)),
        ("softmax family head", softmax_head, "build", lambda d, beta, build=softmax_head.build: build(d, -beta)),
    ]
    return {what: (module, name, value) for what, module, name, value in edits}


PYTHON_EDITS = list(_python_edits())


@pytest.mark.parametrize("what", PYTHON_EDITS)
def test_a_python_constant_changed_alone_is_caught(sentences, monkeypatch, what):
    module, name, value = _python_edits()[what]
    monkeypatch.setattr(module, name, value)
    assert twins.mismatches(sentences=sentences), what


def test_the_task_minimum_sizes_are_one_constant(sentences, monkeypatch):
    from constructions import task

    monkeypatch.setattr(task, "D_MIN", 5)
    assert any("(5 <= d)%nat" in m for m in twins.mismatches(sentences=sentences))


def test_an_eta_interval_must_start_at_zero(monkeypatch):
    from proofs.statements import t1_single_layer_sink as t1

    monkeypatch.setattr(t1, "PRE_INTERVAL", sympy.Interval(sympy.Rational(1, 100), sympy.Rational(1, 12)))
    with pytest.raises(ValueError, match="must start at 0"):
        twins.expected_props()


def test_relations_compare_by_value_not_by_spelling():
    defs = st.definitions(st.source_sentences())
    a = st.parse_prop("forall eta, eta <= 1 / 12 -> 1 - f_pre eta <= x", defs)
    b = st.parse_prop("forall eta, 12 * eta <= 1 -> 1 - 12 * eta / (5 - 12 * eta) <= x", defs)
    c = st.parse_prop("forall eta, eta <= 1 / 12 -> 1 - 12 * eta / (5 - 12 * eta) <= x", defs)
    assert st.same(a, c) and not st.same(a, b)  # 12 eta <= 1 is the same set, but not the same statement


def test_binders_reach_as_far_right_as_they_can():
    tree = st.parse_prop("A /\\ forall x, B x -> C x", {})
    assert tree[0] == "/\\" and tree[1][1][0] == "forall" and tree[1][1][2][0] == "->"


def test_the_coq_files_ship_with_the_package():
    files = importlib.resources.files("proofs.coq")
    listed = project_files(COQ_DIR)
    assert len(listed) >= 10 and all((files / name).is_file() for name in listed + ["_CoqProject", "pinned.json"])
    with open("pyproject.toml") as f:
        assert '"proofs.coq" = ["*.v", "_CoqProject", "pinned.json"]' in f.read()
    assert (files / "pinned.json").is_file()


@pytest.mark.parametrize("old, new", [("T1a /\\ T1b /\\ T1c", "T1a /\\ T1b"), ("T1a /\\ T1b /\\ T1c", "T1c /\\ T1b /\\ T1a"),
                                      ("T1a /\\ T1b /\\ T1c", "True")])
def test_a_main_theorem_that_states_another_type_is_caught_by_its_type(sentences, old, new):
    """A theorem matched by its name alone would pass any statement: the type itself is compared
    (the message names the theorem and both types, so it is this comparison that catches it)."""
    edited = [s.replace(f"Theorem t1_single_layer_sink : {old}", f"Theorem t1_single_layer_sink : {new}")
              for s in sentences]
    assert edited != sentences
    found = twins.mismatches(sentences=edited)
    assert any(m.startswith(f"theorem t1_single_layer_sink : {new}") for m in found), found


def test_a_main_theorem_type_changed_on_the_python_side_is_caught(sentences, monkeypatch):
    monkeypatch.setitem(twins.THEOREM_TYPES, "t1_single_layer_sink", "T1a /\\ T1b")
    found = twins.mismatches(sentences=sentences)
    assert any(m.startswith("theorem t1_single_layer_sink :") and m.endswith("expected T1a /\\ T1b") for m in found)
