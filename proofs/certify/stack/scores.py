"""A deeper layer's attention scores as functions of the query's own content.

At query i the stream is z_i = x(c) + eta with x(c) = x0 + D c affine in the query's own content
c in [-1, 1]^n (D: the columns of token i in the affine form, ``affine``) and eta = H u + e the rest
(H: every other token's columns, |e| <= r). A key's stream (minus BOS's for softmax) is
y(c) + zeta with zeta = Z u + e', causally independent of c unless the key is the query itself.
The score is

    (x + eta)^T M (y + zeta) = x^T M y                          quadratic in c
                             + (Z^T M^T x + H^T M y) . u          linear in u for fixed c
                             + (M^T x) . e' + (M y) . e           linear in the remainders
                             + eta^T M zeta                       bilinear remainder

For fixed c the middle terms' extremes over the box are support functions: +- sum_r w_r |b_r +
K_r c| with one row per column of u (weight 1) and per remainder coordinate (weight its radius),
which is ``heads.Exponent``'s form, so the branch and bound of ``branch`` searches c exactly as for
one layer. The second-order term eta^T M zeta is enclosed by ``second_order`` (its u-u part as a
quadratic form in u, the rest by absolute values). What this relaxes: given c, each key's u takes
its own worst value (the keys' shared contents decouple), and the second-order term is bounded
apart from the first-order ones. Everything else, in particular the
correlation between a key's token and the other tokens its stream carries (a trigger's mean of
the contents), is kept.

Float64: the exponents carry RELATIVE_SLACK of the magnitude of the whole form (covering every
product formed here and the float64 rounding of the exact M); ``heads.Exponent.slack`` covers the
evaluation inside the search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arithmetic.affine import RELATIVE_SLACK, TINY, Forms, columns
from ..arithmetic.heads import Exponent


@dataclass
class Split:
    """One stream vector split at the query's columns: c0 + D c + H u + e, |e| <= r."""

    c0: np.ndarray  # [d]
    D: np.ndarray  # [d, n]
    H: np.ndarray  # [d, N] (zero on the query's columns)
    r: np.ndarray  # [d]

    def rho(self) -> np.ndarray:
        """|c0 + D c + H u + e - (c0 + D c)| <= rho, coordinate-wise."""
        return np.abs(self.H).sum(axis=1) + self.r


def split(f: Forms, k: int, i: int, ref: tuple[np.ndarray, np.ndarray] | None = None) -> Split:
    """Stream k (minus a reference point ``ref`` = (centre, radius)) split at query i's columns."""
    n = f.A.shape[2] // (f.A.shape[0] - 1)
    cols = columns(n, i)
    H = f.A[k].copy()
    D = H[:, cols].copy()
    H[:, cols] = 0.0
    c0, r = f.b[k].copy(), f.r[k].copy()
    if ref is not None:
        c0 = c0 - ref[0]
        r = r + ref[1] + RELATIVE_SLACK * (np.abs(f.b[k]) + np.abs(ref[0])) + TINY
    return Split(c0, D, H, r)


FOLD_LOSS = 1e-3  # score units: rows whose c-dependence is this small in all become constants


def _exponents(a: float, p, S, rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]], low: float, high: float):
    """(upper, lower) exponents a + (high, low) + p.c + c^T S c +- sum_r w_r |b_r + K_r c|. Rows with
    the smallest c-dependence w_r ||K_r||_1, FOLD_LOSS of it in all, become constants
    (|b + K c| <= |b| + ||K||_1 and >= |b| - ||K||_1)."""
    b = np.concatenate([x[0] for x in rows])
    K = np.concatenate([x[1] for x in rows])
    w = np.concatenate([x[2] for x in rows])
    keep = w > 0
    b, K, w = b[keep], K[keep], w[keep]
    slope = w * np.abs(K).sum(axis=1)
    order = np.argsort(slope)
    fold = np.zeros(len(b), bool)
    fold[order[np.cumsum(slope[order]) <= FOLD_LOSS]] = True
    const = float(w[fold] @ np.abs(b[fold]))
    spread = float(slope[fold].sum()) * (1 + RELATIVE_SLACK)
    b, K, w = b[~fold], K[~fold], w[~fold]
    up = Exponent(a + high + const + spread, p, S, +1, b, K, w)
    lo = Exponent(a + low - const - spread, p, S, -1, b, K, w)
    return up, lo


def quadratic_range(B: np.ndarray) -> tuple[float, float]:
    """[min, max] enclosure of v^T B v over v in [-1, 1]^N: each diagonal term in [min(B_aa, 0),
    max(B_aa, 0)], each pair a < b within +-|B_ab + B_ba|."""
    diag = np.diag(B)
    pairs = np.abs(B + B.T)
    off = (pairs.sum() - np.trace(pairs)) / 2
    return float(np.minimum(diag, 0).sum() - off), float(np.maximum(diag, 0).sum() + off)


def second_order(M: np.ndarray, x: Split, y: Split, own: bool) -> tuple[float, float]:
    """[min, max] of eta^T M zeta with eta = H_x u + e, zeta = H_y u + e' (+ e when ``own``): the
    u-u part as a quadratic form of u (``quadratic_range``; the columns eta and zeta share are one
    variable), the parts with a remainder by absolute values."""
    HxM = x.H.T @ M  # [N, d]
    q_lo, q_hi = quadratic_range(HxM @ y.H)
    r_y = y.r + x.r if own else y.r
    cross = float(x.r @ np.abs(M @ y.H).sum(axis=1) + np.abs(HxM).sum(axis=0) @ r_y + x.r @ np.abs(M) @ y.r)
    e_lo, e_hi = quadratic_range(M * np.outer(x.r, x.r)) if own else (0.0, 0.0)  # e^T M e
    return q_lo + e_lo - cross, q_hi + e_hi + cross


MERGE_LOSS = 1e-3  # score units: what ``compact`` may add to an exponent


def compact(E: Exponent, budget: float = MERGE_LOSS) -> Exponent:
    """E with near-parallel rows merged, for the searches (their cost grows with the rows): row r
    joins row q with w_q += w_r, since w_r |l_r| <= w_r |l_q| + w_r (|b_r - b_q| + ||K_r - K_q||_1),
    lightest rows first, while the added deviations stay within ``budget`` (a key's content row and
    its remainder row on the same coordinate nearly coincide, and a mean repeats one row per token)."""
    rows, w = np.column_stack([E.b, E.K]), E.weights.copy()
    if len(rows) < 2:
        return E
    dist = np.abs(rows[:, None, :] - rows[None, :, :]).sum(axis=2)  # [R, R]
    alive, moved = np.ones(len(w), bool), 0.0
    for r in np.argsort(w):
        alive[r] = False
        cost = np.where(alive, w[r] * dist[r], np.inf)
        q = int(np.argmin(cost))
        if not np.isfinite(cost[q]) or moved + cost[q] > budget:
            alive[r] = True
            continue
        w[q] += w[r]
        moved += cost[q]
    moved = moved * (1 + RELATIVE_SLACK) + len(w) * 2.0 ** -52 * float(E.weights @ np.abs(rows).sum(axis=1))
    return Exponent(E.a + E.s * moved, E.p, E.S, E.s, E.b[alive], E.K[alive], w[alive])


def _remainder_row(g: np.ndarray, G: np.ndarray, r: np.ndarray, along) -> tuple[tuple, float]:
    """The support row of (g + G c) . e over |e| <= r, and a constant: (g, G, r) and 0, or, when
    ``along(g)`` bounds |g . e| below |g| . r (``directional``), (0, G, r) and that bound:
    |(g + G c) . e| <= |g . e| + sum_r r_r |(G c)_r|."""
    if along is not None:
        bound = along(g)
        if bound < np.abs(g) @ r:
            return (np.zeros_like(g), G, r), bound
    return (g, G, r), 0.0


def bilinear(M: np.ndarray, x: Split, y: Split, own: bool = False, along_query=None,
             along_key=None) -> tuple[Exponent, Exponent]:
    """(upper, lower) exponents of (x + eta)^T M (y + zeta) over every u and remainder, as functions
    of c. ``own``: the key is the query itself (y = x - BOS), so eta is part of zeta and their
    shared remainder e enters once, with the sum of both coefficients. ``along_query(g)`` /
    ``along_key(g)``, when given, bound |g . e| for the query's remainder e (y.r's, for the key)
    along a direction g (``directional``)."""
    gx, Gx = M.T @ x.c0, M.T @ x.D  # M^T x(c) = gx + Gx c
    gy, Gy = M @ y.c0, M @ y.D  # M y(c) = gy + Gy c
    a = float(x.c0 @ gy)
    p = x.D.T @ gy + y.D.T @ gx
    S = x.D.T @ M @ y.D
    S = (S + S.T) / 2
    rows = [(y.H.T @ gx + x.H.T @ gy, y.H.T @ Gx + x.H.T @ Gy, np.ones(x.H.shape[1]))]
    if own:
        q_row, q_const = _remainder_row(gx + gy, Gx + Gy, x.r, along_query)
        rows += [q_row, (gx, Gx, y.r)]
        k_const = 0.0
        rho_y = y.rho() + x.r
    else:
        k_row, k_const = _remainder_row(gx, Gx, y.r, along_key)
        q_row, q_const = _remainder_row(gy, Gy, x.r, along_query)
        rows += [k_row, q_row]
        rho_y = y.rho()
    low, high = second_order(M, x, y, own)
    low, high = low - q_const - k_const, high + q_const + k_const
    size_x = np.abs(x.c0) + np.abs(x.D).sum(axis=1) + x.rho()
    size_y = np.abs(y.c0) + np.abs(y.D).sum(axis=1) + rho_y
    slack = RELATIVE_SLACK * float(size_x @ np.abs(M) @ size_y) + TINY
    return _exponents(a, p, S, rows, low - slack, high + slack)


def key_exponents(M: np.ndarray, f: Forms, i: int, ref: tuple[np.ndarray, np.ndarray] | None,
                  along=None) -> list:
    """Per key k = 0..i of query i: (upper, lower) exponents of its score minus the score of a
    reference point ``ref`` = (centre, radius) (softmax is shift-invariant: BOS's stream, or the
    keys' centre), or of the score itself (``ref`` None, sum-normalised sigmoid). ``along``, when
    given, maps [(position p, direction g), ...] to bounds on |g . e_p| for the remainder e_p of
    stream p (``directional.Cached``, which keeps what it has bounded); the query's and the keys'
    remainders are then read along the directions the score meets them in, all of them asked for
    in one call first."""
    x = split(f, i, i)
    keys = [split(f, k, i, ref) for k in range(i)]
    c0, r = x.c0, np.zeros_like(x.r)  # the own key: y = x (- ref); x's remainder counted once, in ``own``
    if ref is not None:
        c0 = x.c0 - ref[0]
        r = ref[1] + RELATIVE_SLACK * (np.abs(x.c0) + np.abs(ref[0])) + TINY
    own = Split(c0, x.D, x.H, r)
    if along is None:
        return [bilinear(M, x, y) for y in keys] + [bilinear(M, x, own, own=True)]
    gx = M.T @ x.c0  # the directions ``bilinear`` reads the remainders along, bounded in one batch
    along([(k, gx) for k in range(i)] + [(i, M @ y.c0) for y in keys] + [(i, gx + M @ own.c0)])

    def look(p: int, g: np.ndarray) -> float:
        return float(along([(p, g)])[0])
    out = []
    for k, y in enumerate(keys):
        extra = y.r - f.r[k] + RELATIVE_SLACK * y.r + TINY  # y's remainder: stream k's plus the reference's (``split``)
        out.append(bilinear(M, x, y, along_query=lambda g: look(i, g),
                            along_key=lambda g, k=k, extra=extra: look(k, g) + np.abs(g) @ extra))
    return out + [bilinear(M, x, own, own=True, along_query=lambda g: look(i, g))]


def bos_reference(f: Forms) -> tuple[np.ndarray, np.ndarray]:
    """BOS's stream (a point up to rounding: query 0 sees only itself)."""
    return f.b[0], f.r[0]


def key_centre(f: Forms, i: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean of the constant parts of keys 1..i: a reference that takes the query's common
    shift out of every content key's score."""
    return f.b[1:i + 1].mean(axis=0), np.zeros(f.b.shape[1])
