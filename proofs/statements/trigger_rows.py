"""The trigger rows on equal-content sequences, built from the project's definitions.

Shared by the T1 lemmas (``content_flag_lower_bound``, ``trigger_row_ratio_bound``,
``flag_sum_lower_bound``). On a sequence whose content tokens and trigger all carry the same
content c, with the trigger at j, the trigger query sees BOS, j - 1 copies of the content token
and itself. Token consistency (same query and key vectors give the same score) leaves three
scores; we write them log A, log B, log C with A, B, C > 0 (the unnormalised weights of BOS,
each content key and the trigger key) and take the weights from the registry's softmax kind.
Along a fixed output coordinate the value images are h_b (BOS), h_t (content token), h_r
(trigger); the target coordinate comes from ``constructions.task.target``.
"""

from __future__ import annotations

from functools import lru_cache

import sympy

from constructions import attention, task

A, B, C = sympy.symbols("A B C", positive=True)
eta = sympy.Symbol("eta", nonnegative=True)
D = 4  # any d >= 4 gives the same rows: the proof uses coordinates 1 and d-1 only


@lru_cache(maxsize=None)
def trigger_row(j: int) -> list[sympy.Expr]:
    """Registry softmax weights at the trigger query j on an equal-content sequence."""
    scores = [sympy.log(A)] + [sympy.log(B)] * (j - 1) + [sympy.log(C)]
    row = attention.get("softmax").exact(scores, j, attention.ops("sympy"), {})
    return tuple(sympy.simplify(w) for w in row)


@lru_cache(maxsize=None)
def target_coordinate(j: int, coordinate: int, L: int = 5) -> sympy.Expr:
    """The task's target at the trigger j, on one coordinate, for equal content c."""
    c = [sympy.Symbol("c", real=True)] * (D - 3)
    X = task.make_sequence([c] * (L - 1), j, sympy.Integer(0), sympy.Integer(1))
    return sympy.nsimplify(task.target(X, j)[j][coordinate])


def deviation(j: int, coordinate: int, images: tuple[sympy.Expr, sympy.Expr, sympy.Expr]) -> sympy.Expr:
    """delta_j: output minus target at the trigger j on ``coordinate``, for value images
    (BOS, content, trigger) along that coordinate."""
    hb, ht, hr = images
    row = trigger_row(j)
    out = row[0] * hb + sum(row[1:j]) * ht + row[j] * hr
    return out - target_coordinate(j, coordinate)


@lru_cache(maxsize=None)
def rho() -> sympy.Expr:
    """Z_2 / B = (A + B + C)/B: one over the content key's weight at j = 2."""
    return sympy.simplify(1 / trigger_row(2)[1])


def images(name: str) -> tuple[sympy.Symbol, sympy.Symbol, sympy.Symbol]:
    return tuple(sympy.Symbol(f"{name}_{k}", real=True) for k in ("b", "t", "r"))


CONTENT_FLAG = task.content_flag(D)
TRIGGER_FLAG = task.TRIGGER_FLAG
