"""T1 step 2: every content token's image has content-flag coordinate >= 5/6 - 3 eta.

Statement: let a single softmax head have max-abs error <= eta < 1/12 on the equal-content
sequences with content c (every content token and the trigger carry c) and the trigger at j = 2
and j = 3 (so L >= 4). With h = e_{d-1} (the content-flag coordinate), h_t = (W_O W_V x_t(c))_{d-1}
for the content token x_t(c). Then, writing delta_j for the error at the trigger on that coordinate
and rho = Z_2/B = (A + B + C)/B >= 1,

    h_t = 2/3 + delta_3 + rho (1/6 + delta_3 - delta_2)      (identity)
    h_t >= 5/6 - 3 eta                                        (for every content c).

The contents of the closure [-1, 1]^(d-3) are covered: the bound is per c, and the error bound
extends to the closure by continuity.
"""

from __future__ import annotations

import sympy

from constructions import task

from . import trigger_rows as tr
from .algebra import Atom, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "content_flag_lower_bound"
CITES = ('token_consistency',)  # registered statements whose conclusions this proof uses
INTERVAL = sympy.Interval(0, sympy.Rational(1, 12))
L_MIN = task.L_MIN  # the trigger positions 2 and 3


def lower_bound():
    return sympy.Rational(5, 6) - 3 * tr.eta


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        h = tr.images("h")
        hb, ht, hr = h
        d2, d3 = (tr.deviation(j, tr.CONTENT_FLAG, h) for j in (2, 3))
        rho = tr.rho()
        ev.step(is_zero(tr.target_coordinate(2, tr.CONTENT_FLAG) - sympy.Rational(1, 2))
                and is_zero(tr.target_coordinate(3, tr.CONTENT_FLAG) - sympy.Rational(2, 3)),
                "task targets on the content flag at j = 2, 3: 1/2 and 2/3")
        identity = ht - (sympy.Rational(2, 3) + d3 + rho * (sympy.Rational(1, 6) + d3 - d2))
        ev.step(is_zero(identity), "h_t = 2/3 + delta_3 + rho (1/6 + delta_3 - delta_2), rho = (A+B+C)/B")
        e = tr.eta
        atoms = [
            Atom("rho - 1", sympy.simplify(rho - 1), "positive"),
            Atom("1/12 - eta", sympy.Rational(1, 12) - e, "interval"),
            Atom("delta_3 + eta", d3 + e, "premise"),
            Atom("eta - delta_2", e - d2, "premise"),
        ]
        terms = [(2, ["rho - 1", "1/12 - eta"]), (1, ["rho - 1", "delta_3 + eta"]), (1, ["rho - 1", "eta - delta_2"]),
                 (2, ["delta_3 + eta"]), (1, ["eta - delta_2"])]
        ok, why = certificate(ht - lower_bound(), terms, atoms, e, INTERVAL)
        if ev.step(ok, f"h_t - (5/6 - 3 eta) >= 0 for 0 <= eta <= 1/12: {why}"):
            ev.case(f"every content c (per-c argument), trigger positions j = 2, 3 (L >= {L_MIN}), any d >= {task.D_MIN}")

    return timed(NAME, "a softmax head with max-abs error <= eta <= 1/12 on the equal-content sequences with "
                       "the trigger at j = 2 and j = 3 (L >= 4) maps every content token x_t(c) to an image "
                       "whose content-flag coordinate is >= 5/6 - 3 eta", body, cites=CITES)
