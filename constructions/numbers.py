"""Exact-number helpers shared by the task and the attention kinds."""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def exact_div(x: Any, n: int) -> Any:
    """``x / n`` that stays exact for plain ints (which Python would turn into floats)."""
    return Fraction(x, n) if isinstance(x, int) else x / n
