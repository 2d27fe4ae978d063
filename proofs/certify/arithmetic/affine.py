"""Affine forms of a residual stream in the input contents, with interval remainders: the domain
that keeps the correlation between heads and layers in ``affine_stack``.

For one trigger position j the inputs are the contents u = (c_1, ..., c_{L-1}) in [-1, 1]^N,
N = (L - 1) n, token t owning the columns ``columns(n, t)``. Every stream vector is enclosed as

    z_i in { A_i u + b_i + e : u in [-1, 1]^N, |e| <= r_i }      A [L, d, N], b [L, d], r [L, d]

exactly at the input (flags in b, each token's content the identity on its own columns) and then
through each layer by

- linear maps (the value images w = V z, V = W_O^h W_V^h): A -> V A, b -> V b, r -> |V| r;
- a head's mixture o_i = sum_k a_ik w_k, given per-key bounds lo_k <= a_ik <= hi_k (``mixture``):
  with BOS taking the rest, o_i = (1 - sum_{k>=1} lo_k) w_0 + sum_{k>=1} lo_k w_k
  + sum_{k>=1} (a_ik - lo_k)(w_k - w_0). The first two terms stay affine (a trigger that averages
  its keys keeps its mean as a function of the contents); the last has 0 <= a_ik - lo_k <=
  hi_k - lo_k and sum_k (a_ik - lo_k) <= 1 - sum_{k>=0} lo_k, so each coordinate of it is bounded
  by a fractional knapsack over the ranges of w_k - w_0 (exact for those ranges). A sinking query
  (lo_0 = a certified BOS mass, lo_k = 0) gets the remainder (1 - lo_0) * range, as it should;
- sums (the heads' outputs, the residual).

BOS's stream has A_0 = 0 at every layer (query 0 sees only itself), and causality keeps A_i zero
outside the columns of tokens 1..i.

Float64 with a-priori rounding allowances: every product and sum widens r by RELATIVE_SLACK of the
magnitude of its terms (more than gamma_k = k u / (1 - k u) for inner dimensions k < 4000, and the
float64 rounding of the exact V), plus TINY against underflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from constructions import task

RELATIVE_SLACK = 1e-12
TINY = 1e-300


@dataclass
class Forms:
    """Affine forms of the L stream vectors of one input class (one trigger position)."""

    A: np.ndarray  # [L, d, N] dependence on the contents
    b: np.ndarray  # [L, d] constant part
    r: np.ndarray  # [L, d] remainder radii (>= 0)

    def radius(self) -> np.ndarray:
        """[L, d]: each coordinate ranges over b +- radius."""
        return np.abs(self.A).sum(axis=2) + self.r

    def magnitude(self) -> np.ndarray:
        """[L, d]: an upper bound on |every coordinate| over the input class."""
        return np.abs(self.b) + self.radius()


def columns(n: int, t: int) -> slice:
    """The columns of u that hold token t's content (t >= 1)."""
    return slice((t - 1) * n, t * n)


def inputs(d: int, L: int, j: int) -> Forms:
    """The tokens themselves, trigger at j: exact (no remainder)."""
    n = d - 3
    A, b = np.zeros((L, d, (L - 1) * n)), np.zeros((L, d))
    b[0, task.BOS_FLAG] = 1
    for t in range(1, L):
        b[t, task.TRIGGER_FLAG if t == j else task.content_flag(d)] = 1
        A[t, task.CONTENT_START:d - 1, columns(n, t)] = np.eye(n)
    return Forms(A, b, np.zeros((L, d)))


def linear(W: np.ndarray, f: Forms) -> Forms:
    """y = W z at every position."""
    absW = np.abs(W)
    A = np.einsum("rd,ldn->lrn", W, f.A)
    r = f.r @ absW.T + RELATIVE_SLACK * (f.magnitude() @ absW.T) + TINY
    return Forms(A, f.b @ W.T, r)


def add(f: Forms, g: Forms) -> Forms:
    """f + g (the residual, the heads' outputs summed)."""
    r = f.r + g.r + RELATIVE_SLACK * (f.magnitude() + g.magnitude()) + TINY
    return Forms(f.A + g.A, f.b + g.b, r)


def _knapsack(v_hi: np.ndarray, cap: np.ndarray, total: float) -> np.ndarray:
    """Per coordinate r: max sum_k t_k max(v_hi[k, r], 0) over 0 <= t_k <= cap_k, sum t <= total
    (greedy on the largest values: exact). v_hi [K, d], cap [K]."""
    order = np.argsort(-v_hi, axis=0)  # [K, d]
    caps = cap[order]
    before = np.cumsum(caps, axis=0) - caps
    take = np.clip(total - before, 0.0, caps)
    return (take * np.maximum(np.take_along_axis(v_hi, order, axis=0), 0.0)).sum(axis=0)


def mixture(w: Forms, i: int, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A [d, N], b [d], r [d]) enclosing o_i = sum_{k=0..i} a_ik w_k for every a with
    lo <= a <= hi and sum a = 1 (rows on the simplex); lo, hi [i + 1], key 0 is BOS."""
    lo = np.clip(lo, 0.0, 1.0)
    hi = np.clip(np.maximum(hi, lo), 0.0, 1.0)
    keys = slice(1, i + 1)
    rest = 1.0 - lo[keys].sum()  # BOS's share of the affine part (exact value >= a_i0 >= 0)
    A = rest * w.A[0] + np.einsum("k,kdn->dn", lo[keys], w.A[keys])
    b = rest * w.b[0] + lo[keys] @ w.b[keys]
    mag = w.magnitude()
    spread = mag[keys] + mag[0]  # |w_k - w_0| <= spread
    v_c, v_r = w.b[keys] - w.b[0], w.radius()[keys] + w.radius()[0]
    v_r = v_r + RELATIVE_SLACK * spread
    cap = hi[keys] - lo[keys]
    total = 1.0 - lo[0] - lo[keys].sum()
    total = max(total + RELATIVE_SLACK * (1 + i), 0.0)  # rounding of the sum (true value >= 0)
    up = _knapsack(v_c + v_r, cap * (1 + RELATIVE_SLACK), total)
    down = _knapsack(-(v_c - v_r), cap * (1 + RELATIVE_SLACK), total)
    r = abs(rest) * w.r[0] + lo[keys] @ w.r[keys] + (up + down) / 2
    b = b + (up - down) / 2
    r = r + RELATIVE_SLACK * (mag[0] + lo[keys] @ mag[keys] + up + down + np.abs(b)) + TINY  # rest: error ~ i u
    return A, b, r
