"""A single head's BOS mass as a function of its query's content: the structure the certificates use.

Scores are bilinear: s_ik = x_i^T M x_k with M = W_Q^T W_K (d x d, M[query feature, key
feature]). A token is x(c) = e_f + P c: its flag f (BOS 0, trigger 1, content d-1) plus its
content c in the box [-1, 1]^n, n = d - 3, placed on coordinates 2..d-2 (constructions/SPEC.md section 1).

Query at position i with flag f and content c. Write g(c) = M^T x(c) (a d-vector, affine in c).
Then the score of key k is g(c) . x_k and, for softmax,

    a_i0 = 1 / (1 + sum_{k=1..i} exp(s_ik - s_i0)),   s_i0 = g_0(c)    (BOS is fixed).

For fixed c every key other than the query itself varies independently in its own box, so each
term is maximised on its own, in closed form: max over c_k in [-1, 1]^n of g(c) . x(c_k) is
g_{flag_k}(c) + ||g_C(c)||_1 (the support function of the box; attained at c_k = sign g_C(c)),
and its minimum is g_{flag_k}(c) - ||g_C(c)||_1. The query's own key is x(c) itself:
x(c)^T M x(c), a quadratic in c. So the worst case over ALL inputs reduces to the query's
content alone, through exponent functions of the form

    E(c) = a + p . c + c^T S c + s * ||b + K c||_1,      s in {-1, 0, +1},

with b_r = M[f, C_r], K[r, k] = M[C_k, C_r] (C_k = 2 + k, the k-th content coordinate) shared by
every key of one query (``Exponent``; ``query_terms`` builds them; ``tests/test_certify.py``
checks the closed form against sampled and enumerated keys).

Exact inputs: the weights are Fractions (a float is a dyadic rational), M and V = W_O W_V are
formed exactly and only then rounded to float64; the rounding and every later float operation
are covered by ``slack`` (a-priori bound gamma_N * magnitude, Higham, Accuracy and Stability of
Numerical Algorithms, Thm 3.1 / Lemma 3.1, with a factor 64 of room).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from constructions import reference, task
from constructions.errors import BadInput

UNIT_ROUNDOFF = 2.0 ** -53
KINDS = ("softmax", "sigmoid_norm")  # normalised kinds: rows on the simplex


def exact(v: Any) -> Fraction:
    """A weight as an exact Fraction (floats are dyadic rationals); NaN / inf are bad input."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, bool):
        raise BadInput(f"weight {v!r} is not a number")
    try:
        return Fraction(v)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(f"weight {v!r} is not a finite number") from None


def _exact_matrix(rows: Sequence[Sequence[Any]]) -> list[list[Fraction]]:
    return [[exact(v) for v in row] for row in rows]


@dataclass(frozen=True)
class Head:
    """One head of one layer: its score form M and value map V, exact and as float64.

    ``M_int`` / ``V_int`` hold the same exact numbers as integer matrices over one denominator
    (``exact.IntMatrix``), which is what the exact exponent coefficients and witness replays
    use; ``M`` / ``V`` are every entry correctly rounded, computed once."""

    kind: str
    d: int
    M_exact: tuple[tuple[Fraction, ...], ...]
    V_exact: tuple[tuple[Fraction, ...], ...]
    M_int: Any = field(default=None, compare=False, repr=False)
    V_int: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        from .exact import IntMatrix

        if self.M_int is None:
            object.__setattr__(self, "M_int", IntMatrix.of(self.M_exact))
        if self.V_int is None:
            object.__setattr__(self, "V_int", IntMatrix.of(self.V_exact))

    @property
    def n(self) -> int:
        return self.d - 3

    @cached_property
    def M(self) -> np.ndarray:
        return self.M_int.floats()

    @cached_property
    def V(self) -> np.ndarray:
        return self.V_int.floats()


def head_maps(net: reference.Network, layer: int = 0, head: int = 0) -> Head:
    """M = W_Q^T W_K and V = W_O[:, block h] W_V of head ``head`` of layer ``layer``, exactly
    (integer products over common denominators, ``exact.IntMatrix``)."""
    from .exact import IntMatrix

    L = net.layers[layer]
    d = net.d
    WQ, WK, WV = (IntMatrix.of(_exact_matrix(getattr(L, name)[head])) for name in ("W_Q", "W_K", "W_V"))
    WO = IntMatrix.of([[exact(v) for v in row[head * d:(head + 1) * d]] for row in L.W_O])
    M, V = WQ.transpose().matmul(WK), WO.matmul(WV)
    return Head(net.kind, d, M.fractions(), V.fractions(), M, V)


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise BadInput(f"certification needs attention rows on the simplex (kinds {', '.join(KINDS)}); "
                       f"got {kind!r}")


# ----------------------------------------------------------------------------------------
# Exponent functions of the query content.


@dataclass(frozen=True)
class Exponent:
    """E(c) = a + p . c + c^T S c + s * sum_r w_r |b_r + K_r c| (S symmetric; b, K shared per
    query; the weights w >= 0 are all 1 for the task's content box, a key's radii in a stack)."""

    a: float
    p: np.ndarray  # [n]
    S: np.ndarray  # [n, n] symmetric
    s: int  # -1, 0 or +1
    b: np.ndarray  # [R]
    K: np.ndarray  # [R, n]: K[r, k]
    w: np.ndarray | None = None  # [R], None: all ones
    exact: bool = False  # every coefficient is the correctly rounded value of an exact rational

    @property
    def weights(self) -> np.ndarray:
        return np.ones(len(self.b)) if self.w is None else self.w

    def magnitude(self) -> float:
        """An upper bound on |every partial sum| met while evaluating E on [-1, 1]^n."""
        return float(abs(self.a) + np.abs(self.p).sum() + np.abs(self.S).sum()
                     + abs(self.s) * (self.weights @ (np.abs(self.b) + np.abs(self.K).sum(axis=1))))

    def _memo(self, name: str, compute):
        """A derived value kept on the instance: an Exponent is never changed once built (frozen,
        its arrays only read), and the branch and bound asks for the same ones of the same
        exponents hundreds of thousands of times (a 4 x 4 stack: 700,000 ``slack`` calls)."""
        cache = self.__dict__.setdefault("_derived", {})
        if name not in cache:
            cache[name] = compute()
        return cache[name]

    def abs_parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """|S|, |S| off its diagonal, max(diag S, 0) and |K|, as ``branch.exponent_upper`` uses them."""
        def compute():
            absS = np.abs(self.S)
            return absS, absS - np.diag(np.diag(absS)), np.maximum(np.diag(self.S), 0), np.abs(self.K)
        return self._memo("abs_parts", compute)

    def slack(self) -> float:
        return self._memo("slack", self._slack)

    def _slack(self) -> float:
        """Rounding allowance for float64 bounds of E (and of its partial derivatives) on a box
        inside [-1, 1]^n, computed by ``branch.exponent_upper``.

        Exact coefficients (``exact``, built by ``score_exponent`` from a ``Head``): each is the
        correctly rounded value of an exact rational, so the coefficients are off by at most
        u * magnitude in all (|c| <= 1 on the box), and every bound is a sum of at most
        N = (n + 3)^2 + 16 rounded products and additions whose absolute values sum to at most
        4 * magnitude (the value at the centre, the gradient times the radii, the remainder, the
        chords); Higham's gamma_N = N u / (1 - N u) bounds each such sum's error relative to its
        absolute terms (Accuracy and Stability of Numerical Algorithms, Lemma 3.1 and Thm 3.1, any
        order of summation). So 8 gamma_N (magnitude + 1) covers both with room. The chords'
        slopes l0 / rho are rounded too: a chord through the rounded ends still passes through the
        left end exactly and misses the right one by 2 rho u at most (inside the same budget).

        Coefficients formed in float from other floats (a stack's boxes): 64 gamma_N with
        N = 4 (n + 3)^2 + 16, as before, which also covers their formation."""
        n3 = (len(self.p) + 3) ** 2
        if self.exact:
            N = n3 + 16
            return 8 * N * UNIT_ROUNDOFF / (1 - N * UNIT_ROUNDOFF) * (self.magnitude() + 1)
        N = 4 * n3 + 16
        return 64 * N * UNIT_ROUNDOFF * (self.magnitude() + 1)

    def negated(self) -> "Exponent":
        return self._memo("negated", lambda: Exponent(-self.a, -self.p, -self.S, -self.s, self.b, self.K, self.w,
                                                      self.exact))

    def value(self, c: np.ndarray) -> np.ndarray:
        """E at points c [N, n] (float64)."""
        quad = np.einsum("ni,ij,nj->n", c, self.S, c)
        return self.a + c @ self.p + quad + self.s * np.abs(self.b + c @ self.K.T) @ self.weights


def _content(d: int) -> list[int]:
    return list(range(task.CONTENT_START, d - 1))


def score_exponent(M, f: int, key_flag: int | None, s: int, relative_to_bos: bool = True,
                   relative_to: int | None = None) -> Exponent:
    """Exponent of a key's score (minus the BOS score when ``relative_to_bos``) for a query with
    flag ``f``: ``key_flag`` None is the query's own key; otherwise a key of that flag whose content
    is chosen to maximise (s = +1) or minimise (s = -1) the score. ``relative_to`` subtracts the
    score of another flag's content-free part instead of BOS's (softmax is shift-invariant).

    ``M`` is a ``Head`` (coefficients formed exactly, then rounded once: ``Exponent.exact``) or a
    float matrix (coefficients formed in float)."""
    if isinstance(M, Head):
        return _exact_score_exponent(M, f, key_flag, s, relative_to_bos, relative_to)
    d = M.shape[0]
    C = _content(d)
    b = M[f, C].copy()
    K = M[np.ix_(C, C)].T.copy()  # K[r, k] = M[C_k, C_r]
    ref = relative_to if relative_to is not None else (task.BOS_FLAG if relative_to_bos else None)
    a0 = M[f, ref] if ref is not None else 0.0
    p0 = M[C, ref] if ref is not None else np.zeros(len(C))
    if key_flag is None:
        S = (M[np.ix_(C, C)] + M[np.ix_(C, C)].T) / 2
        return Exponent(M[f, f] - a0, M[f, C] + M[C, f] - p0, S, 0, b, K)
    return Exponent(M[f, key_flag] - a0, M[C, key_flag] - p0, np.zeros((len(C), len(C))), s, b, K)


def _rounded(num, den: int) -> np.ndarray:
    """Integers (nested lists) over ``den``, each correctly rounded to float64."""
    arr = np.array(num, dtype=object)
    return np.array([v / den for v in arr.ravel()], dtype=float).reshape(arr.shape)


def _exact_score_exponent(h: Head, f: int, key_flag: int | None, s: int, relative_to_bos: bool,
                          relative_to: int | None) -> Exponent:
    """``score_exponent`` with every coefficient formed in exact integers over M's denominator
    and rounded once (so ``Exponent.slack`` may use its exact-coefficient allowance)."""
    N, den, d = h.M_int.N, h.M_int.den, h.d
    C = _content(d)
    ref = relative_to if relative_to is not None else (task.BOS_FLAG if relative_to_bos else None)
    a0 = N[f][ref] if ref is not None else 0
    p0 = [N[c][ref] if ref is not None else 0 for c in C]
    b = _rounded([N[f][c] for c in C], den)
    K = _rounded([[N[k][r] for k in C] for r in C], den)  # K[r, k] = M[C_k, C_r]
    n = len(C)
    if key_flag is None:
        S = _rounded([[N[i][k] + N[k][i] for k in C] for i in C], 2 * den)
        p = _rounded([N[f][c] + N[c][f] - q for c, q in zip(C, p0)], den)
        return Exponent(_rounded([N[f][f] - a0], den)[0], p, S, 0, b, K, exact=True)
    p = _rounded([N[c][key_flag] - q for c, q in zip(C, p0)], den)
    return Exponent(_rounded([N[f][key_flag] - a0], den)[0], p, np.zeros((n, n)), s, b, K, exact=True)


def bos_exponent(M, f: int) -> Exponent:
    """The BOS score g_0(c) itself (affine); ``M`` a ``Head`` (exact coefficients) or a float matrix."""
    exact_coefficients = isinstance(M, Head)
    if exact_coefficients:
        M = M.M  # every entry correctly rounded from the exact product: exact coefficients
    d = M.shape[0]
    C = _content(d)
    n = len(C)
    return Exponent(M[f, task.BOS_FLAG], M[C, task.BOS_FLAG].copy(), np.zeros((n, n)), 0, np.zeros(n), np.zeros((n, n)),
                    exact=exact_coefficients)


def key_argmax(M: np.ndarray, f: int, c: np.ndarray, s: int) -> np.ndarray:
    """The content of a key that maximises (s = +1) or minimises (s = -1) its score against the
    query (flag f, content c): s * sign(g_C(c)) (ties to +s)."""
    d = M.shape[0]
    C = _content(d)
    g = M[f, C] + M[np.ix_(C, C)].T @ c
    return np.where(g >= 0, float(s), float(-s))


def exact_vector(values) -> list[Fraction]:
    """A float vector as exact Fractions (the witness inputs are exactly these numbers)."""
    return [exact(float(v)) for v in values]
