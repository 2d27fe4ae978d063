"""The convex-hull sink bound of constructions/SPEC.md section 3.

Statement: at a query with weights a_0..a_n on the simplex, value images u_0..u_n and output
o = sum_k a_k u_k, let delta > 0 be the distance (in any norm) from the origin to the convex
hull of the non-BOS images {u_1..u_n}. Then

    ||o|| >= (1 - a_0) delta - a_0 ||u_0||,   hence   a_0 >= (delta - ||o||) / (delta + ||u_0||).

Tight in one dimension: u_0 = -U, u_k = delta, a_0 = (delta - O)/(delta + U) gives ||o|| = O.

Proof: (i) o = a_0 u_0 + (1 - a_0) p with p = sum_{k>=1} a_k u_k / (1 - a_0), a convex
combination of u_1..u_n (symbolic n, checked); (ii) ||p|| >= delta (definition of delta) and
||o|| >= (1 - a_0)||p|| - a_0 ||u_0|| (triangle inequality and homogeneity: norm axioms, argued);
(iii) a_0 (delta + U) - (delta - O) = [O - (1 - a_0) P + a_0 U] + (1 - a_0)(P - delta) >= 0
(certificate, checked); divide by delta + U > 0.

``check(bound)`` takes another claimed bound in (delta, O, U); the planted false statement
drops the denominator (``delta - O``) and must be refuted by an exact one-dimensional instance.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from .algebra import Atom, adopt, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "sink_bound_convex_hull"
CITES = ()  # registered statements whose conclusions this proof uses
delta, O, U = sympy.symbols("delta O U", nonnegative=True)
DEFAULT_BOUND = (delta - O) / (delta + U)
GRID = [Fraction(p, 4) for p in range(0, 13)]


def decomposition_holds() -> bool:
    """o = a_0 u_0 + (1 - a_0) p with p's weights a_k/(1 - a_0) summing to 1 (one coordinate,
    symbolic n; the identity is linear, so it holds coordinatewise)."""
    n = sympy.Symbol("n", integer=True, positive=True)
    k = sympy.Symbol("k", integer=True)
    a = sympy.IndexedBase("a", positive=True)
    x = sympy.IndexedBase("x", real=True)
    u0 = sympy.Symbol("u_0", real=True)
    rest = sympy.Sum(a[k], (k, 1, n))
    a0 = 1 - rest
    o = a0 * u0 + sympy.Sum(a[k] * x[k], (k, 1, n))
    p = sympy.Sum(a[k] * x[k], (k, 1, n)) / rest
    hull_weights = sympy.Sum(a[k] / rest, (k, 1, n))
    return is_zero(o - (a0 * u0 + (1 - a0) * p)) and is_zero(hull_weights - 1)


def certificate_holds() -> tuple[bool, str]:
    a0 = sympy.Symbol("a_0", nonnegative=True)
    P = sympy.Symbol("P", nonnegative=True)  # ||p||
    atoms = [
        Atom("triangle", O - (1 - a0) * P + a0 * U, "premise"),
        Atom("1 - a_0", 1 - a0, "premise"),
        Atom("P - delta", P - delta, "premise"),
    ]
    return certificate(a0 * (delta + U) - (delta - O), [(1, ["triangle"]), (1, ["1 - a_0", "P - delta"])], atoms)


def one_dim_instance(dv: Fraction, Uv: Fraction, a0: Fraction) -> Fraction:
    """|o| for u_0 = -U, u_k = delta (k >= 1): the hull is {delta}, at distance delta."""
    return abs(-a0 * Uv + (1 - a0) * dv)


def check(bound=None) -> Verdict:
    claimed = DEFAULT_BOUND if bound is None else adopt(bound, (delta, O, U))

    def body(ev: Evidence) -> None:
        ev.step(decomposition_holds(), "o = a_0 u_0 + (1 - a_0) p, p a convex combination of u_1..u_n (symbolic n)")
        ev.note("||o|| >= (1 - a_0)||p|| - a_0||u_0|| (triangle inequality) and ||p|| >= delta (definition)")
        ok, why = certificate_holds()
        ev.step(ok, f"a_0 (delta + ||u_0||) - (delta - ||o||) >= 0: {why}")
        a0 = DEFAULT_BOUND
        ev.step(is_zero((1 - a0) * delta - a0 * U - O), "tight: u_0 = -U, u_k = delta, a_0 = (delta - O)/(delta + U) gives ||o|| = O")
        if is_zero(claimed - DEFAULT_BOUND):
            ev.case("every n >= 1 (symbolic), every norm, delta > 0")
            return
        ev.step(False, f"claimed bound {claimed} is not the proved (delta - ||o||)/(delta + ||u_0||)")
        for dv in GRID[1:]:
            for Uv in GRID:
                for a0v in [Fraction(p, 8) for p in range(0, 9)]:
                    Ov = one_dim_instance(dv, Uv, a0v)
                    g = claimed.subs({delta: dv, O: Ov, U: Uv})
                    if sympy.Rational(a0v.numerator, a0v.denominator) < g:
                        ev.refute(f"one dimension, u_0 = -{Uv}, u_k = {dv} (delta = {dv}), a_0 = {a0v}: "
                                  f"||o|| = {Ov}, claimed bound {g} > a_0")
                        return

    return timed(NAME, f"weights on the simplex and non-BOS hull at distance delta > 0 imply a_0 >= {claimed}" + ("; tight" if bound is None else ""),
                 body, planted=bound is not None, cites=CITES)
