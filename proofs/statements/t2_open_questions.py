"""What T2 leaves: its open questions, each a registered statement.

(a) ``t2_sink_at_some_query`` (refuted). "For every H >= 2 and L >= 4, a softmax layer of H heads
    with worst-case error eta has some head whose BOS mass at some query i >= 1 (the trigger
    included) tends to 1 as eta -> 0." Counterexample: ``cancelling_heads.build_interpolating``.
    At L = 4 two heads (rho = (1, 6), W_O = [12/5 I, -12/5 I]) solve the task with error exactly
    0, and no head puts more than 3/4 on BOS at any query i >= 1. At L = 5, four heads
    (rho = 1..4) do, with at most 2/3. Checked: exact evaluator, symbolic contents, every j.
(a') ``t2_two_heads_sink_at_some_query`` (unknown; cites the flag-score case). The same with
    H = 2 and L >= 5. Proved for scores that read only the flags
    (``t2_two_heads_flag_scores_sink``: some head puts >= 1 - 125 delta on BOS at the trigger, or
    a head puts > theta on BOS at query 1). Open: scores that read the contents, where the
    weights change with the contents and the per-token coefficients that proof reads are no
    longer the output's; tried: see proofs/README.md (an optimiser over type-level weights with
    an exact LP over the value images, z3 on the unrestricted encoding).
(b) ``t2_one_head_per_layer`` (unknown; cites the family obstruction). "With one softmax head
    per layer and N >= 2 residual layers, some head's BOS mass at some non-trigger query tends
    to 1 as eta -> 0." The candidate two-layer construction breaks: in its family no stack is
    exact at L >= 6 (``t2_one_head_per_layer_flag_family``); at L = 5 its rows before the trigger
    close but its trigger rows do not (numerical, proofs/README.md). Neither proof nor
    counterexample for general weights.
(c) ``t1_one_residual_layer`` (proved, cites T1). What of T1 survives for one head per layer:
    with N = 1 the residual connection changes nothing, since the residual error x_i + o_i -
    (x_i + y_i) equals the non-residual error o_i - y_i of the same head (exact evaluator,
    generic symbolic head). So T1(a), (b), (c) hold verbatim for one residual layer. For N >= 2
    the model's output is no single head's output, and T1's argument does not transfer: that
    is question (b).
"""

from __future__ import annotations

import sympy

from constructions import cancelling_heads, reference, task

from .algebra import is_zero
from .bos_query_sees_only_bos import generic_head, symbolic_sequence
from .verdict import Evidence, Verdict, timed

LENGTHS = (4, 5)  # the interpolating heads checked with symbolic contents
RESIDUAL_CITES = ("t1_single_layer_sink",)  # (c) rests on T1
TWO_HEADS_CITES = ("t2_two_heads_flag_scores_sink",)  # (a'): the case it proves
ONE_HEAD_CITES = ("t2_one_head_per_layer_flag_family",)  # (b): where the candidate breaks


def _contents_sequence(L: int, j: int) -> list[list[sympy.Expr]]:
    contents = [[sympy.Symbol(f"c{p}", real=True)] for p in range(1, L)]
    return task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))


def _check_interpolating(ev: Evidence, L: int) -> sympy.Expr:
    """Zero error for symbolic contents at every j; returns the largest BOS mass at queries >= 1."""
    net = cancelling_heads.build_interpolating(4, L)
    largest, exact = sympy.Integer(0), True
    for j in range(2, L):
        X = _contents_sequence(L, j)
        Y, patterns = reference.forward(net, X, "sympy")
        exact = exact and all(is_zero(y - t) for yr, tr in zip(Y, task.target(X, j)) for y, t in zip(yr, tr))
        largest = max([largest] + [sympy.nsimplify(P[i][0]) for P in patterns[0] for i in range(1, L)])
    heads = net.layers[0].heads
    ev.step(exact and largest < 1, f"L={L}: {heads} heads, error exactly 0 at every position for symbolic contents "
                                   f"and every j; largest BOS mass at any query i >= 1 (trigger included): {largest}")
    return largest


def check_some_query() -> Verdict:
    def body(ev: Evidence) -> None:
        largest = {L: _check_interpolating(ev, L) for L in LENGTHS}
        if not ev.failures:
            ev.refute(f"cancelling_heads.build_interpolating(4, 4): two softmax heads, error 0 on every input of "
                      f"length 4 (eta = 0), every head's BOS mass at every query i >= 1 <= {largest[4]}; at L = 5 "
                      f"four heads, <= {largest[5]}")
        ev.case("d = 4, L = 4 (two heads) and L = 5 (four heads), symbolic contents, every trigger position")

    return timed("t2_sink_at_some_query", "(a) for every H >= 2 and L >= 4, a softmax layer of H heads with worst-case "
                 "error eta has some head whose BOS mass at some query i >= 1 (the trigger included) tends to 1 as "
                 "eta -> 0", body)


def check_two_heads() -> Verdict:
    def body(ev: Evidence) -> None:
        n, r1, r2, x = sympy.symbols("n rho_1 rho_2 x", real=True)
        gap = n / (r1 + x) - n / (r2 + x) - 1 / x  # the pair's trigger factor minus the target's
        numerator = sympy.expand(sympy.numer(sympy.together(gap)) * -1)
        poly = sympy.Poly(numerator, x)
        ev.step(poly.degree() == 2 and poly.LC() == 1,
                "family lemma: two heads n/(rho_1 + x) - n/(rho_2 + x) = 1/x at x = j needs the monic quadratic "
                f"{sympy.factor(numerator)} to vanish there; it has at most two roots, so no exact pair at L >= 5")
        ev.note("scores that read only the flags: proved (t2_two_heads_flag_scores_sink, cited): some head puts "
                ">= 1 - 125 delta on BOS at the trigger j = 2, delta = eta (1 + (p+1)^2 + (p+2)^2), unless a head puts "
                "> theta = p/(1 + p) on BOS at query 1")
        ev.step(False, "scores that read the contents are not covered: the weights then change with the contents, so "
                       "the half-differences that proof reads are no longer the value maps' entries times fixed "
                       "weights. No counterexample either. The SMT instances fix the trigger's content at 0, where "
                       "(a') is false (cancelling_heads.build_trigger_parking: no BOS mass above 1/2, error -> 0), so "
                       "z3 there (unknown at K = 2, lengths 4, 5) cannot settle it; on an instance whose trigger "
                       "carries a content type (K = 2, length 4, every BOS mass <= 3/4) an optimiser over two heads' "
                       "type-level weights with an exact LP over all value images got no lower than 0.0625, the "
                       "trigger-parking weights' error (weak evidence: a random start ended at 0.155; proofs/README.md)")
        ev.case("H = 2, L >= 5; flag-reading scores proved; content-reading scores open")

    return timed("t2_two_heads_sink_at_some_query", "(a') a softmax layer of two heads with worst-case error eta at "
                 "L >= 5 has some head whose BOS mass at some query i >= 1 tends to 1 as eta -> 0", body,
                 cites=TWO_HEADS_CITES)


def check_one_head_per_layer() -> Verdict:
    def body(ev: Evidence) -> None:
        ev.note("T1's argument needs the head's output to be the model's output; with N >= 2 residual layers "
                "the first layer's head feeds the second, and the cancelling constructions need two heads "
                "reading the same stream")
        ev.note("the candidate sink-free construction (layer 2's weights c_i / G_{k-1} on a position feature that "
                "layer 1 writes) breaks: in its family F no stack is exact at L >= 6 (t2_one_head_per_layer_flag_family, "
                "cited: the rows before the trigger need three equal values of a concave phi); at L = 5 those rows "
                "close (a one-parameter family) but the BOS column and the trigger rows do not (numerical)")
        ev.step(False, "general weights (layer-2 scores that read contents, value maps that mix coordinates, error "
                       "-> 0 inside F): neither proof nor counterexample; optimisers over 2 x 1 weights with the "
                       "non-trigger BOS mass capped stall (proofs/README.md), and trained 2 x 1 stacks sink "
                       "(empirical/training/README.md)")
        ev.case("one softmax head per layer, N >= 2 residual layers")

    return timed("t2_one_head_per_layer", "(b) with one softmax head per layer and N >= 2 residual layers, some head's "
                 "BOS mass at some non-trigger query tends to 1 as the worst-case error eta -> 0", body,
                 cites=ONE_HEAD_CITES)


def check_one_residual_layer() -> Verdict:
    def body(ev: Evidence) -> None:
        net, _ = generic_head(4)
        res = reference.Network(net.kind, net.layers, residual=True)
        for j in (2, 3):
            X = symbolic_sequence(4, 4, j)
            Y, _ = reference.forward(net, X, "sympy")
            R, _ = reference.forward(res, X, "sympy")
            same = all(is_zero((r - t_res) - (y - t)) for rr, yr, trr, tr in
                       zip(R, Y, task.target(X, j, True), task.target(X, j)) for r, y, t_res, t in zip(rr, yr, trr, tr))
            ev.step(same, f"generic symbolic head, j={j}: residual error x + o - (x + y) equals the non-residual error o - y")
        ev.note("so every bound T1 proves from the error of the single-layer task holds for one residual layer")
        ev.case("one softmax head, one residual layer, d >= 4: T1(a) for L >= 4, T1(b) for L >= 5, T1(c)")

    return timed("t1_one_residual_layer", "(c) one softmax head in one residual layer: T1(a), (b), (c) hold verbatim "
                 "(the residual error equals the non-residual error of the same head)", body, cites=RESIDUAL_CITES)


STATEMENTS = (
    ("t2_sink_at_some_query", check_some_query, ()),
    ("t2_two_heads_sink_at_some_query", check_two_heads, TWO_HEADS_CITES),
    ("t2_one_head_per_layer", check_one_head_per_layer, ONE_HEAD_CITES),
    ("t1_one_residual_layer", check_one_residual_layer, RESIDUAL_CITES),
)
