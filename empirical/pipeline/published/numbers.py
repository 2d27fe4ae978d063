"""How the generated tables write numbers (one place, so every table reads alike)."""

from __future__ import annotations

import statistics
from typing import Sequence


def fmt(x: float, digits: int = 4) -> str:
    """``digits`` significant digits; an exact 0 is written 0."""
    return "0" if x == 0 else f"{x:.{digits}g}"


def pm(values: Sequence[float], digits: int = 4) -> str:
    """mean ± population standard deviation over seeds (a single seed: its value)."""
    values = list(values)
    if len(values) == 1:
        return fmt(values[0], digits)
    return f"{fmt(statistics.fmean(values), digits)} ± {fmt(statistics.pstdev(values), 2)}"


def span(values: Sequence[float], digits: int = 4, sign: bool = False) -> str:
    """"min to max" over seeds (one value if they agree to the digits shown); ``sign`` writes +."""
    def one(x: float) -> str:
        return ("+" if sign and x >= 0 else "") + fmt(x, digits)

    lo, hi = one(min(values)), one(max(values))
    return lo if lo == hi else f"{lo} to {hi}"
