"""T1 step 5 (after the trigger): along w = e_1 + e_{d-1}, every non-BOS image is >= m_w.

Statement: let a single softmax head have max-abs error <= eta <= 1/120 on the BOS query and on
the equal-content sequences with content c and the trigger at j = 2, 3, 4 (L >= 5). Write w for
the sum of the trigger-flag and content-flag coordinates (||w||_1 = 2; the task's target has
w . y_j = 1/j + (j-1)/j = 1 at every trigger), w_t = w . u_t(c) and w_r = w . u_r(c) for the
images of the content token and of the trigger with content c. Then

    w_t = 1 + omega_3 + rho (omega_3 - omega_2)                                     (identity)
    w_r = 1 + (A/C)(1 - w_b) + [Z_2 (2 omega_2 - omega_3) - B omega_3] / C           (identity)
    w_t >= m_t = 1 - 2 eta - 4 eta (2 + 48 eta)/(1 - 48 eta)
    w_r >= m_r = 1 - 6 eta - 8 eta (1 + 48 eta)/(1 - 96 eta)

where omega_j = w . (o_j - y_j) is the trigger's error along w. The trigger's own flag in the
mean (1/j) is what pins w_r: in abstract versions where the trigger enters the mean as 0, the
trigger can be a second sink (SMT trap 1). The error terms carry B/C, which the ratio bound
(``trigger_row_ratio_bound``: rho near 2, so A + C is near B) absorbs.
"""

from __future__ import annotations

import sympy

from . import trigger_rows as tr
from .algebra import Atom, certificate, is_zero
from .trigger_row_ratio_bound import L_MIN, lower_gap, upper_gap
from .verdict import Evidence, Verdict, timed

NAME = "flag_sum_lower_bound"
CITES = ('token_consistency', 'bos_query_sees_only_bos', 'trigger_row_ratio_bound')  # registered statements whose conclusions this proof uses
INTERVAL = sympy.Interval(0, sympy.Rational(1, 120))
e = tr.eta


def m_t():
    return 1 - 2 * e - 4 * e * (2 + 48 * e) / (1 - 48 * e)


def m_r():
    return 1 - 6 * e - 8 * e * (1 + 48 * e) / (1 - 96 * e)


def _errors():
    g, h = tr.images("g"), tr.images("h")  # trigger-flag and content-flag images
    gam = {j: tr.deviation(j, tr.TRIGGER_FLAG, g) for j in (2, 3)}
    eps = {j: tr.deviation(j, tr.CONTENT_FLAG, h) for j in (2, 3)}
    w = tuple(gi + hi for gi, hi in zip(g, h))
    return g, h, w, gam, eps


def _premise_atoms(gam, eps, g, h):
    atoms = []
    for j in (2, 3):
        for name, dj in ((f"gamma_{j}", gam[j]), (f"eta_{j}", eps[j])):
            atoms += [Atom(f"{name} + eta", dj + e, "premise"), Atom(f"eta - {name}", e - dj, "premise")]
    atoms += [Atom("eta - g_b", e - g[0], "lemma:bos_query_sees_only_bos"),
              Atom("eta - h_b", e - h[0], "lemma:bos_query_sees_only_bos")]
    return atoms


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        g, h, w, gam, eps = _errors()
        wb, wt, wr = w
        om = {j: gam[j] + eps[j] for j in (2, 3)}
        ev.step(all(is_zero(tr.target_coordinate(j, tr.TRIGGER_FLAG) + tr.target_coordinate(j, tr.CONTENT_FLAG) - 1)
                    for j in (2, 3, 4)), "task target along w at the trigger: 1/j + (j-1)/j = 1 for j = 2, 3, 4")
        rho = tr.rho()
        A, B, C = tr.A, tr.B, tr.C
        ev.step(is_zero(wt - (1 + om[3] + rho * (om[3] - om[2]))), "w_t = 1 + omega_3 + rho (omega_3 - omega_2)")
        Z2 = A + B + C
        ev.step(is_zero(wr - (1 + (A / C) * (1 - wb) + (Z2 * (2 * om[2] - om[3]) - B * om[3]) / C)),
                "w_r = 1 + (A/C)(1 - w_b) + [Z_2(2 omega_2 - omega_3) - B omega_3]/C")
        atoms = _premise_atoms(gam, eps, g, h) + [
            Atom("rho", rho, "positive"),
            Atom("upper rho gap", upper_gap(), "lemma:trigger_row_ratio_bound"),
            Atom("lower rho gap", lower_gap(), "lemma:trigger_row_ratio_bound"),
            Atom("1/(1 - 48 eta)", 1 / (1 - 48 * e), "interval"),
            Atom("1/(1 + 48 eta)", 1 / (1 + 48 * e), "interval"),
            Atom("1/(rho_lo - 1)", (1 + 48 * e) / (1 - 96 * e), "interval"),
            Atom("kappa", 1 - 8 * e - 8 * e * (1 + 48 * e) / (1 - 96 * e), "interval"),
            Atom("eta", e, "interval"),
            Atom("A/C", A / C, "positive"), Atom("B/C", B / C, "positive"), Atom("Z_2/C", Z2 / C, "positive"),
            Atom("1/(rho - 1)", B / (A + C), "positive"), Atom("(A + C)/C", (A + C) / C, "positive"),
        ]
        t_terms = [(1, ["gamma_3 + eta"]), (1, ["eta_3 + eta"]), (1, ["rho", "gamma_3 + eta"]),
                   (1, ["rho", "eta_3 + eta"]), (1, ["rho", "eta - gamma_2"]), (1, ["rho", "eta - eta_2"]),
                   (4, ["eta", "upper rho gap", "1/(1 - 48 eta)"])]
        ok, why = certificate(wt - m_t(), t_terms, atoms, e, INTERVAL)
        ev.step(ok, f"w_t - m_t >= 0 for 0 <= eta <= 1/120: {why}")
        r_terms = [(2, ["Z_2/C", "gamma_2 + eta"]), (2, ["Z_2/C", "eta_2 + eta"]),
                   (1, ["Z_2/C", "eta - gamma_3"]), (1, ["Z_2/C", "eta - eta_3"]),
                   (1, ["B/C", "eta - gamma_3"]), (1, ["B/C", "eta - eta_3"]),
                   (1, ["A/C", "eta - g_b"]), (1, ["A/C", "eta - h_b"]), (1, ["A/C", "kappa"]),
                   (8, ["eta", "(A + C)/C", "lower rho gap", "1/(1 + 48 eta)", "1/(rho_lo - 1)", "1/(rho - 1)"])]
        ok, why = certificate(wr - m_r(), r_terms, atoms, e, INTERVAL)
        ev.step(ok, f"w_r - m_r >= 0 for 0 <= eta <= 1/120: {why}")
        ev.case(f"every content c (content token and trigger), trigger positions j = 2, 3, 4 (L >= {L_MIN})")

    return timed(NAME, "with max-abs error <= eta <= 1/120 on the BOS query and the equal-content sequences "
                       "with the trigger at j = 2, 3, 4 (L >= 5), every content token's and every trigger's image "
                       "has trigger-flag + content-flag coordinate >= m_r(eta) = 1 - 6 eta - 8 eta (1 + 48 eta)/(1 - 96 eta) "
                       "(content tokens even >= m_t(eta) = 1 - 2 eta - 4 eta (2 + 48 eta)/(1 - 48 eta))", body, cites=CITES)
