"""No cancellation: the non-BOS mass cannot be hidden when the non-BOS images agree.

Statement: with weights on the simplex and output o = sum_k a_k u_k,
(i) if every non-BOS image equals one vector v, then o - a_0 u_0 = (1 - a_0) v exactly, so
    (1 - a_0) ||v|| <= ||o|| + a_0 ||u_0||;
(ii) if u . u_k >= m for every non-BOS k along a direction u, then
    u . (o - a_0 u_0) = sum_{k>=1} a_k u . u_k >= m (1 - a_0).
Both for symbolic n. Without such a hypothesis mixed images cancel: u_1 = e, u_2 = -e,
a_1 = a_2 = 1/2, a_0 = 0 gives o = 0 with no BOS mass (checked exactly), which is why T1
needs a direction on which all non-BOS images are positive.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from .algebra import Atom, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "no_cancellation"
CITES = ()  # registered statements whose conclusions this proof uses


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        n = sympy.Symbol("n", integer=True, positive=True)
        k = sympy.Symbol("k", integer=True)
        a = sympy.IndexedBase("a", nonnegative=True)
        q = sympy.IndexedBase("q", nonnegative=True)  # u . u_k = m + q_k
        v, u0, m = sympy.symbols("v u_0 m", real=True)
        a0 = 1 - sympy.Sum(a[k], (k, 1, n))
        o = a0 * u0 + sympy.Sum(a[k] * v, (k, 1, n))
        ev.step(is_zero(o - a0 * u0 - (1 - a0) * v), "equal images: o - a_0 u_0 = (1 - a_0) v (symbolic n, per coordinate)")
        projected = sympy.Sum(a[k] * (m + q[k]), (k, 1, n))
        ok, why = certificate(projected - m * (1 - a0), [(1, ["sum a_k q_k"])],
                              [Atom("sum a_k q_k", sympy.Sum(a[k] * q[k], (k, 1, n)), "positive")])
        ev.step(ok, f"direction: sum_(k>=1) a_k u.u_k - m (1 - a_0) >= 0 (symbolic n): {why}")
        half = Fraction(1, 2)
        out = [half * x + half * y for x, y in zip((1, 0), (-1, 0))]
        ev.step(out == [0, 0], "without the hypothesis: u_1 = e, u_2 = -e, a = (0, 1/2, 1/2) gives o = 0 exactly "
                               "with no BOS mass (cancellation is possible)")
        ev.case("symbolic n; any norm")

    return timed(NAME, "if all non-BOS images are equal, or all have u . u_k >= m along one direction u, the "
                       "non-BOS mass shows in the output: (1 - a_0)||v|| <= ||o|| + a_0||u_0||, resp. "
                       "u . (o - a_0 u_0) >= m (1 - a_0)", body, cites=CITES)
