"""Certified intervals as Arb balls (python-flint): the one place where a number that decides a
bound becomes an enclosure, and where an enclosure becomes a float on its safe side.

Arb (the FLINT library) guarantees every operation's result ball contains the exact result, at
any working precision: precision only decides how tight a ball is, never whether it encloses.
So nothing here widens by hand. The helpers:

- ``ball(x)``: x as a ball: exact for an int, float, Fraction, sympy Rational or a ball already
  (a rational that is not dyadic is enclosed at the working precision).
- ``lo(x)`` / ``hi(x)``: the ball's lower / upper end as an exact ball (radius 0), for
  comparisons that must be definite (``arb`` comparisons answer True only when certain).
- ``down(x)`` / ``up(x)``: the largest float <= the ball's lower end / the smallest float >= its
  upper end (for a C loop, numpy or a stored figure); a nan ball (Arb's "indeterminate", the
  whole line) gives -inf / +inf, an end beyond the float range gives +-inf on the safe side.
- ``end_value(x, side)``: an end exactly, as a Fraction (for printing on the safe side).
- ``exp``, ``log``, ``relu``, ``sigmoid``, ``magnitude`` (the image of |x|), ``is_ball``.
- ``precision(bits)``: the working precision at least ``bits`` inside a ``with`` block, restored
  on leaving it (Arb's precision is global; nothing here changes it for other users).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from flint import arb, ctx, fmpq

WORK_BITS = 128  # working precision of the certifying computations (bits; tightness only)


class precision:
    """``with precision(128): ...``: Arb's working precision at least ``bits`` inside the block."""

    def __init__(self, bits: int = WORK_BITS):
        self.bits = bits

    def __enter__(self):
        self.saved = ctx.prec
        ctx.prec = max(ctx.prec, self.bits)
        return self

    def __exit__(self, *exc) -> None:
        ctx.prec = self.saved


def is_ball(x: Any) -> bool:
    return isinstance(x, arb)


def ball(x: Any) -> arb:
    """``x`` enclosed by a ball (exact when ``x`` is an int, a float or a dyadic rational)."""
    if isinstance(x, arb):
        return x
    if isinstance(x, bool):
        raise TypeError(f"no ball for a bool ({x!r})")
    if isinstance(x, (int, float)):
        return arb(x)  # exact: an int of any size, a float as stored (nan / +-inf as Arb's)
    if isinstance(x, Fraction):
        return arb(x.numerator) if x.denominator == 1 else arb(fmpq(x.numerator, x.denominator))
    if getattr(x, "is_Rational", False):  # sympy Integer / Rational
        return ball(Fraction(int(x.p), int(x.q)))
    if hasattr(x, "dtype") and getattr(x, "shape", None) == ():  # a numpy scalar
        return ball(x.item())
    raise TypeError(f"no ball for {x!r} ({type(x).__name__}): give an int, float, Fraction or ball")


def lo(x: Any) -> arb:
    """The lower end of ``x``'s ball, as an exact ball (Arb rounds it down, never up)."""
    return ball(x).lower()


def hi(x: Any) -> arb:
    """The upper end of ``x``'s ball, as an exact ball (rounded up, never down)."""
    return ball(x).upper()


def exact_end(x: arb) -> Fraction:
    """The exact value of a radius-0 finite ball (an Arb end)."""
    man, e = x.man_exp()
    man, e = int(man), int(e)
    return Fraction(man * 2 ** e) if e >= 0 else Fraction(man, 2 ** -e)


def end_value(x: Any, side: str) -> Fraction | float:
    """The lower (``side="down"``) or upper (``"up"``) end of ``x``'s ball exactly, as a Fraction;
    where it is not finite or beyond 2^+-4000, the float ``down(x)`` / ``up(x)`` instead."""
    end = lo(x) if side == "down" else hi(x)
    if end.is_finite() and abs(int(end.man_exp()[1])) < 4000:
        return exact_end(end)
    return down(x) if side == "down" else up(x)


def _to_float(q: Fraction, side: str) -> float:
    """The float nearest ``q`` on ``side`` ("down": largest <= q, "up": smallest >= q)."""
    try:
        f = float(q)  # correctly rounded to nearest (subnormals included)
    except OverflowError:
        f = math.inf if q > 0 else -math.inf
    if side == "up":
        return f if f >= q else math.nextafter(f, math.inf)
    return f if f <= q else math.nextafter(f, -math.inf)


def _end(x: arb, side: str) -> float:
    end = x.lower() if side == "down" else x.upper()
    if not end.is_finite():  # +-inf, or nan (an indeterminate ball: the whole line)
        if not end.is_nan() and (end > 0 if side == "down" else end < 0):
            return math.inf if side == "down" else -math.inf
        return -math.inf if side == "down" else math.inf
    man, e = end.man_exp()
    man, e = int(man), int(e)
    top = e + abs(man).bit_length()  # 2^(top - 1) <= |end| < 2^top
    if abs(man) < 2 ** 53 and -1074 <= e and top <= 1024:
        return math.ldexp(man, e)  # a multiple of 2^-1074 with <= 53 bits, in range: exact
    if top > 1025:  # |end| >= 2^1024: beyond every float
        return _to_float(Fraction(man.bit_length() and (1 if man > 0 else -1) * 2 ** 1025), side)
    if top < -1080:  # 0 < |end| < 2^-1080: between 0 and the smallest subnormal
        return _to_float(Fraction(1 if man > 0 else -1, 2 ** 1080), side)
    return _to_float(exact_end(end), side)


def down(x: Any) -> float:
    """The largest float <= the lower end of ``x``'s ball."""
    return _end(ball(x), "down")


def up(x: Any) -> float:
    """The smallest float >= the upper end of ``x``'s ball."""
    return _end(ball(x), "up")


def exp(x: Any) -> arb:
    return ball(x).exp()


def log(x: Any) -> arb:
    return ball(x).log()


def sigmoid(x: Any) -> arb:
    """1 / (1 + exp(-x))."""
    return 1 / (1 + (-ball(x)).exp())


def relu(x: Any) -> arb:
    """The image of the ball under max(., 0): [max(a, 0), max(b, 0)]."""
    return ball(x).nonnegative_part()


def magnitude(x: Any) -> arb:
    """The image of the ball under |.|: [min |x|, max |x|] (``abs`` of an Arb ball keeps a
    straddling ball's negative half; this does not)."""
    return abs(ball(x)).nonnegative_part()  # |mid| +- rad, cut at 0: [max(0, min |x|), max |x|]
