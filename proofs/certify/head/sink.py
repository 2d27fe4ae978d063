"""Certified worst case of a single head's sink over EVERY input of the task.

At a non-trigger query i the keys other than BOS are i - 1 content tokens and the query itself
when the trigger comes later ("before": i < j, needs i <= L - 2), or i - 2 content tokens, the
trigger and the query itself when it came earlier ("after": i > j, needs i >= 3). At the
trigger query j the keys are j - 1 content tokens and the trigger itself. The counts are all
that matters: a head has no positional encoding, so which positions hold the keys is irrelevant.

With R = sum_{k>=1} w(s_ik) / w(s_i0) (w = exp for softmax, sigmoid for sum-normalised sigmoid)
a_i0 = 1 / (1 + R). For a fixed query content c each key's term is maximised (minimised) on its
own box in closed form (``heads``), so

    min over all inputs of a_i0 = 1 / (1 + max_c [m w(U(c)) + t w(T(c)) + w(Q(c))] / w(g_0(c)))

with m content keys, t in {0, 1} trigger keys, U / T their best scores, Q the query's own score.
``branch.maximise`` bounds that over the query box with certified arithmetic; the maximising c
with keys at their closed-form maximisers is the witness input, replayed exactly
(``replay``). The trigger's maximum BOS mass is the same with every term minimised.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from constructions import attention, balls, reference, task

from ..arithmetic import branch, heads, replay

CASES = ("before", "after", "trigger")


@dataclass
class QueryBound:
    position: int
    case: str  # before / after: min a_i0 at a non-trigger query; trigger: max a_j0
    certified: float  # before / after: a_i0 >= certified on every input; trigger: a_j0 <= certified
    witness_low: float  # the replayed a_i0 at the witness input (interval ends)
    witness_high: float
    trigger: int  # the witness input's trigger position
    query_content: list[float]
    key_content: list[float]  # every other content token (and the trigger, "after") carries this
    exact: bool  # the search closed: certified and witness agree to the tolerance
    nodes: int
    gap: float = field(default=0.0)  # |witness - certified|

    def __post_init__(self) -> None:
        end = self.witness_low if self.case != "trigger" else self.witness_high
        self.gap = abs(end - self.certified)


def cases(L: int) -> list[tuple[int, str]]:
    out = []
    for i in range(1, L):
        if i <= L - 2:
            out.append((i, "before"))
        if i >= 3:
            out.append((i, "after"))
    out += [(j, "trigger") for j in range(2, L)]
    return out


def objective(h: heads.Head, i: int, case: str):
    """Phi over the query content whose maximum gives the worst case at (i, case)."""
    d = h.d
    content, trig = task.content_flag(d), task.TRIGGER_FLAG
    if case == "trigger":
        f, sign, counts = trig, -1, ((i - 1, content),)
    else:
        f, sign = content, +1
        counts = ((i - 1, content),) if case == "before" else ((i - 2, content), (1, trig))
    s = +1 if sign > 0 else -1
    softmax = h.kind == "softmax"
    terms = [(float(m), heads.score_exponent(h, f, flag, s, relative_to_bos=softmax)) for m, flag in counts if m > 0]
    terms.append((1.0, heads.score_exponent(h, f, None, 0, relative_to_bos=softmax)))
    if softmax:
        return branch.ExpSum(terms, sign), f, s
    return branch.SigmoidSum(terms, heads.bos_exponent(h, f), sign), f, s


def witness_sequence(d: int, L: int, i: int, case: str, query: np.ndarray, key: np.ndarray):
    """(X, j): the witness input (exact Fractions) for query i in ``case``."""
    n = d - 3
    q, k = heads.exact_vector(query), heads.exact_vector(key)
    j = i + 1 if case == "before" else (2 if case == "after" else i)
    contents = [[Fraction(0)] * n for _ in range(L - 1)]
    for pos in range(1, i):
        contents[pos - 1] = list(k)
    contents[i - 1] = list(q)
    return task.make_sequence(contents, j), j


class Replayer:
    """Exact witness replays of one head: projections W_Q x and W_K x of each distinct token,
    formed once in exact integer arithmetic (``exact.IntMatrix``; a witness repeats a few tokens
    over and over), scores as exact rationals, then the kind's exact form in Arb balls.
    The same numbers as ``reference.matvec`` / ``reference._dot`` on Fractions
    (``tests/test_certify_scale.py``)."""

    def __init__(self, net: reference.Network, layer: int = 0, head: int = 0):
        from ..arithmetic.exact import IntMatrix

        L = net.layers[layer]
        self.kind = net.kind
        self.WQ, self.WK = (IntMatrix.of(heads._exact_matrix(getattr(L, name)[head])) for name in ("W_Q", "W_K"))
        self._q: dict = {}
        self._k: dict = {}

    def _project(self, cache: dict, W, x):
        from ..arithmetic.exact import IntVector

        key = tuple(x)
        if key not in cache:
            cache[key] = W.apply(IntVector.of([heads.exact(v) for v in x]))
        return cache[key]

    def scores(self, X, i: int) -> list[Fraction]:
        q = self._project(self._q, self.WQ, X[i])
        return [q.dot(self._project(self._k, self.WK, X[k])) for k in range(i + 1)]

    def weights(self, X, i: int) -> list:
        ops = attention.ops("interval")
        with balls.precision():
            return attention.get(self.kind).exact([replay.iv_number(s) for s in self.scores(X, i)], i, ops, {})

    def bos_weight(self, X, i: int):
        return self.weights(X, i)[0]

    def error(self, X, i: int, j: int, h: heads.Head):
        """(|error|, r) at query i of the exact input X (trigger j), the coordinate r whose interval
        has the largest lower end: output sum_k a_ik (V x_k)_r with V = W_O W_V exact (``h.V_int``)
        and the target of ``constructions.task.target`` (single layer, no residual)."""
        from ..arithmetic.exact import IntVector

        a = self.weights(X, i)
        images = [h.V_int.apply(IntVector.of([heads.exact(v) for v in X[k]])).fractions() for k in range(i + 1)]
        target = task.target(X, j)[i]
        best, where = None, 0
        with balls.precision():
            for r in range(h.d):
                out = sum((w * replay.iv_number(u[r]) for w, u in zip(a, images)), replay.iv_number(0))
                e = balls.magnitude(out - replay.iv_number(target[r]))
                if best is None or balls.lo(e) > balls.lo(best):
                    best, where = e, r
        return best, where


def bos_weight(net: reference.Network, X, i: int, layer: int = 0, head: int = 0):
    """a_i0 of one head on the exact sequence X (interval), through exact scores and the kind's
    exact form; single-layer inputs are the tokens themselves."""
    return Replayer(net, layer, head).bos_weight(X, i)


def certified_bos_mass(R, case: str) -> float:
    """a = 1 / (1 + R) for the certified interval R of the non-BOS terms, rounded to the safe side:
    down for a non-trigger query's minimum, up for the trigger's maximum."""
    with balls.precision():
        a = 1 / (1 + balls.ball(R))
    return replay.down(a) if case != "trigger" else replay.up(a)


def certify_query(net: reference.Network, h: heads.Head, L: int, i: int, case: str,
                  rtol: float = 1e-9, max_nodes: int = 20_000, replayer: Replayer | None = None) -> QueryBound:
    obj, f, s = objective(h, i, case)
    res = branch.maximise(obj, h.n, rtol=rtol, max_nodes=max_nodes)
    certified = certified_bos_mass(res.upper if case != "trigger" else -res.upper, case)
    key = heads.key_argmax(h.M, f, res.witness, s)
    X, j = witness_sequence(h.d, L, i, case, res.witness, key)
    w = (replayer or Replayer(net)).bos_weight(X, i)
    return QueryBound(i, case, certified, replay.down(w), replay.up(w), j, res.witness.tolist(), key.tolist(),
                      res.closed, res.nodes)


def certify_head(net: reference.Network, L: int, layer: int = 0, head: int = 0,
                 max_nodes: int = 20_000) -> dict[str, Any]:
    """Every (position, case) of one single-layer head: the certified worst BOS mass and witness."""
    heads.check_kind(net.kind)
    start = time.perf_counter()
    h = heads.head_maps(net, layer, head)
    replayer = Replayer(net, layer, head)
    rows = [certify_query(net, h, L, i, case, max_nodes=max_nodes, replayer=replayer) for i, case in cases(L)]
    nontrigger = [r for r in rows if r.case != "trigger"]
    return {
        "kind": net.kind, "d": net.d, "L": L,
        "queries": [asdict(r) for r in rows],
        "min_bos_nontrigger": min(r.certified for r in nontrigger),
        "min_bos_before": min((r.certified for r in rows if r.case == "before"), default=None),
        "min_bos_after": min((r.certified for r in rows if r.case == "after"), default=None),
        "max_bos_trigger": max(r.certified for r in rows if r.case == "trigger"),
        "all_exact": all(r.exact for r in rows),
        "largest_gap": max(r.gap for r in rows),
        "seconds": time.perf_counter() - start,
    }
