"""Softmax rows lie on the simplex for every length.

Statement: for every n >= 0 and real scores s_0..s_n, the softmax weights
a_k = exp(s_k) / sum_{k'=0..n} exp(s_k') are positive and sum to 1 (symbolic n). The registry's
softmax kind (``constructions.attention``, which shifts by the BOS score) gives the same row:
checked for n = 0..4 with symbolic scores.

``check(claimed_total)`` checks the row total against ``claimed_total``; the planted false
statement "softmax rows can sum to less than one" passes ``1 - 1/(n + 2)`` and must come out
refuted (or unknown), never proved.
"""

from __future__ import annotations

import sympy

from constructions import attention

from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "softmax_rows_on_simplex"
CITES = ()  # registered statements whose conclusions this proof uses
REGISTRY_LENGTHS = range(0, 5)


def _symbolic_row(n: sympy.Symbol):
    k, j = sympy.symbols("k j", integer=True)
    s = sympy.IndexedBase("s", real=True)
    Z = sympy.Sum(sympy.exp(s[j]), (j, 0, n))
    return sympy.Sum(sympy.exp(s[k]) / Z, (k, 0, n)), sympy.exp(s[k]) / Z


def _registry_total(length: int):
    scores = sympy.symbols(f"s0:{length + 1}", real=True)
    row = attention.get("softmax").exact(list(scores), length, attention.ops("sympy"), {})
    return row, sum(row)


def check(claimed_total=None) -> Verdict:
    n = sympy.Symbol("n", integer=True, nonnegative=True)
    claimed = sympy.Integer(1) if claimed_total is None else sympy.sympify(claimed_total)
    if claimed_total is not None:
        claimed = claimed.subs(sympy.Symbol("n"), n)

    def body(ev: Evidence) -> None:
        total, weight = _symbolic_row(n)
        if ev.step(is_zero(total - claimed), f"sum_(k=0..n) exp(s_k)/sum_j exp(s_j) - ({claimed}) simplifies to 0 (symbolic n)"):
            ev.case("every n >= 0 (symbolic), every real score vector")
        ev.step(bool(weight.is_positive), "each weight exp(s_k)/sum_j exp(s_j) is positive (sympy: exp of a real is positive)")
        for length in REGISTRY_LENGTHS:
            row, row_total = _registry_total(length)
            expected = claimed.subs(n, length)
            if is_zero(row_total - expected):
                ev.step(all(w.is_positive for w in row), f"registry softmax row at query {length}: positive weights, total {expected}")
                continue
            ev.step(False, f"registry softmax row at query {length} totals {sympy.simplify(row_total)}, not {expected}")
            if sympy.simplify(row_total) == 1 and sympy.Integer(1) != expected:
                ev.refute(f"query {length} with symbolic scores: the row totals exactly 1, the claim says {expected}")
                return

    return timed(NAME, f"softmax weights are positive and every row sums to {claimed} for every length n", body,
                 planted=claimed_total is not None, cites=CITES)
