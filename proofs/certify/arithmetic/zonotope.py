"""Zonotopes with an interval remainder: the correlation-keeping domain of ``zono_stack``.

A value (any array shape S) is enclosed as

    x in { c + G e + t : e in [-1, 1]^E, |t| <= r }          c [S], G [S, E], r [S] >= 0

where the symbols e are shared by every value of one input class: the first ones are the input
contents (``affine.columns``), the later ones fresh symbols that ``fresh`` mints from a remainder
(one per coordinate), so that what one layer could only bound stays one shared quantity in the
next: a difference of two values cancels their common symbols, which intervals cannot.

Transformers (each sound for every e and t; tests/test_zonotope.py holds them to mpmath):
- linear maps, sums, constant affine maps: exact on c and G, the remainder by |W| r;
- the product of two values (``product``): c_x c_y + c_x G_y e + c_y G_x e, the quadratic part
  (G_x e)(G_y e) by its range (diagonal terms e_a^2 in [0, 1], the rest by absolute values),
  the parts with a remainder by absolute values;
- convex univariate functions g with a chosen slope (``convex``, DeepT's minimal-area rule,
  Bonaert et al. PLDI 2021): g(x) = lam x + mu + beta e_new on [l, u], with lam = g'(t) at a
  tangent point t, the intercept range [min, max] of g(x) - lam x from the tangent at t (below)
  and the two ends (above: convex); ``exp`` (t = min(log chord slope, l + 1 - 0.01), so the
  lower line stays positive on [l, u]) and ``reciprocal`` for x > 0 (t = max(sqrt(l u), u/2 +
  0.01 u), the same reason). A relaxation that is not a finite float (1 / x^2 overflows below
  x ~ 1e-154) is refused, as exp is above EXP_CAP.

Float64 with a-priori allowances, the rules of ``affine``: every product and sum widens r by
RELATIVE_SLACK of the magnitude of its terms (more than gamma_k for k < 4000 terms, which bounds
the symbols E) plus TINY; every float exp and reciprocal value is taken FN_RTOL relative wide (the
premise: numpy's exp errs by a few ulp, ~1e-16 relative; tests/test_zonotope.py measures it
against mpmath).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .affine import RELATIVE_SLACK, TINY

FN_RTOL = 1e-13  # relative allowance on every float exp / reciprocal value (a few ulp is ~1e-16)
MAX_SYMBOLS = 4000  # RELATIVE_SLACK covers sums of fewer terms


@dataclass
class Zono:
    c: np.ndarray  # [S] centre
    G: np.ndarray  # [S, E] generators of the shared symbols
    r: np.ndarray  # [S] remainder radii (>= 0)

    def radius(self) -> np.ndarray:
        return np.abs(self.G).sum(axis=-1) + self.r

    def magnitude(self) -> np.ndarray:
        return np.abs(self.c) + self.radius()

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Floats lo <= x <= hi over every symbol and remainder (outward)."""
        slack = RELATIVE_SLACK * self.magnitude() + TINY
        rad = self.radius()
        return self.c - rad - slack, self.c + rad + slack

    def __getitem__(self, index) -> "Zono":
        return Zono(self.c[index], self.G[index], self.r[index])

    @property
    def symbols(self) -> int:
        return self.G.shape[-1]


def exact(c: np.ndarray, G: np.ndarray) -> Zono:
    return Zono(np.asarray(c, float), np.asarray(G, float), np.zeros(np.shape(c)))


def pad(z: Zono, E: int) -> Zono:
    """The same value over E >= z.symbols symbols (the new ones unused)."""
    extra = E - z.symbols
    return z if extra == 0 else Zono(z.c, np.concatenate([z.G, np.zeros(z.G.shape[:-1] + (extra,))], axis=-1), z.r)


def linear(W: np.ndarray, z: Zono) -> Zono:
    """W x on the last axis of the value shape (x [..., d] -> [..., m])."""
    absW = np.abs(W)
    G = np.einsum("md,...de->...me", W, z.G)
    r = z.r @ absW.T + RELATIVE_SLACK * (z.magnitude() @ absW.T) + TINY
    return Zono(z.c @ W.T, G, r)


def add(x: Zono, y: Zono) -> Zono:
    r = x.r + y.r + RELATIVE_SLACK * (x.magnitude() + y.magnitude()) + TINY
    return Zono(x.c + y.c, x.G + y.G, r)


def neg(x: Zono) -> Zono:
    return Zono(-x.c, -x.G, x.r)


def total(x: Zono, axis: int) -> Zono:
    """Sum over one axis of the value shape (axis counted from the front, >= 0)."""
    return Zono(x.c.sum(axis=axis), x.G.sum(axis=axis), x.r.sum(axis=axis) + RELATIVE_SLACK * x.magnitude().sum(axis=axis) + TINY)


def affine_map(lam: np.ndarray, mu: np.ndarray, x: Zono) -> Zono:
    """lam x + mu elementwise (lam, mu of the value shape)."""
    r = np.abs(lam) * x.r + RELATIVE_SLACK * (np.abs(lam) * x.magnitude() + np.abs(mu)) + TINY
    return Zono(lam * x.c + mu, lam[..., None] * x.G, r)


def product(x: Zono, y: Zono) -> Zono:
    """x * y elementwise (shapes broadcast): first-order terms kept, the quadratic ones bounded."""
    gx, gy = np.abs(x.G).sum(axis=-1), np.abs(y.G).sum(axis=-1)
    diag = x.G * y.G  # e_a^2 in [0, 1]
    d_lo, d_hi = np.minimum(diag, 0).sum(axis=-1), np.maximum(diag, 0).sum(axis=-1)
    off = np.maximum(gx * gy - np.abs(diag).sum(axis=-1), 0.0)  # pairs a != b: |G_xa G_yb| summed
    rest = np.abs(x.c) * y.r + np.abs(y.c) * x.r + gx * y.r + gy * x.r + x.r * y.r
    c = x.c * y.c + (d_lo + d_hi) / 2
    G = x.c[..., None] * y.G + y.c[..., None] * x.G
    size = (np.abs(x.c) + gx + x.r) * (np.abs(y.c) + gy + y.r)
    r = (d_hi - d_lo) / 2 + off + rest + RELATIVE_SLACK * (size + np.abs(c)) * 4 + TINY
    return Zono(c, G, r)


def fresh(z: Zono, keep: float = 0.0) -> Zono:
    """Every remainder coordinate above ``keep`` becomes a symbol of its own (appended), so later
    maps carry it as one shared quantity; the value is unchanged (t = r e_new exactly)."""
    flat = z.r.reshape(-1)
    idx = np.nonzero(flat > keep)[0]
    if len(idx) == 0:
        return z
    if z.symbols + len(idx) > MAX_SYMBOLS:
        raise ValueError(f"zonotope would have {z.symbols + len(idx)} symbols (at most {MAX_SYMBOLS})")
    new = np.zeros((flat.size, len(idx)))
    new[idx, np.arange(len(idx))] = flat[idx]
    r = flat.copy()
    r[idx] = 0.0
    G = np.concatenate([z.G, new.reshape(z.r.shape + (len(idx),))], axis=-1)
    return Zono(z.c, G, r.reshape(z.r.shape))


def _wide(v: np.ndarray) -> np.ndarray:
    return np.abs(v) * FN_RTOL + TINY


def convex(x: Zono, g, dg, t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Zono:
    """g(x) for g convex on [lo, hi] (lo, hi: bounds of x), with slope lam = g'(t): g(x) - lam x
    lies between its tangent at t (convexity, the tangent's own slope error included) and its
    larger end value (convexity again)."""
    lam = dg(t)
    end_lo, end_hi = g(lo), g(hi)
    top = np.maximum(end_lo - lam * lo + _wide(end_lo) + 2 * _wide(lam * lo), end_hi - lam * hi + _wide(end_hi) + 2 * _wide(lam * hi))
    gt = g(t)
    # g(x) >= g(t) + g'(t)(x - t) and |g'(t) - lam| <= FN_RTOL |lam|: the float slope's error
    bottom = gt - lam * t - _wide(gt) - 2 * _wide(lam * t) - _wide(lam) * np.maximum(np.abs(lo - t), np.abs(hi - t))
    bottom = bottom - RELATIVE_SLACK * (np.abs(gt) + np.abs(lam * t)) - TINY
    top = top + RELATIVE_SLACK * (np.abs(end_lo) + np.abs(end_hi) + np.abs(lam * lo) + np.abs(lam * hi)) + TINY
    mid, half = (top + bottom) / 2, (top - bottom) / 2
    out = affine_map(lam, mid, x)
    out.r = out.r + half * (1 + RELATIVE_SLACK) + TINY
    if not (np.all(np.isfinite(out.c)) and np.all(np.isfinite(out.r)) and np.all(np.isfinite(out.G))):
        raise ValueError("the relaxation's slope or intercept is not a finite float")  # e.g. 1 / x^2 overflows
    return out


EXP_CAP = 600.0  # above this an upper bound is not a float: callers bound such values apart


def exp(x: Zono) -> Zono:
    """exp(x), DeepT's slope: the chord's, moved left of l + 1 so that the lower line is positive."""
    lo, hi = x.bounds()
    if np.any(hi > EXP_CAP):
        raise ValueError("exp of a value above EXP_CAP")
    width = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        chord = np.where(width > 1e-9, np.log((np.exp(hi) - np.exp(lo)) / np.where(width > 1e-9, width, 1.0)), lo)
    t = np.minimum(np.clip(chord, lo, hi), lo + 1 - 0.01)
    return convex(x, np.exp, np.exp, t, lo, hi)


def reciprocal(x: Zono, floor: float | np.ndarray = 0.0) -> Zono:
    """1 / x for x > 0; ``floor``: a known lower bound of x (> 0) that replaces a smaller computed one."""
    lo, hi = x.bounds()
    lo = np.maximum(lo, floor)
    if np.any(lo <= 0):
        raise ValueError("reciprocal of a value that may be <= 0")
    t = np.maximum(np.sqrt(lo * hi), hi / 2 * 1.01)
    t = np.minimum(t, hi)
    with np.errstate(over="ignore"):  # 1 / t^2 underflows to a slope of 0 for huge t: still a valid slope
        return convex(x, lambda v: 1 / v, lambda v: -1 / (v * v), t, lo, hi)
