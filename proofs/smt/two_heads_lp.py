"""Question (a') on finite instances, numerically: two heads' type-level weights, an LP for the values.

A head without positional encoding sees a finite instance only through token types, so two heads
are two tables of unnormalised weights w[h][query type][key type] (BOS's fixed to 1) and two tables
of value images. For fixed weights every output is linear in the images, so the least max-abs
error over all images is a linear program (``min_error``, HiGHS). ``search`` minimises that over the
weights (Nelder-Mead, then Powell; every BOS mass at a query i >= 1 above ``cap`` is penalised).
This is exploration, not a verdict: it finds near-solutions or fails to; nothing here is proved.

Instances: K one-hot content types (d = K + 3), sequences of ``length`` tokens after BOS with
exactly one trigger at positions 2..length, the reference (inclusive) mean. With
``trigger_contents=False`` the trigger carries content 0 (the SMT instances of ``instance.py``);
with True there are K trigger types, the trigger carrying content type k like a content token.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

BOS = 0


@dataclass(frozen=True)
class TypeInstance:
    k: int
    length: int
    trigger_contents: bool

    @property
    def d(self) -> int:
        return self.k + 3

    @property
    def contents(self) -> list[int]:
        return list(range(1, self.k + 1))

    @property
    def triggers(self) -> list[int]:
        return list(range(self.k + 1, 2 * self.k + 1)) if self.trigger_contents else [self.k + 1]

    @property
    def types(self) -> list[int]:
        return [BOS] + self.contents + self.triggers

    def vector(self, t: int) -> np.ndarray:
        """Features of type t: BOS flag 0, trigger flag 1, contents 2..k+1, content flag d-1."""
        v = np.zeros(self.d)
        if t == BOS:
            v[0] = 1
        elif t <= self.k:
            v[1 + t], v[-1] = 1, 1
        else:
            v[1] = 1
            if self.trigger_contents:
                v[1 + t - self.k] = 1
        return v

    def classes(self) -> list[tuple[int, tuple[int, ...], np.ndarray]]:
        """(query type, counts of each non-BOS type among positions 1..i, target) for every prefix."""
        out = {}
        for seq in itertools.product(self.contents + self.triggers, repeat=self.length):
            where = [p for p, t in enumerate(seq, start=1) if t in self.triggers]
            if len(where) != 1 or where[0] < 2:
                continue
            for i in range(1, self.length + 1):
                prefix = seq[:i]
                counts = tuple(prefix.count(t) for t in self.types[1:])
                target = (sum(self.vector(t) for t in prefix) / i if prefix[-1] in self.triggers
                          else np.zeros(self.d))
                out[(prefix[-1], counts)] = target
        return [(q, c, y) for (q, c), y in out.items()]


def _normaliser(W: np.ndarray, h: int, q: int, counts: tuple[int, ...]) -> float:
    return 1.0 + sum(n * W[h, q, t] for t, n in enumerate(counts, start=1))


def bos_masses(inst: TypeInstance, W: np.ndarray) -> np.ndarray:
    """Every head's BOS mass at every class (queries i >= 1, the trigger included)."""
    return np.array([1 / _normaliser(W, h, q, c) for q, c, _ in inst.classes() for h in range(2)])


def min_error(inst: TypeInstance, W: np.ndarray) -> float:
    """The least max-abs error over both heads' value images (every class and coordinate, and the
    BOS query), for the weights W[h][query type][key type]; an LP solved by HiGHS."""
    from scipy.optimize import linprog

    d, types = inst.d, len(inst.types)
    index = lambda h, t, c: (h * types + t) * d + c  # noqa: E731
    n_vars = 2 * types * d + 1  # the images, then the error bound E
    rows, rhs = [], []
    for q, counts, y in inst.classes():
        coef = np.zeros((d, n_vars))
        for h in range(2):
            Z = _normaliser(W, h, q, counts)
            for c in range(d):
                coef[c, index(h, BOS, c)] += 1 / Z
                for t, n in enumerate(counts, start=1):
                    if n:
                        coef[c, index(h, t, c)] += n * W[h, q, t] / Z
        for c in range(d):
            for sign in (1, -1):
                row = sign * coef[c]
                row[-1] = -1
                rows.append(row)
                rhs.append(sign * y[c])
    for c in range(d):  # the BOS query sees only BOS: the two BOS images sum to ~0
        for sign in (1, -1):
            row = np.zeros(n_vars)
            row[index(0, BOS, c)] = row[index(1, BOS, c)] = sign
            row[-1] = -1
            rows.append(row)
            rhs.append(0.0)
    cost = np.zeros(n_vars)
    cost[-1] = 1
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(None, None)] * (n_vars - 1) + [(0, None)],
                  method="highs")
    return float(res.fun) if res.status == 0 else float("inf")


def weights(inst: TypeInstance, x: np.ndarray) -> np.ndarray:
    """W from log-weights x (every query type, every non-BOS key type, both heads)."""
    types = inst.types
    W = np.ones((2, len(types), len(types)))
    queries = inst.contents + inst.triggers
    W[:, queries, 1:] = np.exp(np.clip(np.asarray(x).reshape(2, len(queries), len(types) - 1), -60, 60))
    return W


def parking(inst: TypeInstance, gap: float = 12.0) -> np.ndarray:
    """Log-weights of the trigger-parking pair at type level: at a trigger query head 1 ignores the
    trigger key (-gap), head 2 parks on it (+gap); every other weight 1 (BOS mass 1/2 at query 1)."""
    queries = inst.contents + inst.triggers
    x = np.zeros((2, len(queries), len(inst.types) - 1))
    for h, sign in ((0, -1), (1, 1)):
        for t in inst.triggers:
            x[h, queries.index(t), t - 1] = sign * gap
    return x.ravel()


def refine(inst: TypeInstance, cap: float, x0: np.ndarray, evaluations: int = 4000) -> dict:
    """Minimise ``min_error`` over the weights from log-weights x0 (Nelder-Mead, then Powell), every
    BOS mass above ``cap`` penalised."""
    from scipy.optimize import minimize

    def objective(x):
        W = weights(inst, x)
        return min_error(inst, W) + 10 * np.maximum(0, bos_masses(inst, W) - cap).sum()

    r = minimize(objective, x0, method="Nelder-Mead",
                 options={"maxfev": evaluations, "xatol": 1e-10, "fatol": 1e-12, "adaptive": True})
    r = minimize(objective, r.x, method="Powell", options={"maxfev": 2 * evaluations, "xtol": 1e-10, "ftol": 1e-13})
    W = weights(inst, r.x)
    return {"min_error": min_error(inst, W), "max_bos_mass": float(bos_masses(inst, W).max()), "x": r.x}


def search(inst: TypeInstance, cap: float, seed: int, starts: int, evaluations: int = 4000) -> list[dict]:
    """``refine`` from ``starts`` random points; one dict per start."""
    rng = np.random.default_rng(seed)
    size = 2 * len(inst.contents + inst.triggers) * (len(inst.types) - 1)
    return [refine(inst, cap, rng.normal(0, 2, size), evaluations) for _ in range(starts)]
