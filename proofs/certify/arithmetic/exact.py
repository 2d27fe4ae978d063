"""Exact rational linear algebra at integer speed: a matrix of Fractions as one integer matrix
over a common denominator.

Trained weights are float32 values (dyadic rationals), so a d x d product in ``Fraction``
arithmetic spends nearly all its time normalising by gcds: at d = 64 the product W_Q^T W_K took
1.4 s and the witness replays (one matrix-vector product per key) dominated the certificate.
Here every entry is N[r][c] / D with Python integers N and one D > 0, so a product is integer
multiply-adds followed by a single Fraction per entry read back: the same exact numbers
(``tests/test_certify_scale.py`` holds them equal to the Fraction products), ~50x faster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from operator import mul
from typing import Any, Sequence


def _lcm(values) -> int:
    out = 1
    for v in values:
        out = out * v // math.gcd(out, v)
    return out


@dataclass(frozen=True)
class IntMatrix:
    """rows x cols rationals N[r][c] / den (den > 0)."""

    N: tuple[tuple[int, ...], ...]
    den: int

    @classmethod
    def of(cls, rows: Sequence[Sequence[Fraction]]) -> "IntMatrix":
        den = _lcm(q.denominator for row in rows for q in row)
        return cls(tuple(tuple(q.numerator * (den // q.denominator) for q in row) for row in rows), den)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.N), len(self.N[0]) if self.N else 0

    def transpose(self) -> "IntMatrix":
        return IntMatrix(tuple(zip(*self.N)), self.den)

    def matmul(self, other: "IntMatrix") -> "IntMatrix":
        cols = list(zip(*other.N))
        return IntMatrix(tuple(tuple(sum(map(mul, row, col)) for col in cols) for row in self.N),
                         self.den * other.den)

    def columns(self, start: int, stop: int) -> "IntMatrix":
        return IntMatrix(tuple(row[start:stop] for row in self.N), self.den)

    def fractions(self) -> tuple[tuple[Fraction, ...], ...]:
        return tuple(tuple(Fraction(v, self.den) for v in row) for row in self.N)

    def floats(self):
        """Every entry correctly rounded to float64 (int / int true division rounds correctly)."""
        import numpy as np

        return np.array([[v / self.den for v in row] for row in self.N], dtype=float)

    def apply(self, x: "IntVector") -> "IntVector":
        """self @ x, exactly."""
        return IntVector(tuple(sum(map(mul, row, x.N)) for row in self.N), self.den * x.den)


@dataclass(frozen=True)
class IntVector:
    N: tuple[int, ...]
    den: int

    @classmethod
    def of(cls, values: Sequence[Any]) -> "IntVector":
        qs = [v if isinstance(v, Fraction) else Fraction(v) for v in values]
        den = _lcm(q.denominator for q in qs)
        return cls(tuple(q.numerator * (den // q.denominator) for q in qs), den)

    def dot(self, other: "IntVector") -> Fraction:
        return Fraction(sum(map(mul, self.N, other.N)), self.den * other.den)

    def fractions(self) -> list[Fraction]:
        return [Fraction(v, self.den) for v in self.N]
