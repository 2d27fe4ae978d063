"""Witness inputs replayed through the exact evaluator (``constructions.reference``) in Arb ball
arithmetic (``constructions.balls``): every weight and input is an exact rational enclosed by a
ball, exp / sigmoid are Arb's rigorous functions, so each replayed figure is a ball that
certainly contains the true value at that input. Floats leave a ball only through ``down`` /
``up`` (its ends rounded outward); nothing is widened by hand."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from constructions import attention, balls, reference

from .heads import exact


def iv_number(v: Any):
    """``v`` (its exact rational value) as a ball."""
    return balls.ball(exact(v))


def _iv_matrix(M):
    return tuple(tuple(iv_number(v) for v in row) for row in M)


def iv_network(net: reference.Network) -> reference.Network:
    layers = tuple(reference.Layer(tuple(map(_iv_matrix, L.W_Q)), tuple(map(_iv_matrix, L.W_K)),
                                   tuple(map(_iv_matrix, L.W_V)), _iv_matrix(L.W_O),
                                   tuple({k: (tuple(map(iv_number, v)) if isinstance(v, (list, tuple)) else iv_number(v))
                                          for k, v in e.items()} for e in L.extras))
                   for L in net.layers)
    return reference.Network(net.kind, layers, net.residual)


def replay(net: reference.Network, X: Sequence[Sequence[Any]], ivnet: reference.Network | None = None):
    """(outputs, patterns) of ``net`` on the exact sequence ``X``, as balls (Arb's working
    precision at least ``balls.WORK_BITS`` bits)."""
    with balls.precision():
        rows = [[iv_number(v) for v in row] for row in X]
        return reference.forward(ivnet or iv_network(net), rows, attention.ops("interval"))


def down(x) -> float:
    """The largest float <= the ball ``x`` (its lower end rounded toward -inf; ``balls.down``)."""
    return balls.down(x)


def up(x) -> float:
    """The smallest float >= the ball ``x`` (its upper end rounded toward +inf)."""
    return balls.up(x)


def weight_ends(kind: str, e_lo: float, e_hi: float) -> tuple[float, float]:
    """Floats enclosing the unnormalised weights w(e) for e in [e_lo, e_hi]: exp (softmax) or
    sigmoid (sigmoid_norm), both increasing, each end a ball's end rounded outward; a weight is
    >= 0."""
    w = balls.exp if kind == "softmax" else balls.sigmoid
    with balls.precision():
        return max(0.0, balls.down(w(e_lo))), balls.up(w(e_hi))


def to_fractions(values) -> list[Fraction]:
    return [exact(float(v)) for v in values]
