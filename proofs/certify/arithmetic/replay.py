"""Witness inputs replayed through the exact evaluator (``constructions.reference``) in mpmath
interval arithmetic: every weight and input is an exact rational enclosed by a point interval,
exp / sigmoid are mpmath's rigorous interval functions, so each replayed figure is an interval
that certainly contains the true value at that input."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from constructions import attention, reference
from constructions.numbers import interval_down, interval_up

from .heads import exact


def iv_number(v: Any):
    from mpmath import iv

    q = exact(v)
    return iv.mpf(q.numerator) / q.denominator


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
    """(outputs, patterns) of ``net`` on the exact sequence ``X``, as mpmath intervals."""
    rows = [[iv_number(v) for v in row] for row in X]
    return reference.forward(ivnet or iv_network(net), rows, attention.ops("interval"))


def down(x) -> float:
    """The largest float <= the interval ``x`` (its lower end rounded toward -inf).

    ``float()`` of an interval end rounds one way only, so with more than 53 bits in the
    interval context one of the two ends lands on the wrong side; a certificate must never.
    (``constructions.numbers.interval_down``: the abstaining heads' bounds use the same.)"""
    return interval_down(x)


def up(x) -> float:
    """The smallest float >= the interval ``x`` (its upper end rounded toward +inf)."""
    return interval_up(x)


WIDE_DIGITS = 34  # interval precision of ``wide_ends`` (113 bits)


def wide_ends(compute) -> tuple[float, float]:
    """Floats (lo, hi) enclosing the interval ``compute()``. mpmath 1.3's interval log and exp are
    not outward at 53 bits (log(1 + 2^-52) and exp(2^-40) come out one ulp inside), so
    ``compute`` runs at WIDE_DIGITS digits and each end then moves one more float outward: an
    error below a float's ulp at that precision cannot put an end inside."""
    import math

    from mpmath import iv

    from constructions.numbers import interval_digits

    with interval_digits(WIDE_DIGITS):
        y = iv.mpf(compute())
        lo, hi = y.a, y.b
    return math.nextafter(interval_down(lo), -math.inf), math.nextafter(interval_up(hi), math.inf)


def weight_ends(kind: str, e_lo: float, e_hi: float) -> tuple[float, float]:
    """Floats enclosing the unnormalised weights w(e) for e in [e_lo, e_hi]: exp (softmax) or
    sigmoid (sigmoid_norm), both increasing, rounded outward by ``wide_ends``; a weight is >= 0."""
    from mpmath import iv

    def w(e):
        return iv.exp(iv.mpf(e)) if kind == "softmax" else 1 / (1 + iv.exp(-iv.mpf(e)))

    return max(0.0, wide_ends(lambda: w(e_lo))[0]), wide_ends(lambda: w(e_hi))[1]


def to_fractions(values) -> list[Fraction]:
    return [exact(float(v)) for v in values]
