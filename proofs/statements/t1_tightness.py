"""How good T1(a)'s constant is: a tight head refutes a tighter per-content statement, and for
L >= 5 a sharper bound (about 2 eta) is proved.

``t1a_tightened_per_content`` (refuted). T1's chain for (a) uses, besides the BOS query, only
the equal-content sequences with one content c. Statement: "a softmax head with max-abs error
<= eta <= 1/12 on the BOS query and on the equal-content sequences with one content c (every
trigger j, L >= 4) has a_i0 >= 1 - (99/100) f_pre(eta) at their queries before the trigger".
Counterexample: ``constructions.tight_heads.build_t1a`` at c = 0, L = 4: its error there is
exactly eta = 1/1000 and 1 - a_20 (trigger at 3) = (0.9998...) f_pre(eta) (exact evaluator in
sympy). The untightened bound holds on it. The refutation holds at L = 4 only: for L >= 5 and
eta <= 1/120 the tightened per-content form follows from ``t1_pre_trigger_sharp`` (whose lemmas
use the same hypotheses), since 2 eta/(m_5 + eta) <= (99/100) f_pre(eta) there (checked
exactly in the evidence). The statement over *all* inputs with the tightened constant is not
refuted either: this head ignores the trigger's own content (its weight C -> 0), so over every
input its max-abs error is 1999/2002 ~ 0.9985 (trigger at 2, contents (1, -1, 1) up to sign,
the trigger query's content coordinate; ``tight_heads.all_inputs_report``), not eta.

``t1b_tightened_per_content`` (refuted). The same for T1(b) with (99/100) f_all at L >= 5:
``tight_heads.build_t1b`` has exact error eta = 1.0000000352e-4 on content 0, L = 5, and at the
query 4 after the trigger 1 - a = 0.99879 f_all(eta). (T1(b)'s eta-interval is [0, 1/120].)
Over every input its max-abs error is 16006445/20016006446 ~ 8.0e-4, eight times its eta.

``t1_pre_trigger_sharp`` (proved). For L >= 5 and eta <= 1/120, every query before the trigger
has a_i0 >= 1 - 2 eta/(m_5(eta) + eta), m_5 = 2/3 - eta + (2 - 48 eta)(1/6 - 2 eta)/(1 + 48 eta)
= 1 - 29 eta + O(eta^2), so 1 - a_i0 <= 2 eta + O(eta^2) (T1(a) has 12/5 eta). Proof: the
identity of ``content_flag_lower_bound`` h_t = 2/3 + delta_3 + rho (1/6 + delta_3 - delta_2) with
rho >= (2 - 48 eta)/(1 + 48 eta) (``trigger_row_ratio_bound``) gives h_t >= m_5:

    h_t - m_5 = (delta_3 + eta) + rho (delta_3 + eta) + rho (eta - delta_2)
                + (1/6 - 2 eta) [rho (1 + 48 eta) - (2 - 48 eta)] / (1 + 48 eta),

then ``sink_bound_direction`` with u = e_{d-1}, m = m_5, beta = eps = eta.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from constructions import tight_heads
from constructions.numbers import format_down

from . import sink_bound_direction as sbd
from . import trigger_rows as tr
from .algebra import Atom, certificate, is_zero
from .t1_single_layer_sink import f_all, f_pre
from .trigger_row_ratio_bound import L_MIN as ratio_l_min
from .trigger_row_ratio_bound import lower_gap
from .verdict import Evidence, Verdict, timed

TIGHTENING = Fraction(99, 100)
TIGHTEN = sympy.Rational(TIGHTENING.numerator, TIGHTENING.denominator)
L_TIGHT = 4
SHARP_INTERVAL = sympy.Interval(0, sympy.Rational(1, 120))
SHARP_L_MIN = ratio_l_min  # the pinned ratio needs the trigger positions 2, 3, 4
SHARP_CITES = ("token_consistency", "bos_query_sees_only_bos", "trigger_row_ratio_bound", "sink_bound_direction")
e = tr.eta


def m_5():
    return sympy.Rational(2, 3) - e + (2 - 48 * e) * (sympy.Rational(1, 6) - 2 * e) / (1 + 48 * e)


def f_pre_sharp(x=e):
    expr = 2 * e / (m_5() + e)
    return expr if x is e else expr.subs(e, x)


def _tight_body(ev: Evidence, label: str, net, L: int, bound, mass_key: str, where_key: str) -> None:
    """The head's exact error eta on content 0 and its smallest BOS mass; refuted when
    1 - a > TIGHTENING * bound(eta), else unknown (one head proves nothing)."""
    r = tight_heads.equal_content_report(net, L, 0)
    eta, mass = r["eta"], r[mass_key]
    ratio = (1 - mass) / bound(eta)
    ev.step(bool(eta < sympy.Rational(1, 120)), f"{label}, c = 0, L = {L}: exact max-abs error over the BOS query and every "
                                                f"position of every trigger j: eta = {eta} ({float(eta):.10g})")
    ev.step(bool(mass >= 1 - bound(eta)), f"the untightened bound holds on it: smallest BOS mass {float(mass):.10f} "
                                          f">= 1 - bound(eta) = {float(1 - bound(eta)):.10f}")
    if ev.failures or ratio <= TIGHTENING:
        ev.step(False, f"no counterexample at this tightening (ratio {float(ratio):.6f}); one head proves nothing")
        return
    i, j = r[where_key]
    whole = tight_heads.all_inputs_report(net, L)
    w = whole["where"]
    ev.step(bool(whole["eta"] >= eta), f"over EVERY input (mixed contents, every trigger) its max-abs error is {whole['eta']} = "
            f"{float(whole['eta']):.4g} = {float(whole['eta'] / eta):.4g} x eta (trigger {w['trigger']}, query "
            f"{w['query']}, coordinate {w['coordinate']}, contents {[c[0] for c in w['contents']]} up to sign; exact): "
            f"the statement over all inputs is not touched by this head")
    ev.refute(f"{label} at c = 0, L = {L}: eta = {float(eta):.10g} (exact), query {i} with the trigger at {j} has "
              f"1 - a = {float(ratio):.6f} x bound(eta) > {TIGHTENING} x bound(eta)")


def check_tightened() -> Verdict:
    def body(ev: Evidence) -> None:
        _tight_body(ev, "tight_heads.build_t1a()", tight_heads.build_t1a(), L_TIGHT, f_pre, "min_bos_pre", "where")
        gap = sympy.minimum(sympy.cancel((TIGHTEN * f_pre(e) - f_pre_sharp()) / e), e, SHARP_INTERVAL)
        ev.step(bool(gap > 0), f"refuted at L = {L_TIGHT} only: for L >= 5 and eta <= 1/120, t1_pre_trigger_sharp (its lemmas "
                f"use the same hypotheses, the BOS query and the equal-content sequences of one content) gives "
                f"1 - a_i0 <= 2 eta/(m_5 + eta), and "
                f"(99/100) f_pre(eta) - 2 eta/(m_5 + eta) >= {format_down(gap, 4)} eta > 0 there (exact minimum), so the "
                f"tightened per-content form holds at L >= 5 on that range")
        ev.case("d = 4, L = 4, content 0, trigger positions 2 and 3; exact rationals (scores log of rationals)")

    return timed("t1a_tightened_per_content", f"a softmax head with max-abs error <= eta <= 1/12 on the BOS query and the "
                 f"equal-content sequences of one content (L >= 4) has a_i0 >= 1 - ({TIGHTENING}) f_pre(eta) at their "
                 f"queries before the trigger", body)


def check_tightened_b() -> Verdict:
    def body(ev: Evidence) -> None:
        _tight_body(ev, "tight_heads.build_t1b()", tight_heads.build_t1b(), L_TIGHT + 1, f_all,
                    "min_bos_nontrigger", "where_nontrigger")
        ev.case("d = 4, L = 5, content 0, trigger positions 2, 3, 4; exact rationals (scores log of rationals)")

    return timed("t1b_tightened_per_content", f"a softmax head with max-abs error <= eta <= 1/120 on the BOS query and the "
                 f"equal-content sequences of one content (L >= 5) has a_i0 >= 1 - ({TIGHTENING}) f_all(eta) at their "
                 f"non-trigger queries", body)


def check_sharp() -> Verdict:
    def body(ev: Evidence) -> None:
        h = tr.images("h")
        d2, d3 = (tr.deviation(j, tr.CONTENT_FLAG, h) for j in (2, 3))
        rho = tr.rho()
        atoms = [Atom("rho", rho, "positive"), Atom("delta_3 + eta", d3 + e, "premise"),
                 Atom("eta - delta_2", e - d2, "premise"),
                 Atom("lower rho gap", lower_gap(), "lemma:trigger_row_ratio_bound"),
                 Atom("(1/6 - 2 eta)/(1 + 48 eta)", (sympy.Rational(1, 6) - 2 * e) / (1 + 48 * e), "interval")]
        terms = [(1, ["delta_3 + eta"]), (1, ["rho", "delta_3 + eta"]), (1, ["rho", "eta - delta_2"]),
                 (1, ["lower rho gap", "(1/6 - 2 eta)/(1 + 48 eta)"])]
        ok, why = certificate(h[1] - m_5(), terms, atoms, e, SHARP_INTERVAL)
        ev.step(ok, f"h_t - m_5 >= 0 for 0 <= eta <= 1/120: {why}")
        bound = sbd.proved_bound().subs({sbd.m: m_5(), sbd.beta: e, sbd.eps: e})
        ev.step(is_zero(1 - bound - f_pre_sharp()), "sink_bound_direction at m = m_5, beta = eps = eta: "
                                                    "1 - a_i0 <= 2 eta/(m_5 + eta)")
        ev.step(bool(sympy.minimum(m_5() - e, e, SHARP_INTERVAL) > 0), "its hypothesis m > eps: m_5 - eta > 0 on [0, 1/120]")
        series = sympy.series(f_pre_sharp(), e, 0, 3).removeO()
        ev.step(is_zero(series - (2 * e + 56 * e ** 2)), f"2 eta/(m_5 + eta) = 2 eta + 56 eta^2 + O(eta^3)")
        ev.note("pre-trigger keys are BOS and content tokens only; |e_{d-1} . o_i| <= eta; e_{d-1} . u_0 >= -eta")
        ev.case(f"d >= 4, L >= {SHARP_L_MIN}, 0 <= eta <= {SHARP_INTERVAL.sup}, queries 1 <= i < j, every content")

    return timed("t1_pre_trigger_sharp", "for L >= 5 and eta <= 1/120 a single softmax head with worst-case error eta has "
                 "a_i0 >= 1 - 2 eta/(m_5(eta) + eta) = 1 - 2 eta - 56 eta^2 + O(eta^3) at every query before the trigger, "
                 "m_5 = 2/3 - eta + (2 - 48 eta)(1/6 - 2 eta)/(1 + 48 eta)", body, cites=SHARP_CITES)


STATEMENTS = (
    ("t1a_tightened_per_content", check_tightened, ()),
    ("t1b_tightened_per_content", check_tightened_b, ()),
    ("t1_pre_trigger_sharp", check_sharp, SHARP_CITES),
)
