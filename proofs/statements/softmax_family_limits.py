"""Sufficiency: the softmax family of ``constructions.softmax_head`` and its limits.

Statement: for the head ``softmax_head.build(d, beta)`` (BOS logit gap beta):
(i) its closed forms are its semantics: on a sequence with symbolic contents, the exact evaluator
    (sympy, symbolic beta) gives BOS mass ``bos_mass(beta, i, at_trigger)`` at every query and
    output minus target ``error(beta, X)`` at every position (d = 4, L = 5, every trigger j);
(ii) at a non-trigger query i < j the content-flag error is i/(e^beta + i) = 1 - a_i0 exactly
    (symbolic beta, i): the error vanishes only as the BOS mass tends to 1, and it is > 0 for
    every finite beta (the family never solves the task exactly);
(iii) as beta -> oo: a_i0 -> 1 off the trigger, a_j0 -> 0 at the trigger, and the worst-case
    error max((L-1)/(e^beta + L-1), e^-beta/(2 + e^-beta)) -> 0 (symbolic i, j, L).
"""

from __future__ import annotations

import sympy

from constructions import reference, softmax_head, task

from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "softmax_family_limits"
CITES = ()  # registered statements whose conclusions this proof uses
D, L = 4, 5
beta = sympy.Symbol("beta", positive=True)


def check_closed_forms(ev: Evidence) -> None:
    net = softmax_head.build(D, beta)
    contents = [[sympy.Symbol(f"c{p}", real=True)] for p in range(1, L)]
    for j in range(2, L):
        X = task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))
        Y, pat = reference.forward(net, X, "sympy")
        T = task.target(X, j)
        E = softmax_head.error(beta, X, j)
        masses = all(is_zero(pat[0][0][i][0] - softmax_head.bos_mass(beta, i, at_trigger=(i == j))) for i in range(L))
        errors = all(is_zero(y - t - e) for yr, tr, er in zip(Y, T, E) for y, t, e in zip(yr, tr, er))
        flags = all(is_zero(E[i][task.content_flag(D)] - softmax_head.content_flag_error(beta, i)) for i in range(1, j))
        ev.step(masses and errors and flags, f"trigger j={j}: evaluator BOS masses = bos_mass(beta, i), output - target = "
                                             f"error(beta, X), content-flag error before j = content_flag_error(beta, i)")


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        check_closed_forms(ev)
        i = sympy.Symbol("i", integer=True, positive=True)
        Ls = sympy.Symbol("L", integer=True, positive=True)
        b = sympy.Symbol("b", real=True)
        mass = softmax_head.bos_mass(b, i)
        flag_err = softmax_head.content_flag_error(b, i)
        ev.step(is_zero(flag_err - (1 - mass)), "content-flag error at i < j equals 1 - a_i0 (symbolic beta, i)")
        ev.step(bool(flag_err.is_positive), "that error is > 0 for every real beta: the family is never exact")
        ev.step(sympy.limit(mass, b, sympy.oo) == 1, "lim_(beta->oo) a_i0 = 1 off the trigger (symbolic i)")
        ev.step(sympy.limit(softmax_head.bos_mass(b, i, at_trigger=True), b, sympy.oo) == 0,
                "lim_(beta->oo) a_j0 = 0 at the trigger (symbolic j)")
        worst = [(Ls - 1) / (sympy.exp(b) + Ls - 1), sympy.exp(-b) / (2 + sympy.exp(-b))]
        ev.step(is_zero(softmax_head.max_error(b, Ls) - sympy.Max(*worst))
                and all(sympy.limit(w, b, sympy.oo) == 0 for w in worst),
                "worst-case error max((L-1)/(e^b + L-1), e^-b/(2 + e^-b)) -> 0 (symbolic L)")
        r, jj = sympy.symbols("r j", nonnegative=True)  # r = L - 1 - i >= 0; the trigger at jj + 2 >= 2
        gap_off = sympy.factor(sympy.together((i + r) / (sympy.exp(b) + i + r) - i / (sympy.exp(b) + i)))
        gap_at = sympy.factor(sympy.together(sympy.exp(-b) / (2 + sympy.exp(-b)) - sympy.exp(-b) / (jj + 2 + sympy.exp(-b))))
        ev.step(bool(gap_off.is_nonnegative) and bool(gap_at.is_nonnegative),
                "worst case: every coordinate sum has |.| <= i, and i/(e^b + i) grows with i (<= value at i = L-1); "
                "at the trigger |mean| <= 1 and e^-b/(j + e^-b) is largest at j = 2")
        ev.case("symbolic beta, i, j, L for the limits; d = 4, L = 5, j = 2..4 for the evaluator")

    return timed(NAME, "the softmax family's closed forms match the exact evaluator; its error at non-trigger "
                       "queries is exactly 1 - BOS mass, positive for every finite beta, and -> 0 only as the BOS "
                       "mass -> 1 (beta -> oo)", body, cites=CITES)
