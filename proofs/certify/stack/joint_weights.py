"""Per-key attention-weight bounds searched jointly over the query's content.

``affine_stack.key_bounds`` bounds each key's weight a_k = 1 / (1 + sum_{m != k} exp(s_m - s_k))
from every key's score range over the whole input class, each range at its own query content c:
lo_k puts key k's score at its lowest and every other key's at its highest, each at a different c.
But c is one vector, shared by every score of the query. Here, with the scores relative to BOS as
exponents of c (``scores.key_exponents``: upper E+_m(c), lower E-_m(c), each over every other
content and remainder), the sums

    U_k = max_c sum_{m != k} exp(E+_m(c) - E-_k(c)),    L_k = min_c sum_{m != k} exp(E-_m(c) - E+_k(c))

are searched over c by the single-layer branch and bound (``branch.maximise``; E+_m - E-_k is
again one exponent of sign +1, its support rows the two exponents' rows side by side), so

    1 / (1 + U_k) <= a_k <= 1 / (1 + L_k)    for every input.

At layer 0, where a key's score depends on c and its own content only, these are the exact
extremes up to the search's tolerance; deeper, each score still takes its own worst other
contents and remainders (as in ``key_bounds``). The search is certified at any node budget (its
upper end covers every box left open), the final figures in Arb ball arithmetic. Softmax only.
"""

from __future__ import annotations

import numpy as np

from constructions import balls

from ..arithmetic import branch, replay
from ..arithmetic.heads import Exponent
from . import scores

NODES = 20  # boxes per search: small, since every figure is certified whatever the budget (pinned)


def difference(top: Exponent, bottom: Exponent, sign: int) -> Exponent:
    """top - bottom as one exponent of sign ``sign``: top of that sign, bottom of the opposite one
    (an upper minus a lower exponent is an upper one, and the reverse)."""
    assert top.s in (sign, 0) and bottom.s in (-sign, 0)
    return Exponent(top.a - bottom.a, top.p - bottom.p, top.S - bottom.S, sign, np.r_[top.b, bottom.b],
                    np.vstack([top.K, bottom.K]), np.r_[top.weights, bottom.weights])


def _sum_bound(terms: list[Exponent], n: int, sign: int, search) -> float:
    """A certified upper (sign +1) or lower (sign -1) bound on sum_T exp(E_T(c)) over c in the box."""
    return sign * search([(1.0, E) for E in terms], sign).upper


def key_weight_bounds(ex: list, n: int, objective=branch.ExpSum, rtol: float = 1e-3,
                      nodes: int = NODES) -> tuple[np.ndarray, np.ndarray]:
    """[K] lower and upper bounds on each key's weight from the keys' exponents relative to BOS
    ``ex`` = [(upper, lower) per key 0..i], searched jointly over the query's content c
    (``objective``: the sum's class for ``branch.maximise``, stopped at ``rtol``)."""
    K = len(ex)
    ex = [(scores.compact(up), scores.compact(down)) for up, down in ex]  # each at most MERGE_LOSS wider

    def search(terms, sign):
        return branch.maximise(objective(terms, sign), n, rtol=rtol, max_nodes=nodes)
    lo, hi = np.zeros(K), np.ones(K)
    for k in range(K):
        others = [m for m in range(K) if m != k]
        up = _sum_bound([difference(ex[m][0], ex[k][1], +1) for m in others], n, +1, search)
        down = max(_sum_bound([difference(ex[m][1], ex[k][0], -1) for m in others], n, -1, search), 0.0)
        with balls.precision():
            lo[k] = replay.down(1 / (1 + balls.ball(up))) if np.isfinite(up) else 0.0
            hi[k] = min(1.0, replay.up(1 / (1 + balls.ball(down))))
    return lo, hi
