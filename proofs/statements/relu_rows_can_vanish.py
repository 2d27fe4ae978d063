"""ReLU rows can be all zero; softmax rows cannot.

Statement: for every query position i >= 0 and scores s_0..s_i <= 0, the registry's ReLU row
a_ik = ReLU(s_ik) / max(i, 1) is identically 0 (no mass anywhere, BOS included), so a ReLU head
can "output nothing" without any sink; for symbolic length the row total sum_k Max(0, -q_k) / n
with q_k >= 0 simplifies to 0. A softmax row on the same scores has total 1
(see ``softmax_rows_on_simplex``), so the contrast is exact.
"""

from __future__ import annotations

import sympy

from constructions import attention

from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "relu_rows_can_vanish"
CITES = ()  # registered statements whose conclusions this proof uses
QUERIES = range(0, 6)


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        ops = attention.ops("sympy")
        relu = attention.get("relu")
        softmax = attention.get("softmax")
        for i in QUERIES:
            q = sympy.symbols(f"q0:{i + 1}", nonnegative=True)
            scores = [-x for x in q]
            row = relu.exact(scores, i, ops, {})
            ev.step(all(w == 0 for w in row), f"query {i}: ReLU row on scores -q (q >= 0) is all zero")
            ev.step(is_zero(sum(softmax.exact(scores, i, ops, {})) - 1), f"query {i}: softmax row on the same scores sums to 1")
        n = sympy.Symbol("n", integer=True, positive=True)
        k = sympy.Symbol("k", integer=True)
        qk = sympy.IndexedBase("q", nonnegative=True)
        total = sympy.Sum(sympy.Max(0, -qk[k]), (k, 0, n)) / n
        if ev.step(is_zero(total), "symbolic length n: sum_(k=0..n) Max(0, -q_k)/n = 0 for q_k >= 0"):
            ev.case("every length n >= 1 (symbolic); registry rows for queries 0..5")

    return timed(NAME, "a ReLU attention row whose scores are all <= 0 is identically zero at every length "
                       "(so ReLU can put no mass anywhere), while a softmax row always sums to 1", body, cites=CITES)
