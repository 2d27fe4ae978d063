"""The sink bound along a direction.

Statement: let a_0..a_n be weights on the simplex (a_k >= 0, sum 1), v_0..v_n value images,
o = sum_k a_k v_k, and u a direction with ||u||_* <= 1 (dual norm; for the max-abs norm this is
||u||_1 <= 1). If u . v_k >= m > 0 for every k >= 1, u . v_0 >= -beta with beta >= 0, and
||o|| <= eps < m, then

    a_0 >= (m - eps) / (m + beta)        (= 1 - eps/m when the BOS value is 0).

The bound is tight: v_0 = -beta u, v_k = m u and a_0 = (m - eps)/(m + beta) give u . o = eps.

Proof (symbolic n, checked): with p_k = u . v_k,
    a_0 (m + beta) - (m - eps) = (eps - u . o) + a_0 (p_0 + beta) + sum_{k>=1} a_k (p_k - m),
every term >= 0 (|u . o| <= ||u||_* ||o|| <= eps is Hoelder's inequality); divide by m + beta > 0.

``check(bound)`` accepts another claimed bound (a sympy expression in m, beta, eps); it is
``proved`` only if it follows from the bound above, ``refuted`` if the tight instance violates it.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from .algebra import Atom, adopt, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "sink_bound_direction"
CITES = ()  # registered statements whose conclusions this proof uses
m, beta, eps = sympy.symbols("m beta epsilon", positive=True)
DEFAULT_BOUND = (m - eps) / (m + beta)
GRID = [Fraction(p, q) for p in range(0, 9) for q in (1, 4)]


def proved_bound():
    """(m - eps)/(m + beta): what the certificate proves."""
    return DEFAULT_BOUND


def certificate_holds() -> tuple[bool, str]:
    """a_0 (m + beta) - (m - eps) >= 0 for symbolic n, from the simplex and the hypotheses."""
    n = sympy.Symbol("n", integer=True, positive=True)
    k = sympy.Symbol("k", integer=True)
    a = sympy.IndexedBase("a", nonnegative=True)
    r = sympy.IndexedBase("r", nonnegative=True)  # p_k = m + r_k, r_k >= 0
    p0, slack = sympy.symbols("p_0 s", real=True)
    a0 = 1 - sympy.Sum(a[k], (k, 1, n))  # the simplex: a_0 = 1 - sum_{k>=1} a_k
    u_dot_o = a0 * p0 + sympy.Sum(a[k] * (m + r[k]), (k, 1, n))
    atoms = [
        Atom("eps - u.o", eps - u_dot_o, "premise"),  # Hoelder: |u.o| <= ||u||_* ||o|| <= eps
        Atom("a_0", a0, "premise"),
        Atom("p_0 + beta", p0 + beta, "premise"),
        Atom("sum a_k (p_k - m)", sympy.Sum(a[k] * r[k], (k, 1, n)), "positive"),
    ]
    terms = [(1, ["eps - u.o"]), (1, ["a_0", "p_0 + beta"]), (1, ["sum a_k (p_k - m)"])]
    return certificate(a0 * (m + beta) - (m - eps), terms, atoms)


def tight_instance(mv, bv, ev_):
    """Scalar projections of the tight instance: (a_0, u . o)."""
    a0 = (mv - ev_) / (mv + bv)
    return a0, -a0 * bv + (1 - a0) * mv


def check(bound=None) -> Verdict:
    claimed = DEFAULT_BOUND if bound is None else adopt(bound, (m, beta, eps))

    def body(ev: Evidence) -> None:
        ok, why = certificate_holds()
        ev.step(ok, f"a_0 (m + beta) - (m - eps) >= 0 for symbolic n: {why}")
        ev.note("|u . o| <= ||u||_* ||o|| (Hoelder) gives the premise eps - u . o >= 0")
        a0, uo = tight_instance(m, beta, eps)
        ev.step(is_zero(uo - eps) and is_zero(a0 - DEFAULT_BOUND),
                "tight: v_0 = -beta u, v_k = m u, a_0 = (m - eps)/(m + beta) gives u . o = eps exactly")
        if is_zero(claimed - DEFAULT_BOUND):
            ev.case("every n >= 1 (symbolic), every norm with its dual, m > eps >= 0, beta >= 0")
            return
        ev.step(False, f"claimed bound {claimed} is not the proved (m - eps)/(m + beta)")
        for mv in GRID:
            for bv in GRID:
                for e in GRID:
                    if not (mv > e >= 0 and mv > 0):
                        continue
                    a0v, uov = tight_instance(mv, bv, e)
                    g = claimed.subs({m: mv, beta: bv, eps: e})
                    if abs(uov) <= e and sympy.Rational(a0v.numerator, a0v.denominator) < g:
                        ev.refute(f"m={mv}, beta={bv}, eps={e}: tight instance has a_0 = {a0v} < claimed {g}")
                        return

    return timed(NAME, f"weights on the simplex, u . v_k >= m > 0 (k >= 1), u . v_0 >= -beta, ||u||_* <= 1, "
                       f"||o|| <= eps < m imply a_0 >= {claimed}" + ("; tight" if bound is None else ""), body, planted=bound is not None, cites=CITES)
