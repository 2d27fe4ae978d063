"""eta_lo: an input whose max-abs error is certainly large, found by a float search over typed
inputs and replayed exactly, at any d and L.

A head has no positional encoding, so at a query only the multiset of tokens it sees matters.
The search works on *typed* inputs: the query (its own content c), ``m_hi`` keys of one content
x_hi, ``m_lo`` keys of another x_lo and, after the trigger, the trigger token with content x_t.
Every (query position, case, m_hi) gets a few starts at vertices of the content box (random,
score-maximising and value-pushing sign patterns); from each, a greedy ascent flips one content
sign at a time (all 4n flips of a start evaluated at once, incrementally: O(d) per flip) while
the max-abs error at that query grows. For eta_lo the best input is then kicked: the ascent
restarts at its own content and at each single flip of it, with its keys and with fresh key starts,
for every split of its query's keys, and again from the new best while that improves (``KICKS``
rounds at most): the first pass gives each (query, split) a few key starts only, and a greedy
ascent cannot leave a vertex whose better neighbours need the query's content and the keys to
move together. The best typed inputs are laid out as sequences and replayed exactly:
scores and value images in exact integer arithmetic, the kind's weights in Arb balls
(``Replayer.error``), so the replayed error's lower end is eta_lo.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from constructions import attention, reference, task

from ..arithmetic import heads, replay

ROUNDS = 12  # greedy flip rounds per start
RANDOM_STARTS = 4  # random vertex starts per configuration
REPLAYED = 4  # best typed inputs replayed exactly
CLIMBED = 64  # configurations whose starts are improved by the greedy ascent
KICKS = 3  # rounds of restarts at the best input's own content and its single flips (eta_lo's search)


@dataclass
class Typed:
    """One typed input at query ``i``: counts and contents (each [n], entries +-1)."""

    i: int
    case: str  # "trigger", "before", "after"
    m_hi: int
    m_lo: int
    c: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    trig: np.ndarray  # the trigger token's content ("after" only)
    error: float = 0.0

    def sequence(self, L: int) -> tuple[list[list[Fraction]], int]:
        """The input laid out: (X exact, trigger position)."""
        n = len(self.c)
        zero = [Fraction(0)] * n
        contents = [list(zero) for _ in range(L - 1)]
        keys = [self.hi] * self.m_hi + [self.lo] * self.m_lo
        if self.case == "after":
            j, slots = 2, [1] + list(range(3, self.i))
            contents[1] = heads.exact_vector(self.trig)
        else:
            j = self.i if self.case == "trigger" else self.i + 1
            slots = list(range(1, self.i))
        for pos, key in zip(slots, keys):
            contents[pos - 1] = heads.exact_vector(key)
        contents[self.i - 1] = heads.exact_vector(self.c)
        return task.make_sequence(contents, j), j


def _token(d: int, flag: int, content: np.ndarray) -> np.ndarray:
    """Token vectors [..., d] with ``flag`` and content [..., n]."""
    x = np.zeros(content.shape[:-1] + (d,))
    x[..., flag] = 1
    x[..., task.CONTENT_START:d - 1] = content
    return x


TYPES = ("bos", "hi", "lo", "trig", "own")  # token types of a typed input, in this order


class TypedSearch:
    """Greedy sign-flip ascent on typed inputs of one head (float64, search only), for a batch of
    starts of one configuration at once; each flip is evaluated incrementally in O(d)."""

    def __init__(self, h: heads.Head):
        self.h, self.M, self.V, self.d, self.n = h, h.M, h.V, h.d, h.n
        self.C = np.arange(task.CONTENT_START, h.d - 1)
        self.content, self.trigger = task.content_flag(h.d), task.TRIGGER_FLAG

    def _flags(self, case: str) -> list[int]:
        return [task.BOS_FLAG, self.content, self.content, self.trigger,
                self.trigger if case == "trigger" else self.content]

    def _counts(self, t: Typed) -> np.ndarray:
        return np.array([1, t.m_hi, t.m_lo, 1 if t.case == "after" else 0, 1], float)

    def tokens(self, case: str, c, hi, lo, trig) -> np.ndarray:
        """[S, 5, d] token vectors (BOS, hi, lo, trigger, own) from contents [S, n]."""
        S = c.shape[0]
        x = np.zeros((S, 5, self.d))
        for k, (flag, content) in enumerate(zip(self._flags(case), (None, hi, lo, trig, c))):
            x[:, k, flag] = 1
            if content is not None:
                x[:, k, task.CONTENT_START:self.d - 1] = content
        return x

    def _out(self, t: Typed, scores, values, x) -> np.ndarray:
        """Max-abs error [...] from scores [..., 5], values [..., 5, d], tokens [..., 5, d]."""
        if self.h.kind == "softmax":
            w = np.exp(scores - scores.max(axis=-1, keepdims=True))
        else:
            w = 1 / (1 + np.exp(-scores))
        w = w * self._counts(t)
        out = np.einsum("...t,...td->...d", w, values) / w.sum(axis=-1)[..., None]
        if t.case == "trigger":
            out = out - np.einsum("t,...td->...d", self._counts(t) * (np.arange(5) > 0), x) / t.i
        return np.abs(out).max(axis=-1)

    def evaluate(self, t: Typed, x: np.ndarray) -> np.ndarray:
        g = x[:, 4] @ self.M  # [S, d]: the query's score row
        scores = np.einsum("sd,std->st", g, x)
        return self._out(t, scores, x @ self.V.T, x)

    def climb(self, t: Typed, c, hi, lo, trig, rounds: int = ROUNDS) -> tuple[float, tuple]:
        """Greedy ascent from S starts (contents [S, n] each); the best end point."""
        M, V, C, n = self.M, self.V, self.C, self.n
        contents = [c.copy(), hi.copy(), lo.copy(), trig.copy()]  # own, hi, lo, trig
        movable = [4, 1, 2] + ([3] if t.case == "after" else [])  # token slots that may flip
        slot_of = {4: 0, 1: 1, 2: 2, 3: 3}
        current = None
        for _ in range(rounds):
            x = self.tokens(t.case, *contents)  # [S, 5, d]
            g = x[:, 4] @ M
            scores = np.einsum("sd,std->st", g, x)
            values = x @ V.T
            if current is None:
                current = self._out(t, scores, values, x)
            best_e, best_move = current.copy(), np.full(len(c), -1)
            for slot in movable:
                delta = -2 * contents[slot_of[slot]]  # [S, n]: the change of each flip
                sc = np.repeat(scores[:, None, :], n, axis=1)  # [S, n, 5]
                if slot == 4:  # the query's own content: every score moves
                    rows = M[C, :]  # [n, d]
                    sc += delta[..., None] * np.einsum("kd,std->skt", rows, x)
                    sc[..., 4] += delta * np.einsum("kd,sd->sk", M[:, C].T, x[:, 4]) + delta ** 2 * np.diag(M)[C]
                else:
                    sc[..., slot] += delta * g[:, C]
                vals = np.repeat(values[:, None], n, axis=1)  # [S, n, 5, d]
                vals[:, :, slot] += delta[..., None] * V[:, C].T[None]
                xs = np.repeat(x[:, None], n, axis=1)
                xs[:, np.arange(n), slot, C] += delta
                e = self._out(t, sc, vals, xs)  # [S, n]
                k = e.argmax(axis=1)
                better = e[np.arange(len(c)), k] > best_e * (1 + 1e-12)
                best_e = np.where(better, e[np.arange(len(c)), k], best_e)
                best_move = np.where(better, slot * n + k, best_move)
            if (best_move < 0).all():
                break
            for s_, move in enumerate(best_move):
                if move >= 0:
                    contents[slot_of[move // n]][s_, move % n] *= -1
            current = best_e
        k = int(np.argmax(current))
        return float(current[k]), tuple(v[k].copy() for v in contents)


def _configs(L: int, case: str, i: int) -> list[tuple[int, int]]:
    """(m_hi, m_lo) splits of the query's other content keys: all one type, half / half, one odd."""
    keys = i - 1 if case != "after" else i - 2
    splits = {(keys, 0), (0, keys), (keys // 2, keys - keys // 2), (1, keys - 1) if keys >= 1 else (0, 0)}
    return sorted(splits)


def _starts(search: TypedSearch, case: str, i: int, rng, random: int) -> list[tuple[np.ndarray, ...]]:
    """Vertex starts (c, hi, lo, trig): random, and per output coordinate r the pattern that pushes
    coordinate r (sign of V_r - e_r on the content block), and score-extreme keys for a random c."""
    n, V, C = search.n, search.V, search.C
    out = [tuple(rng.choice([-1.0, 1.0], size=n) for _ in range(4)) for _ in range(random)]
    for r in rng.choice(search.d, size=min(search.d, 4), replace=False):
        row = V[r, C] - (C == r)
        for sign in (1.0, -1.0):
            p = np.where(sign * row >= 0, 1.0, -1.0)
            out.append((p, p, -p, p))
    c = rng.choice([-1.0, 1.0], size=n)
    flag = search.trigger if case == "trigger" else search.content
    g = _token(search.d, flag, c) @ search.M
    up = np.where(g[C] >= 0, 1.0, -1.0)
    out.append((c, up, -up, up))
    return out


def _kick(s: TypedSearch, best: Typed, L: int, rng) -> list[Typed]:
    """One climb per split of ``best``'s query keys, from its own content and every single flip of
    it, each with ``best``'s keys and with fresh key starts (batched)."""
    n = len(best.c)
    owns = np.vstack([best.c, best.c[None] * (1 - 2 * np.eye(n))])  # [n + 1, n]: c, then c with coordinate a flipped
    out = []
    for m_hi, m_lo in _configs(L, best.case, best.i):
        t = Typed(best.i, best.case, m_hi, m_lo, *(np.zeros(n),) * 4)
        keys = [(best.hi, best.lo, best.trig)] + [v[1:] for v in _starts(s, best.case, best.i, rng, RANDOM_STARTS)]
        hi, lo, trig = (np.repeat(np.array([k[i] for k in keys]), n + 1, axis=0) for i in range(3))
        t.error, (t.c, t.hi, t.lo, t.trig) = s.climb(t, np.tile(owns, (len(keys), 1)), hi, lo, trig)
        out.append(t)
    return out


def search(h: heads.Head, L: int, seed: int = 0, random: int = RANDOM_STARTS, configs: int = CLIMBED,
           kicks: int = 0) -> list[Typed]:
    """The best typed inputs found, best first: every start of every (query, case, split) is
    evaluated, then all starts of the ``configs`` configurations whose best start is largest are
    improved by the greedy ascent (batched); then up to ``kicks`` rounds of ``_kick`` from the best
    while it improves (0 for the fine-tuning's witness batches, ``KICKS`` for eta_lo)."""
    from .sink import cases

    s = TypedSearch(h)
    rng = np.random.default_rng(seed)
    pool = []
    for i, case in cases(L):
        for m_hi, m_lo in _configs(L, case, i):
            t = Typed(i, case, m_hi, m_lo, *(np.zeros(h.n),) * 4)
            starts = [np.array(v) for v in zip(*_starts(s, case, i, rng, random))]  # 4 x [S, n]
            e = s.evaluate(t, s.tokens(case, *starts))
            k = int(np.argmax(e))
            pool.append((float(e[k]), t, starts))
    pool.sort(key=lambda p: -p[0])
    found = []
    for e0, t, starts in pool[:configs]:
        t.error, (t.c, t.hi, t.lo, t.trig) = s.climb(t, *starts)
        found.append(t)
    found.sort(key=lambda t: -t.error)
    for _ in range(kicks):
        top = found[0]
        found = sorted(found + _kick(s, top, L, rng), key=lambda t: -t.error)
        if found[0].error <= top.error * (1 + 1e-12):
            break
    return found


def eta_lower(net: reference.Network, h: heads.Head, L: int, seed: int = 0, replayed: int = REPLAYED,
              found: list[Typed] | None = None) -> dict[str, Any]:
    """The best typed witnesses replayed exactly: eta_lo is the largest lower end (``found``: this
    search's result, if run already)."""
    from .sink import Replayer

    best = found if found is not None else search(h, L, seed, kicks=KICKS)
    rep = Replayer(net)
    out = None
    for t in best[:replayed]:
        X, j = t.sequence(L)
        err, r = rep.error(X, t.i, j, h)
        low = replay.down(err)
        if out is None or low > out["eta_lo"]:
            out = {"eta_lo": low, "float_search": t.error, "trigger": j, "position": t.i, "coordinate": r,
                   "case": t.case, "keys": [t.m_hi, t.m_lo],
                   "contents": [[float(v) for v in row[task.CONTENT_START:h.d - 1]] for row in X[1:]]}
    return out
