"""Exact-number helpers shared by the task and the attention kinds."""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def exact_div(x: Any, n: int) -> Any:
    """``x / n`` that stays exact for plain ints (which Python would turn into floats)."""
    return Fraction(x, n) if isinstance(x, int) else x / n


def interval_up(x: Any) -> float:
    """The smallest float >= the ball (or number) ``x``: its upper end rounded toward +inf
    (``balls.up``)."""
    from . import balls

    return balls.up(x)


def interval_down(x: Any) -> float:
    """The largest float <= the ball (or number) ``x``: its lower end rounded toward -inf."""
    from . import balls

    return balls.down(x)


def fraction_up(q: Fraction) -> float:
    """The smallest float >= the exact rational ``q`` (``float()`` rounds to nearest)."""
    import math

    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def fraction_down(q: Fraction) -> float:
    """The largest float <= the exact rational ``q``."""
    import math

    f = float(q)
    return f if Fraction(f) <= q else math.nextafter(f, -math.inf)


def exact_value(x: Any, side: str) -> Fraction | float | None:
    """``x`` as an exact Fraction (a float, int, Fraction, Decimal, sympy Rational/Float or
    mpmath mpf exactly as stored); an Arb ball or mpmath interval gives its lower end for
    ``side="down"``, its upper end for ``"up"``. None stays None; nan and the infinities come back as floats."""
    import math
    from decimal import Decimal

    if x is None or isinstance(x, (Fraction, int)):
        return None if x is None else Fraction(x)
    if isinstance(x, float):
        return x if not math.isfinite(x) else Fraction(x)
    if isinstance(x, Decimal):
        return float(x) if not x.is_finite() else Fraction(x)
    from . import balls

    if balls.is_ball(x):  # an Arb ball: its lower end for "down", its upper end for "up"
        return balls.end_value(x, side)
    if hasattr(x, "_mpi_") or hasattr(x, "_mpf_"):  # mpmath mpf / interval, sympy Float: man * 2^exp
        import mpmath

        v = mpmath.mpf(x._mpi_[0 if side == "down" else 1] if hasattr(x, "_mpi_") else x)
        if not mpmath.isfinite(v):
            return float(v)
        man, exp = v.man_exp
        return Fraction(man) * Fraction(2) ** exp
    if getattr(x, "is_Rational", False):  # sympy Integer / Rational
        return Fraction(int(x.p), int(x.q))
    raise TypeError(f"no exact value for {x!r} ({type(x).__name__}): give a float, Fraction, "
                    "interval or rational")


def _directed(x: Any, digits: int, side: str) -> str:
    """``x`` at ``digits`` significant digits in ``g`` style (as ``f"{x:.{digits}g}"`` writes a
    float), rounded toward -inf (``side="down"``) or +inf (``"up"``) from its exact value."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

    q = exact_value(x, side)
    if q is None:
        return "-"
    if isinstance(q, float):  # nan, inf, -inf
        return f"{q}"
    if q == 0:
        return "0"
    with localcontext() as ctx:  # Decimal division is correctly rounded in the context's direction
        ctx.prec, ctx.Emax, ctx.Emin = digits, 10**9, -10**9
        ctx.rounding = ROUND_FLOOR if side == "down" else ROUND_CEILING
        d = Decimal(q.numerator) / Decimal(q.denominator)
    sign, coefficient, _ = d.as_tuple()
    mantissa = "".join(map(str, coefficient)).rstrip("0") or "0"
    point = d.adjusted()  # the decimal exponent of the leading digit
    if -4 <= point < digits:  # fixed notation, as the g format chooses
        whole = mantissa[:point + 1].ljust(point + 1, "0") if point >= 0 else "0"
        frac = mantissa[point + 1:] if point >= 0 else "0" * (-point - 1) + mantissa
        text = whole + ("." + frac if frac else "")
    else:
        text = mantissa[0] + ("." + mantissa[1:] if len(mantissa) > 1 else "") + f"e{point:+03d}"
    return ("-" if sign else "") + text


def format_down(x: Any, digits: int = 6) -> str:
    """A lower bound as printed: ``x`` at ``digits`` significant digits (``g`` style), rounded
    toward -inf from its exact value, so the printed figure is never above ``x``. ``x``: float,
    int, Fraction, Decimal, sympy Rational/Float, mpmath mpf, Arb ball or interval (its lower end); None
    is written ``-``; nan, inf as Python writes them; values exact at ``digits`` print exactly."""
    return _directed(x, digits, "down")


def format_up(x: Any, digits: int = 6) -> str:
    """An upper bound as printed: as ``format_down``, rounded toward +inf (an interval: its
    upper end), so the printed figure is never below ``x``."""
    return _directed(x, digits, "up")


SIDES = (None, "lower", "upper")


def format_bound(x: Any, digits: int = 6, side: str | None = None) -> str:
    """``x`` at ``digits`` significant digits on its side: a lower bound (``side="lower"``) by
    ``format_down``, an upper bound (``"upper"``) by ``format_up``, a figure that bounds nothing
    (a measured value, a ratio; ``None``) to nearest as ``g`` writes a float. None is written "-"."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    if x is None:
        return "-"
    if side is None:
        return f"{float(x):.{digits}g}"
    return (format_down if side == "lower" else format_up)(x, digits)
