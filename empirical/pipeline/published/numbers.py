"""How the generated tables write numbers (one place, so every table reads alike).

A measured figure (a mean, a minimum over sampled sequences) is rounded to nearest; a bound is
written on its safe side (``side="lower"``: rounded down, ``"upper"``: up; ``constructions.numbers``)."""

from __future__ import annotations

import statistics
from typing import Sequence

def fmt(x: float | None, digits: int = 4, side: str | None = None) -> str:
    """``digits`` significant digits; an exact 0 is written 0, None "-". ``side``: None rounds to
    nearest (a measured value), "lower" toward -inf (a lower bound), "upper" toward +inf (an upper
    bound), each from the exact value (``constructions.numbers.format_bound``)."""
    from constructions.numbers import format_bound

    return "0" if x == 0 and side is None else format_bound(x, digits, side)


def pm(values: Sequence[float], digits: int = 4) -> str:
    """mean ± population standard deviation over seeds (a single seed: its value)."""
    values = list(values)
    if len(values) == 1:
        return fmt(values[0], digits)
    return f"{fmt(statistics.fmean(values), digits)} ± {fmt(statistics.pstdev(values), 2)}"


def span(values: Sequence[float], digits: int = 4, sign: bool = False, side: str | None = None) -> str:
    """"min to max" over seeds (one value if they agree to the digits shown); ``sign`` writes +;
    ``side`` as ``fmt``'s (bounds of one kind, e.g. every seed's eta_lo: "lower")."""
    def one(x: float) -> str:
        return ("+" if sign and x >= 0 else "") + fmt(x, digits, side)

    lo, hi = one(min(values)), one(max(values))
    return lo if lo == hi else f"{lo} to {hi}"
