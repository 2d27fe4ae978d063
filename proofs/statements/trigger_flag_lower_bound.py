"""A trigger that barely attends to itself has a large trigger-flag image (L >= 4).

Statement: let a single softmax head have max-abs error <= eta on the BOS query and on the
equal-content sequences with content c and the trigger at j = 2, 3. With A, B, C the trigger
row's unnormalised weights (BOS, a content key, itself) and g_r the trigger-flag coordinate of
the trigger's image,

    C g_r = (2A + B + 2C)/3 + Z_2 (2 gamma_2 - gamma_3) - B gamma_3 - A g_b       (identity)
    g_r >= 2/3 - 3 eta + (B/C)(1/3 - 4 eta) + (A/C)(2/3 - 4 eta).

So the trigger can only look like a zero-value key when it attends to itself substantially.
This is the partial result behind the open case of T1 (queries after the trigger at L = 4; see
proofs/README.md): there the obstruction is a trigger with small C/B combined with content
tokens whose trigger row has a large (A + C)/B, whose images can be anti-aligned along
e_1 - e_{d-1}.
"""

from __future__ import annotations

import sympy

from . import trigger_rows as tr
from .algebra import Atom, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "trigger_flag_lower_bound"
CITES = ('token_consistency', 'bos_query_sees_only_bos')  # registered statements whose conclusions this proof uses
INTERVAL = sympy.Interval(0, sympy.Rational(1, 12))


def lower_bound():
    e = tr.eta
    return (sympy.Rational(2, 3) - 3 * e + (tr.B / tr.C) * (sympy.Rational(1, 3) - 4 * e)
            + (tr.A / tr.C) * (sympy.Rational(2, 3) - 4 * e))


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        g = tr.images("g")
        gb, gt, gr = g
        g2, g3 = (tr.deviation(j, tr.TRIGGER_FLAG, g) for j in (2, 3))
        A, B, C, e = tr.A, tr.B, tr.C, tr.eta
        Z2 = A + B + C
        ev.step(is_zero(C * gr - ((2 * A + B + 2 * C) / 3 + Z2 * (2 * g2 - g3) - B * g3 - A * gb)),
                "C g_r = (2A + B + 2C)/3 + Z_2(2 gamma_2 - gamma_3) - B gamma_3 - A g_b")
        atoms = [Atom("Z_2/C", Z2 / C, "positive"), Atom("B/C", B / C, "positive"), Atom("A/C", A / C, "positive"),
                 Atom("gamma_2 + eta", g2 + e, "premise"), Atom("eta - gamma_3", e - g3, "premise"),
                 Atom("eta - g_b", e - gb, "lemma:bos_query_sees_only_bos")]
        terms = [(2, ["Z_2/C", "gamma_2 + eta"]), (1, ["Z_2/C", "eta - gamma_3"]), (1, ["B/C", "eta - gamma_3"]),
                 (1, ["A/C", "eta - g_b"])]
        ok, why = certificate(gr - lower_bound(), terms, atoms, e, INTERVAL)
        if ev.step(ok, f"g_r - [2/3 - 3 eta + (B/C)(1/3 - 4 eta) + (A/C)(2/3 - 4 eta)] >= 0: {why}"):
            ev.case("every content c, trigger positions j = 2, 3 (L >= 4), every eta >= 0")

    return timed(NAME, "with max-abs error <= eta on the BOS query and the equal-content sequences with the trigger "
                       "at j = 2, 3, the trigger's image has trigger-flag coordinate >= 2/3 - 3 eta + "
                       "(B/C)(1/3 - 4 eta) + (A/C)(2/3 - 4 eta)", body, cites=CITES)
