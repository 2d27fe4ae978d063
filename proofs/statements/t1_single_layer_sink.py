"""T1, the project's precise single-layer theorem: a softmax head with small error must sink.

Statement. Let d >= 4, L >= 4, and let a single-layer, single-head softmax network (SPEC
section 2, no residual) have worst-case max-abs error eta over the task's inputs (by
continuity the bound holds on the closure, so sequences with all contents equal count). Then

  (a) pre-trigger (L >= 4, eta <= 1/12): every query 1 <= i < j has
          a_i0 >= 1 - f_pre(eta),   f_pre(eta) = 12 eta / (5 - 12 eta)   (= 2.4 eta + O(eta^2));
  (b) every non-trigger query (L >= 5, eta <= 1/120): every i != j (before or after the trigger) has
          a_i0 >= 1 - f_all(eta),   f_all(eta) = 4 eta / (m_r(eta) + 2 eta),
          m_r(eta) = 1 - 6 eta - 8 eta (1 + 48 eta)/(1 - 96 eta)      (f_all = 4 eta + O(eta^2));
  (c) eta = 0 is impossible: every softmax weight is positive, so a_10 < 1, while (a) at eta = 0
      demands a_10 = 1.
The BOS query itself has a_00 = 1. Not covered: queries after the trigger when L = 4 (only
trigger positions 2, 3 exist and the trigger row's ratio is not pinned; see README).

Proof (each step a registered statement): ``bos_query_sees_only_bos`` (|u_0|_inf <= eta),
``content_flag_lower_bound`` (content images: flag >= 5/6 - 3 eta), ``sink_bound_direction``
with u = e_{d-1}, m = 5/6 - 3 eta, beta = eps = eta gives (a); ``trigger_row_ratio_bound`` and
``flag_sum_lower_bound`` give w . u_k >= m_r for every non-BOS image (trigger included) along
w = e_1 + e_{d-1}; ``sink_bound_direction`` with u = w/2, m = m_r/2, beta = eps = eta gives (b).
This module checks the composition and evaluates f against the softmax family of
``constructions.softmax_head`` (``family_table``).
"""

from __future__ import annotations

import sympy

from constructions import attention, softmax_head, task

from . import sink_bound_direction as sbd
from .content_flag_lower_bound import lower_bound as content_flag_bound
from .flag_sum_lower_bound import m_r, m_t
from .trigger_row_ratio_bound import L_MIN as ratio_l_min
from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "t1_single_layer_sink"
CITES = (
    'bos_query_sees_only_bos',
    'token_consistency',
    'content_flag_lower_bound',
    'trigger_row_ratio_bound',
    'flag_sum_lower_bound',
    'sink_bound_direction',
    'softmax_rows_on_simplex',
)  # registered statements whose conclusions this proof uses
eta = sympy.Symbol("eta", nonnegative=True)
PRE_INTERVAL = sympy.Interval(0, sympy.Rational(1, 12))
ALL_INTERVAL = sympy.Interval(0, sympy.Rational(1, 120))
L_MIN_PRE = task.L_MIN  # (a): trigger positions 2 and 3
L_MIN_ALL = ratio_l_min  # (b): trigger positions 2, 3 and 4
PRE_QUERIES = "1 <= i < j"  # (a): the queries before the trigger
ALL_QUERIES = "i < L, i != j"  # (b): every non-trigger query
FAMILY_BETAS = (6, 8, 10, 12, 14)
FAMILY_L = 16


def f_pre(x=eta):
    return 12 * x / (5 - 12 * x)


def f_all(x=eta):
    expr = 4 * eta / (m_r() + 2 * eta)
    return expr if x is eta else expr.subs(eta, x)


def _direction_bound(m_value):
    return sbd.proved_bound().subs({sbd.m: m_value, sbd.beta: eta, sbd.eps: eta})


def _positive_on(expr, interval) -> bool:
    return bool(sympy.minimum(expr, eta, interval) > 0)


def family_table(betas=FAMILY_BETAS, L: int = FAMILY_L) -> list[dict]:
    """The softmax family against f: eta(beta) is the family's worst-case error, 1 - a its
    smallest BOS mass before the trigger (query L-2, trigger at L-1) and after it (query L-1)."""
    rows = []
    for b in betas:
        err = float(softmax_head.max_error(b, L))
        pre = 1 - float(softmax_head.bos_mass(b, L - 2))
        after = 1 - float(softmax_head.bos_mass(b, L - 1))
        row = {"beta": b, "L": L, "eta": err, "one_minus_bos_pre": pre, "one_minus_bos_after": after}
        if err <= 1 / 12:
            row["f_pre"] = float(f_pre(sympy.Float(err)))
            row["pre_ratio"] = pre / row["f_pre"]
        if err <= 1 / 120:
            row["f_all"] = float(f_all(sympy.Float(err)))
            row["after_ratio"] = after / row["f_all"]
        rows.append(row)
    return rows


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        pre = _direction_bound(content_flag_bound())
        ev.step(is_zero(1 - pre - f_pre()), "(a) sink_bound_direction at m = 5/6 - 3 eta, beta = eps = eta: "
                                           "1 - a_i0 <= 12 eta/(5 - 12 eta)")
        ev.step(_positive_on(content_flag_bound() - eta, PRE_INTERVAL), "(a) its hypothesis m > eps: 5/6 - 4 eta > 0 on [0, 1/12]")
        ev.note("(a) pre-trigger keys are BOS and content tokens only; |e_{d-1} . o_i| <= eta since y_i = 0 and "
                "||e_{d-1}||_1 = 1; e_{d-1} . u_0 >= -eta (bos_query_sees_only_bos)")
        allb = _direction_bound(m_r() / 2)
        ev.step(is_zero(1 - allb - f_all()), "(b) sink_bound_direction at u = w/2, m = m_r/2, beta = eps = eta: "
                                            "1 - a_i0 <= 4 eta/(m_r + 2 eta)")
        ev.step(bool(sympy.minimum(m_t() - m_r(), eta, ALL_INTERVAL) >= 0), "(b) m_r <= m_t on [0, 1/120], so m_r bounds content and trigger images")
        ev.step(_positive_on(m_r() / 2 - eta, ALL_INTERVAL), "(b) its hypothesis m > eps: m_r/2 - eta > 0 on [0, 1/120]")
        ev.step(is_zero(f_pre(sympy.Integer(0))) and sympy.limit(f_all(), eta, 0) == 0
                and is_zero(sympy.series(f_pre(), eta, 0, 2).removeO() - sympy.Rational(12, 5) * eta)
                and is_zero(sympy.series(f_all(), eta, 0, 2).removeO() - 4 * eta),
                "f_pre = 12/5 eta + O(eta^2), f_all = 4 eta + O(eta^2), both -> 0")
        s = sympy.symbols("s0:2", real=True)
        row = attention.get("softmax").exact(list(s), 1, attention.ops("sympy"), {})
        ev.step(bool(sympy.simplify(1 - row[0]).is_positive) and is_zero(f_pre(sympy.Integer(0))),
                "(c) eta = 0 would force a_10 = 1, but 1 - a_10 = e^s1/(e^s0 + e^s1) > 0 for every softmax row")
        for r in family_table():
            ok = r["eta"] > 1 / 12 or r["one_minus_bos_pre"] <= r["f_pre"]
            ok = ok and (r["eta"] > 1 / 120 or r["one_minus_bos_after"] <= r["f_all"])
            line = (f"family beta={r['beta']}, L={r['L']}: eta={r['eta']:.3e}, 1-a pre={r['one_minus_bos_pre']:.3e}"
                    + (f" <= f_pre={r['f_pre']:.3e} (ratio {r['pre_ratio']:.3f})" if "f_pre" in r else "")
                    + (f", after={r['one_minus_bos_after']:.3e} <= f_all={r['f_all']:.3e} (ratio {r['after_ratio']:.3f})"
                       if "f_all" in r else ""))
            ev.step(ok, line)
        ev.case(f"(a) d >= {task.D_MIN}, L >= {L_MIN_PRE}, 0 <= eta <= {PRE_INTERVAL.sup}, queries {PRE_QUERIES}")
        ev.case(f"(b) d >= {task.D_MIN}, L >= {L_MIN_ALL}, 0 <= eta <= {ALL_INTERVAL.sup}, queries {ALL_QUERIES}")
        ev.case("not covered: queries after the trigger when L = 4")

    return timed(NAME, "a single softmax head with worst-case max-abs error eta has a_i0 >= 1 - 12 eta/(5 - 12 eta) "
                       "at every query before the trigger (L >= 4, eta <= 1/12) and a_i0 >= 1 - 4 eta/(m_r(eta) + 2 eta) "
                       "at every non-trigger query (L >= 5, eta <= 1/120); eta = 0 is impossible", body, cites=CITES)
