"""Exact-number helpers shared by the task and the attention kinds."""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def exact_div(x: Any, n: int) -> Any:
    """``x / n`` that stays exact for plain ints (which Python would turn into floats)."""
    return Fraction(x, n) if isinstance(x, int) else x / n


def interval_up(x: Any) -> float:
    """The smallest float >= the interval (or number) ``x``: its upper end rounded toward +inf.

    ``float()`` of an mpmath end rounds to nearest, so with more than 53 bits in the interval
    context it lands below an upper end about half the time; a certified figure must never."""
    import math

    from mpmath import iv

    hi = x.b if hasattr(x, "b") else iv.mpf(x).b
    f = float(hi)
    return f if iv.mpf(f).a >= hi else math.nextafter(f, math.inf)


def interval_down(x: Any) -> float:
    """The largest float <= the interval (or number) ``x``: its lower end rounded toward -inf."""
    import math

    from mpmath import iv

    lo = x.a if hasattr(x, "a") else iv.mpf(x).a
    f = float(lo)
    return f if iv.mpf(f).b <= lo else math.nextafter(f, -math.inf)


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


class interval_digits:
    """``with interval_digits(30): ...``: the mpmath interval context at (at least) that many
    digits inside the block, its previous precision restored on leaving it, even on error.
    (mpmath 1.3's ``iv`` has no ``workdps``; this is the scoped equivalent, so no verifier
    changes the precision that other interval users see.)"""

    def __init__(self, dps: int):
        self.dps = dps

    def __enter__(self):
        from mpmath import iv

        self.saved = iv.prec
        iv.dps = max(iv.dps, self.dps)
        return self

    def __exit__(self, *exc) -> None:
        from mpmath import iv

        iv.prec = self.saved
