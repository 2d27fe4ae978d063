"""The registered statements with a Coq twin, and the Coq statements their constants imply.

``TWINS`` maps a registered statement (``proofs.registry``) to the Coq theorems whose kernel check
its verdict carries. ``expected_props()`` writes, from the Python statements' own constants
(intervals, minimal sizes, the functions f_pre, f_all, m_r, ..., the quantifiers), the Coq
propositions the twins must state; ``mismatches(folder)`` parses the development's
``Definition ... : Prop`` and ``Theorem`` sentences (``statements``) and lists every difference, so
a constant changed on one side only fails ``tests/test_coq_fidelity.py``. Relations between real
expressions are compared as sympy differences after unfolding the development's definitions.
"""

from __future__ import annotations

from pathlib import Path

import sympy

TWINS = {
    "softmax_rows_on_simplex": ("softmax_rows_on_simplex",),
    "relu_rows_can_vanish": ("relu_rows_can_vanish",),
    "bos_query_sees_only_bos": ("bos_query_sees_only_bos",),
    "sink_bound_direction": ("sink_bound_direction",),
    "no_cancellation": ("no_cancellation",),
    "sink_bound_convex_hull": ("sink_bound_convex_hull",),
    "token_consistency": ("token_consistency",),
    "content_flag_lower_bound": ("content_flag_lower_bound",),
    "trigger_row_ratio_bound": ("trigger_row_ratio_bound",),
    "flag_sum_lower_bound": ("flag_sum_lower_bound",),
    "trigger_flag_lower_bound": ("trigger_flag_lower_bound",),
    "t1_single_layer_sink": ("t1_single_layer_sink",),
    "t1_pre_trigger_sharp": ("t1_pre_trigger_sharp",),
    "t1_one_residual_layer": ("t1_one_residual_layer",),
    "relu_construction_exact": ("relu_construction_exact", "relu_head_zero_error"),
    "t2_multi_layer_existential": ("t2_multi_layer_existential", "cancelling_pair_bounds",
                                   "cancel_error_bound_vanishes", "t2_stack_refuted"),
    "softmax_family_limits": ("softmax_family_limits",),
}

# The type of each main theorem: a proposition defined below, or their conjunction.
THEOREM_TYPES = {
    "softmax_rows_on_simplex": "SoftmaxRowsOnSimplex",
    "relu_rows_can_vanish": "ReluRowsCanVanish",
    "bos_query_sees_only_bos": "BosQuerySeesOnlyBos",
    "sink_bound_direction": "SinkBoundDirection /\\ SinkBoundDirectionTight",
    "token_consistency": "TokenConsistency",
    "no_cancellation": "NoCancellation",
    "sink_bound_convex_hull": "SinkBoundConvexHull",
    "content_flag_lower_bound": "ContentFlagLowerBound",
    "trigger_row_ratio_bound": "TriggerRowRatioBound",
    "flag_sum_lower_bound": "FlagSumLowerBound",
    "trigger_flag_lower_bound": "TriggerFlagLowerBound",
    "t1_single_layer_sink": "T1a /\\ T1b /\\ T1c",
    "t1_pre_trigger_sharp": "T1_sharp",
    "t1_one_residual_layer": "T1_residual",
    "relu_construction_exact": "T3_single_head /\\ T3_stack",
    "relu_head_zero_error": "forall d L, (4 <= d)%nat -> worst_error_le d L (head_output Relu d (relu_head d)) 0",
    "t2_multi_layer_existential": "T2Refuted",
    "cancelling_pair_bounds": "CancellingPairBounds",
    "cancel_error_bound_vanishes": "ErrorBoundVanishes",
    "softmax_family_limits": "SoftmaxFamilyLimits",
    "t2_stack_refuted": "T2StackRefuted",
}


def main_theorems() -> list[str]:
    return [t for names in TWINS.values() for t in names]


# ----------------------------------------------------------------------------------------
# Writing Python constants as Coq text.


def coq(expr, **names: str) -> str:
    """A sympy expression as text the statement parser reads; ``names`` renames symbols
    (A="trigger_A d h c")."""
    expr = sympy.sympify(expr)
    expr = expr.subs({s: sympy.Symbol(names[s.name]) for s in expr.free_symbols if s.name in names})
    return f"({sympy.sstr(expr)})"


def nat_bound(lo: int, var: str) -> str:
    return f"({lo} <= {var})%nat"


def queries(text: str) -> str:
    """A Python quantifier over queries ("1 <= i < j", "i < L, i != j") as Coq hypotheses."""
    parts = [p.strip() for p in text.split(",")]
    return " -> ".join(p.replace("!=", "<>") if "!=" in p else f"({p})%nat" for p in parts)


def _eta_upper(interval: sympy.Interval) -> str:
    if interval.inf != 0:  # the Coq statements take 0 <= eta from |error| <= eta
        raise ValueError(f"an eta interval must start at 0, got {interval}")
    return f"eta <= {coq(interval.sup)}"


def expected_props() -> dict[str, str]:
    """Coq proposition name -> the statement the Python constants imply."""
    from constructions import task
    from proofs.statements import (content_flag_lower_bound as cf, flag_sum_lower_bound as fs,
                                   sink_bound_convex_hull as sbc, sink_bound_direction as sbd,
                                   t1_single_layer_sink as t1, t1_tightness as tt, t2_multi_layer_existential as t2,
                                   token_consistency as tc, trigger_flag_lower_bound as tf,
                                   trigger_row_ratio_bound as rb, trigger_rows as tr)

    d4 = nat_bound(task.D_MIN, "d")
    err = "worst_error_le d L (head_output Softmax d h) eta"
    weight = "softmax_weight d h (sequence d j cs) i 0"
    abc = {"A": "trigger_A d h c", "B": "trigger_B d h c", "C": "trigger_C d h c"}
    rho = coq(tr.rho(), **abc)
    eta = t1.eta
    m, beta, eps = sbd.m, sbd.beta, sbd.eps
    bound = coq(sbd.proved_bound(), epsilon="eps")
    n, s = sympy.symbols("n s")

    def on_equal_content(l_min: int) -> str:
        """The lemmas' hypothesis: error <= eta on S_j(c) for the triggers j = 2 .. l_min - 1 only."""
        return " -> ".join(f"equal_content_error_le d L (head_output Softmax d h) c {j} eta" for j in range(2, l_min))
    t1a_body = (f"{nat_bound(t1.L_MIN_PRE, 'L')} -> {_eta_upper(t1.PRE_INTERVAL)} -> {{err}} -> "
                f"forall j cs i, valid_trigger L j -> in_box d L cs -> {queries(t1.PRE_QUERIES)} -> "
                f"1 - {coq(t1.f_pre())} <= {weight}")
    t1b_body = (f"{nat_bound(t1.L_MIN_ALL, 'L')} -> {_eta_upper(t1.ALL_INTERVAL)} -> {{err}} -> "
                f"forall j cs i, valid_trigger L j -> in_box d L cs -> {queries(t1.ALL_QUERIES)} -> "
                f"1 - {coq(t1.f_all())} <= {weight}")
    t1c_body = f"{nat_bound(t1.L_MIN_PRE, 'L')} -> ~ {{err0}}"
    single = {"err": err, "err0": "worst_error_le d L (head_output Softmax d h) 0"}
    residual = {"err": "worst_residual_error_le d L (one_residual_layer d h) eta",
                "err0": "worst_residual_error_le d L (one_residual_layer d h) 0"}
    return {
        "SoftmaxRowsOnSimplex": "forall d (h : head) X i, (forall k, 0 < softmax_weight d h X i k) /\\ "
                                "sum (S i) (softmax_weight d h X i) = 1",
        "ReluRowsCanVanish": "forall d (h : head) X i, (forall k, (k <= i)%nat -> score d h (X i) (X k) <= 0) -> "
                             "(forall k, (k <= i)%nat -> relu_weight d h X i k = 0) /\\ "
                             "(forall r, head_output Relu d h X i r = 0)",
        "BosQuerySeesOnlyBos": f"forall d L (h : head) eta, {d4} -> {nat_bound(task.L_MIN, 'L')} -> {err} -> "
                               "(forall X, softmax_weight d h X 0 0 = 1 /\\ "
                               "forall r, head_output Softmax d h X 0%nat r = value d h (X 0%nat) r) /\\ "
                               "(forall r, (r < d)%nat -> Rabs (value d h (bos d) r) <= eta)",
        "SinkBoundDirection": "forall (n : nat) (a p : nat -> R) (m beta eps : R), "
                              "(forall k, (k <= n)%nat -> 0 <= a k) -> sum (S n) a = 1 -> - beta <= p 0%nat -> "
                              "(forall k, (1 <= k <= n)%nat -> m <= p k) -> sum (S n) (fun k => a k * p k) <= eps -> "
                              f"0 < m + beta -> {bound} <= a 0%nat",
        "SinkBoundDirectionTight": f"forall m beta eps, 0 < m + beta -> {bound} * (- beta) + (1 - {bound}) * m = eps",
        "SinkBoundConvexHull": (
            "forall (N : vec -> R) (n : nat) (a : nat -> R) (u : nat -> vec) (delta : R), is_norm N -> "
            "(forall k, (k <= n)%nat -> 0 <= a k) -> sum (S n) a = 1 -> 0 < delta -> "
            "(forall b : nat -> R, (forall k, (k < n)%nat -> 0 <= b k) -> sum n b = 1 -> "
            "delta <= N (combine n b (fun k => u (S k)))) -> "
            "(1 - a 0%nat) * delta - a 0%nat * N (u 0%nat) <= N (combine (S n) a u) /\\ "
            f"{coq(sbc.DEFAULT_BOUND, O='N (combine (S n) a u)', U='N (u 0%nat)')} <= a 0%nat"),
        "NoCancellation": (  # no constants: its structure is the Python statement's (i), (ii), (iii)
            "(forall (n : nat) (a : nat -> R) (u : nat -> vec) (v : vec) (r : nat), sum (S n) a = 1 -> "
            "(forall k, (1 <= k <= n)%nat -> u k r = v r) -> "
            "combine (S n) a u r - a 0%nat * u 0%nat r = (1 - a 0%nat) * v r /\\ "
            "(0 <= a 0%nat <= 1 -> (1 - a 0%nat) * Rabs (v r) <= "
            "Rabs (combine (S n) a u r) + a 0%nat * Rabs (u 0%nat r))) /\\ "
            "(forall (n : nat) (a p : nat -> R) (m : R), (forall k, (k <= n)%nat -> 0 <= a k) -> sum (S n) a = 1 -> "
            "(forall k, (1 <= k <= n)%nat -> m <= p k) -> "
            "m * (1 - a 0%nat) <= sum (S n) (fun k => a k * p k) - a 0%nat * p 0%nat) /\\ "
            "(exists a p : nat -> R, a 0%nat = 0 /\\ (forall k, (k <= 2)%nat -> 0 <= a k) /\\ sum 3 a = 1 /\\ "
            "p 1%nat = 1 /\\ p 2%nat = -1 /\\ sum 3 (fun k => a k * p k) = 0)"),
        "TokenConsistency": (
            "(forall d (h : head) X i k k', (forall r, (r < d)%nat -> X k r = X k' r) -> "
            "softmax_weight d h X i k = softmax_weight d h X i k') /\\ "
            "(forall d (h : head) c j, (1 <= j)%nat -> forall k, (k <= j)%nat -> "
            "softmax_weight d h (equal_content d j c) j k = (if Nat.eqb k 0 then trigger_A d h c else if Nat.eqb k j "
            "then trigger_C d h c else trigger_B d h c) / (trigger_A d h c + INR (j - 1) * trigger_B d h c + "
            "trigger_C d h c)) /\\ "
            "(forall d (h : head) X i, (1 <= i)%nat -> (forall k r, (1 <= k <= i)%nat -> (r < d)%nat -> "
            "X k r = X 1%nat r) -> softmax_weight d h X i 0 = exp (score d h (X i) (X 0%nat)) / "
            "(exp (score d h (X i) (X 0%nat)) + INR i * exp (score d h (X i) (X 1%nat)))) /\\ "
            "(forall A B (i : nat), 0 < A -> 0 < B -> A / (A + INR (S i) * B) < A / (A + INR i * B)) /\\ "
            "(forall A B eps s (n : nat), 0 < A -> 0 < B -> 0 < eps -> 0 < s -> (1 <= n)%nat -> "
            "INR n * B * (eps + s) <= eps * (A + INR n * B) -> "
            f"A / (A + B) >= {coq(tc.equal_tokens_bound(n, eps + s, eps), epsilon='eps')})"),
        "ContentFlagLowerBound": f"forall d L (h : head) eta c, {d4} -> {nat_bound(cf.L_MIN, 'L')} -> "
                                 f"{_eta_upper(cf.INTERVAL)} -> {on_equal_content(cf.L_MIN)} -> "
                                 f"{coq(cf.lower_bound())} <= h_t d h c",
        "TriggerRowRatioBound": (
            f"forall d L (h : head) eta c, {d4} -> {nat_bound(rb.L_MIN, 'L')} -> {on_equal_content(rb.L_MIN)} -> "
            "(exists d2 d3 d4, Rabs d2 <= eta /\\ Rabs d3 <= eta /\\ Rabs d4 <= eta /\\ "
            f"{rho} - 2 = {coq(rb.identity_rhs(*sympy.symbols('rho d2 d3 d4')), rho=rho)}) /\\ "
            f"0 <= {coq(rb.lower_gap(), **abc)} /\\ 0 <= {coq(rb.upper_gap(), **abc)}"),
        "TriggerFlagLowerBound": f"forall d L (h : head) eta c, {d4} -> {nat_bound(task.L_MIN, 'L')} -> "
                                 f"{_eta_upper(tf.INTERVAL)} -> {on_equal_content(task.L_MIN)} -> "
                                 f"{coq(tf.lower_bound(), **abc)} <= g_r d h c",
        "FlagSumLowerBound": f"forall d L (h : head) eta c, {d4} -> {nat_bound(rb.L_MIN, 'L')} -> "
                             f"{_eta_upper(fs.INTERVAL)} -> {on_equal_content(rb.L_MIN)} -> "
                             f"{coq(fs.m_t())} <= w_t d h c /\\ {coq(fs.m_r())} <= w_r d h c /\\ "
                             f"{coq(fs.m_r())} <= w_t d h c",
        "T1a": f"forall d L (h : head) eta, {d4} -> " + t1a_body.format(**single),
        "T1b": f"forall d L (h : head) eta, {d4} -> " + t1b_body.format(**single),
        "T1c": f"forall d L (h : head), {d4} -> " + t1c_body.format(**single),
        "T1_residual": (f"(forall d L (h : head) eta, {d4} -> " + t1a_body.format(**residual) + ") /\\ "
                        f"(forall d L (h : head) eta, {d4} -> " + t1b_body.format(**residual) + ") /\\ "
                        f"(forall d L (h : head), {d4} -> " + t1c_body.format(**residual) + ")"),
        "T1_sharp": (f"forall d L (h : head) eta, {d4} -> {nat_bound(tt.SHARP_L_MIN, 'L')} -> "
                     f"{_eta_upper(tt.SHARP_INTERVAL)} -> {err} -> forall j cs i, valid_trigger L j -> "
                     f"in_box d L cs -> {queries(t1.PRE_QUERIES)} -> 1 - {coq(tt.f_pre_sharp())} <= {weight}"),
        "T3_single_head": (
            f"forall d L j cs, {d4} -> valid_trigger L j -> "
            "(forall i r, (i < L)%nat -> (r < d)%nat -> head_output Relu d (relu_head d) (sequence d j cs) i r = "
            "target j (sequence d j cs) i r) /\\ (forall i, relu_weight d (relu_head d) (sequence d j cs) i 0 = 0) /\\ "
            "(forall i k, i <> j -> relu_weight d (relu_head d) (sequence d j cs) i k = 0)"),
        "T3_stack": (f"forall d L j cs layers heads, {d4} -> (1 <= layers)%nat -> (1 <= heads)%nat -> "
                     "valid_trigger L j -> forall i r, (i < L)%nat -> (r < d)%nat -> "
                     "stack_output Relu d (relu_stack d layers heads) (sequence d j cs) i r = "
                     "residual_target j (sequence d j cs) i r"),
        "T2_non_trigger": (
            "exists F : R -> R, vanishes_at_zero F /\\ forall (hs : list head) (eta : R), (2 <= length hs)%nat -> "
            "worst_error_le d L (layer_output Softmax d hs) eta -> exists h j cs i, In h hs /\\ valid_trigger L j /\\ "
            "in_box d L cs /\\ (1 <= i < L)%nat /\\ i <> j /\\ 1 - F eta <= softmax_weight d h (sequence d j cs) i 0"),
        "T2Refuted": f"forall d L, {d4} -> {nat_bound(task.L_MIN, 'L')} -> ~ T2_non_trigger d L",
        "T2_stack_non_trigger": (
            "exists F : R -> R, vanishes_at_zero F /\\ forall (layers : list (list head)) (eta : R), "
            "length layers = depth -> (forall hs, In hs layers -> (2 <= length hs)%nat) -> "
            "worst_residual_error_le d L (stack_output Softmax d layers) eta -> exists l hs h j cs i, "
            "nth_error layers l = Some hs /\\ In h hs /\\ valid_trigger L j /\\ in_box d L cs /\\ (1 <= i < L)%nat /\\ "
            "i <> j /\\ 1 - F eta <= softmax_weight d h (layer_input Softmax d layers (sequence d j cs) l) i 0"),
        "T2StackRefuted": f"forall d L depth, {d4} -> {nat_bound(task.L_MIN, 'L')} -> (1 <= depth)%nat -> "
                          "~ T2_stack_non_trigger d L depth",
        "CancellingPairBounds": (
            f"forall d L beta, {d4} -> {nat_bound(task.L_MIN, 'L')} -> "
            "worst_error_le d L (layer_output Softmax d (cancelling_pair beta)) (cancel_error_bound L beta) /\\ "
            "(forall j cs i h, In h (cancelling_pair beta) -> (1 <= i)%nat -> i <> j -> "
            f"softmax_weight d h (sequence d j cs) i 0 <= {coq(t2.BOS_CAP)}) /\\ "
            "worst_residual_error_le d L (stack_output Softmax d (cancelling_stack beta)) (cancel_error_bound L beta)"),
        "ErrorBoundVanishes": "forall L e, 0 < e -> exists beta0, forall beta, beta0 <= beta -> "
                              f"{coq(t2.error_bound(beta, sympy.Symbol('L')))} < e",
        "vanishes_at_zero": "forall e, 0 < e -> exists delta, 0 < delta /\\ forall eta, 0 <= eta < delta -> F eta < e",
        **_sufficiency_props(d4),
    }


def _sufficiency_props(d4: str) -> dict[str, str]:
    """The softmax family (``softmax_head``) and T1's non-vacuity: the hypotheses of T1 (a), (b),
    the sharp bound and the residual form each hold for the family's head at some beta."""
    from constructions import softmax_head, task
    from proofs.statements import t1_single_layer_sink as t1, t1_tightness as tt

    beta, i, j = sympy.symbols("beta i j")
    head = "(sufficiency_head d beta)"
    weight = f"softmax_weight d {head} (sequence d j cs)"
    error = f"worst_error_le d L (head_output Softmax d {head}) (cancel_error_bound L beta)"
    l4 = nat_bound(task.L_MIN, "L")
    single = [_eta_upper(iv) for iv in dict.fromkeys((t1.PRE_INTERVAL, t1.ALL_INTERVAL, tt.SHARP_INTERVAL))]
    residual = [_eta_upper(iv) for iv in dict.fromkeys((t1.PRE_INTERVAL, t1.ALL_INTERVAL))]
    meets = ([f"(exists (h : head) eta, {u} /\\ worst_error_le d L (head_output Softmax d h) eta)" for u in single]
             + [f"(exists (h : head) eta, {u} /\\ worst_residual_error_le d L (one_residual_layer d h) eta)"
                for u in residual])
    return {
        "SufficiencyBosMass": (
            f"forall d L beta j cs, {d4} -> {l4} -> valid_trigger L j -> "
            f"(forall i, (1 <= i < L)%nat -> i <> j -> {weight} i 0 = {coq(softmax_head.bos_mass(beta, i), i='INR i')} "
            f"/\\ 1 - cancel_error_bound L beta <= {weight} i 0) /\\ "
            f"{weight} j 0 = {coq(softmax_head.bos_mass(beta, j, at_trigger=True), j='INR j')} /\\ "
            f"{weight} j 0 <= cancel_error_bound L beta"),
        "T1Satisfiable": f"forall d L, {d4} -> {l4} -> " + " /\\ ".join(meets),
        "SoftmaxFamilyLimits": f"(forall d L beta, {d4} -> {l4} -> {error}) /\\ SufficiencyBosMass /\\ "
                               "ErrorBoundVanishes /\\ T1Satisfiable",
    }


# Parameters of the propositions that take some.
PROP_PARAMS = {"T2_non_trigger": (("d", "nat"), ("L", "nat")), "vanishes_at_zero": (("F", "R -> R"),),
               "T2_stack_non_trigger": (("d", "nat"), ("L", "nat"), ("depth", "nat"))}


def expected_definitions() -> dict[str, tuple[tuple[str, ...], sympy.Expr]]:
    """Coq real-valued definition -> (its parameters, the Python expression it must equal)."""
    from proofs.statements import flag_sum_lower_bound as fs, t1_single_layer_sink as t1, t1_tightness as tt
    from proofs.statements import t2_multi_layer_existential as t2

    eta, L = sympy.Symbol("eta"), sympy.Symbol("L")
    on_eta = {s.name: eta for s in (t1.eta, tt.e, fs.e)}

    def in_eta(expr):
        return expr.subs({s: on_eta[s.name] for s in expr.free_symbols if s.name in on_eta})

    return {"f_pre": (("eta",), in_eta(t1.f_pre())), "f_all": (("eta",), in_eta(t1.f_all())),
            "m_t": (("eta",), in_eta(fs.m_t())), "m_r": (("eta",), in_eta(fs.m_r())),
            "m_5": (("eta",), in_eta(tt.m_5())), "f_pre_sharp": (("eta",), in_eta(tt.f_pre_sharp())),
            "cancel_error_bound": (("L", "beta"), t2.error_bound(sympy.Symbol("beta"), L))}


def mismatches(folder: Path | None = None, sentences: list[str] | None = None) -> list[str]:
    """Every difference between the Coq statements and the ones the Python constants imply."""
    from . import statements as st
    from .source import COQ_DIR
    from .weights import weight_mismatches

    sentences = st.source_sentences(folder or COQ_DIR) if sentences is None else sentences
    defs, thms = st.definitions(sentences), st.theorems(sentences)
    out = []
    for name, text in expected_props().items():
        d = defs.get(name)
        if d is None or d.type != "Prop":
            out.append(f"{name}: the development has no Definition {name} : Prop")
            continue
        if d.params != PROP_PARAMS.get(name, ()):
            out.append(f"{name}: parameters {d.params}, expected {PROP_PARAMS.get(name, ())}")
        ours, theirs = st.parse_prop(d.body, defs), st.parse_prop(text, defs)
        if not st.same(ours, theirs):
            out.append(f"{name}: Coq states {st.show(ours)}; the Python constants give {st.show(theirs)}")
    for name, typ in THEOREM_TYPES.items():
        if name not in thms:
            out.append(f"theorem {name} is not in the development")
        elif not st.same(st.parse_prop(thms[name], defs), st.parse_prop(typ, defs)):
            out.append(f"theorem {name} : {thms[name]}, expected {typ}")
    for name, (params, expr) in expected_definitions().items():
        d = defs.get(name)
        if d is None or tuple(p for p, _ in d.params) != params:
            out.append(f"{name}: no Definition {name} with parameters {params}")
            continue
        if not st.identically_zero(st.expression(d.body, defs) - expr):
            out.append(f"{name}: Coq defines {d.body}, the Python statement {expr}")
    return out + weight_mismatches(defs)
