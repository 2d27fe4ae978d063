"""Attention kinds as data: one registry used by the exact evaluator, the z3 encodings and the
torch model.

A kind maps one query's scores over the keys it sees to attention weights. It has two forms
that must agree (a test holds them equal):

- ``exact(scores, i, ops, extras)``: scalar form on a Python list ``scores[0..i]`` for query
  ``i``, over a numeric backend ``ops`` (fractions, sympy, z3, floats, mpmath). A backend that
  cannot represent an operation raises ``NotExpressible``; nothing is approximated silently.
- ``torch(scores, mask, extras)``: batched form on ``scores`` [..., H, L, L] (queries x keys)
  with a causal ``mask`` [L, L] (True where key <= query).

``params`` lists extra per-head parameters a kind needs beyond W_Q, W_K, W_V, W_O:
a ``"scalar"`` (one number per head, e.g. a sink logit) or a ``"vector"`` (a d-vector w per
head; the kind receives the query's projection ``w . x_i``, e.g. a gate). Adding a kind is one
``register(AttentionKind(...))`` call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .errors import BadInput, NotExpressible
from .numbers import exact_div


# ----------------------------------------------------------------------------------------
# Numeric backends for the exact evaluator.


def _not_expressible(backend: str, op: str) -> Callable[[Any], Any]:
    def fail(_x: Any) -> Any:
        raise NotExpressible(f"{op} is not expressible in the {backend} backend")

    return fail


@dataclass(frozen=True)
class Ops:
    """Scalar operations of one numeric backend."""

    name: str
    zero: Any
    one: Any
    exp: Callable[[Any], Any]
    relu: Callable[[Any], Any]
    sigmoid: Callable[[Any], Any]


def _fraction_ops() -> Ops:
    from fractions import Fraction

    return Ops(
        "fraction", Fraction(0), Fraction(1),
        exp=_not_expressible("fraction", "exp"),
        relu=lambda x: x if x > 0 else Fraction(0),
        sigmoid=_not_expressible("fraction", "sigmoid"),
    )


def _sympy_ops() -> Ops:
    import sympy

    return Ops(
        "sympy", sympy.Integer(0), sympy.Integer(1),
        exp=sympy.exp,
        relu=lambda x: sympy.Max(0, x),
        sigmoid=lambda x: 1 / (1 + sympy.exp(-x)),
    )


def _z3_ops() -> Ops:
    import z3

    return Ops(
        "z3", z3.RealVal(0), z3.RealVal(1),
        exp=_not_expressible("z3", "exp"),
        relu=lambda x: z3.If(x > 0, x, z3.RealVal(0)),
        sigmoid=_not_expressible("z3", "sigmoid"),
    )


def _float_ops() -> Ops:
    return Ops(
        "float", 0.0, 1.0,
        exp=math.exp,
        relu=lambda x: x if x > 0 else 0.0,
        sigmoid=lambda x: 1.0 / (1.0 + math.exp(-x)),
    )


def _mpmath_ops() -> Ops:
    import mpmath

    return Ops(
        "mpmath", mpmath.mpf(0), mpmath.mpf(1),
        exp=mpmath.exp,
        relu=lambda x: x if x > 0 else mpmath.mpf(0),
        sigmoid=lambda x: 1 / (1 + mpmath.exp(-x)),
    )


_BACKENDS: dict[str, Callable[[], Ops]] = {
    "fraction": _fraction_ops,
    "sympy": _sympy_ops,
    "z3": _z3_ops,
    "float": _float_ops,
    "mpmath": _mpmath_ops,
}
BACKENDS = tuple(_BACKENDS)


def ops(backend: str) -> Ops:
    """The scalar operations of a backend by name."""
    try:
        return _BACKENDS[backend]()
    except KeyError:
        raise BadInput(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}") from None


# ----------------------------------------------------------------------------------------
# The registry.


@dataclass(frozen=True)
class KindParam:
    """An extra per-head parameter: ``shape`` is "scalar" or "vector" (length d)."""

    name: str
    shape: str
    init: float = 0.0  # initial value of a scalar, or of every entry of a vector


@dataclass(frozen=True)
class AttentionKind:
    name: str
    exact: Callable[[Sequence[Any], int, Ops, Mapping[str, Any]], list[Any]]
    torch: Callable[..., Any]
    normalised: bool  # rows sum to one on every input
    can_abstain: bool  # a row can put (almost) nothing anywhere
    prediction: str  # one line: is a sink necessary, and why
    params: tuple[KindParam, ...] = field(default=())


_REGISTRY: dict[str, AttentionKind] = {}


def register(kind: AttentionKind) -> AttentionKind:
    if kind.name in _REGISTRY:
        raise ValueError(f"attention kind {kind.name!r} registered twice")
    _REGISTRY[kind.name] = kind
    return kind


def get(name: str) -> AttentionKind:
    """The kind called ``name``; an unknown name is bad input listing the valid ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise BadInput(f"unknown attention kind {name!r}; valid: {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def relu_divisor(i: int) -> int:
    """ReLU rows divide by the number of non-BOS keys a query sees: max(i, 1)."""
    return max(i, 1)


# ---- softmax ---------------------------------------------------------------------------


def _softmax_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    # Shift by the BOS score: softmax is shift-invariant, and exp(0) = 1 keeps sympy tidy.
    e = [ops.exp(s - scores[0]) for s in scores]
    z = sum(e[1:], e[0])
    return [v / z for v in e]


def _softmax_torch(scores, mask, extras):
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)


register(AttentionKind(
    name="softmax",
    exact=_softmax_exact,
    torch=_softmax_torch,
    normalised=True,
    can_abstain=False,
    prediction="sink needed: rows sum to one, so 'output nothing' must park mass on a content-free key (BOS)",
))


# ---- relu ------------------------------------------------------------------------------


def _relu_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    return [exact_div(ops.relu(s), relu_divisor(i)) for s in scores]


def _relu_torch(scores, mask, extras):
    import torch

    L = scores.shape[-1]
    divisor = torch.arange(L, device=scores.device, dtype=scores.dtype).clamp(min=1).unsqueeze(-1)  # [L, 1]
    return torch.relu(scores) * mask / divisor


register(AttentionKind(
    name="relu",
    exact=_relu_exact,
    torch=_relu_torch,
    normalised=False,
    can_abstain=True,
    prediction="no sink needed: a row may be all zero, so 'output nothing' needs no key at all",
))
