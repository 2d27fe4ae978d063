"""T1 step 4 (after the trigger): the trigger row's ratio rho = Z_2/B is pinned near 2.

Statement: let a single softmax head have max-abs error <= eta on the equal-content sequences
with content c and the trigger at j = 2, 3, 4 (so L >= 5). With rho = (A + B + C)/B (A, B, C the
trigger query's unnormalised weights on BOS, a content key and itself) and eta_j the trigger's
error on the content-flag coordinate,

    rho - 2 = 12 [ (rho + 2) eta_4 - 2 (rho + 1) eta_3 + rho eta_2 ]          (identity)
    rho (1 + 48 eta) >= 2 - 48 eta   and   rho (1 - 48 eta) <= 2 + 48 eta.

So for eta < 1/48, (2 - 48 eta)/(1 + 48 eta) <= rho <= (2 + 48 eta)/(1 - 48 eta), for every c.
With only j = 2, 3 (L = 4) rho is not pinned: the flag equations leave a one-parameter family.
"""

from __future__ import annotations

import sympy

from . import trigger_rows as tr
from .algebra import Atom, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "trigger_row_ratio_bound"
CITES = ('token_consistency',)  # registered statements whose conclusions this proof uses
L_MIN = 5  # the trigger positions 2, 3, 4


def identity_rhs(rho, d2, d3, d4):
    """The second difference in j: rho - 2 equals this, for the errors delta_2, delta_3, delta_4."""
    return 12 * ((rho + 2) * d4 - 2 * (rho + 1) * d3 + rho * d2)


def lower_gap():
    """rho (1 + 48 eta) - (2 - 48 eta) >= 0: the lower bound, in the form other lemmas cite."""
    return tr.rho() * (1 + 48 * tr.eta) - (2 - 48 * tr.eta)


def upper_gap():
    """(2 + 48 eta) - rho (1 - 48 eta) >= 0."""
    return (2 + 48 * tr.eta) - tr.rho() * (1 - 48 * tr.eta)


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        h = tr.images("h")
        d2, d3, d4 = (tr.deviation(j, tr.CONTENT_FLAG, h) for j in (2, 3, 4))
        rho, e = tr.rho(), tr.eta
        ev.step(is_zero(rho - 2 - identity_rhs(rho, d2, d3, d4)),
                "rho - 2 = 12[(rho+2) eta_4 - 2(rho+1) eta_3 + rho eta_2] (second difference in j)")
        atoms = [Atom("rho", rho, "positive")] + [
            Atom(f"eta_{j} + eta" if sign == "+" else f"eta - eta_{j}", (dj + e) if sign == "+" else (e - dj), "premise")
            for j, dj in ((2, d2), (3, d3), (4, d4)) for sign in "+-"]
        lower = [(12, ["rho", "eta_4 + eta"]), (24, ["eta_4 + eta"]), (24, ["rho", "eta - eta_3"]),
                 (24, ["eta - eta_3"]), (12, ["rho", "eta_2 + eta"])]
        ok, why = certificate(lower_gap(), lower, atoms)
        ev.step(ok, f"rho (1 + 48 eta) - (2 - 48 eta) >= 0: {why}")
        upper = [(12, ["rho", "eta - eta_4"]), (24, ["eta - eta_4"]), (24, ["rho", "eta_3 + eta"]),
                 (24, ["eta_3 + eta"]), (12, ["rho", "eta - eta_2"])]
        ok, why = certificate(upper_gap(), upper, atoms)
        if ev.step(ok, f"(2 + 48 eta) - rho (1 - 48 eta) >= 0: {why}"):
            ev.case(f"every content c, trigger positions j = 2, 3, 4 (L >= {L_MIN})")

    return timed(NAME, "with max-abs error <= eta at the trigger positions 2, 3, 4 of equal-content sequences "
                       "(L >= 5), the trigger row's ratio rho = (A+B+C)/B satisfies rho(1 + 48 eta) >= 2 - 48 eta "
                       "and rho(1 - 48 eta) <= 2 + 48 eta", body, cites=CITES)
