"""A softmax head's output as an affine form in the contents, its weights linearised jointly.

``affine.mixture`` boxes each weight a_ik on its own, so at an averaging query the weights' spread
(small: a few hundredths) multiplies the values' whole range, key by key, and none of the
weights' dependence on the contents reaches the next layer. Here the weights are linearised in
the score differences t_k = s_ik - s_i0 as one vector (first-order Taylor expansion of softmax
with a certified second-order remainder), the scores are affine in the contents, and the products
with the values keep their first-order parts too:

- scores: t_k = z_i^T M (z_k - z_0) = tau_k + T_k . u + (quadratic in u) + (remainder terms), the
  quadratic part enclosed by ``quadratic_range`` and every remainder by absolute values, so
  t_k in tau_k + T_k . u +- e_k and |t_k - tau_k| <= D_k = ||T_k||_1 + e_k (t_0 = 0 exactly);
- softmax around tau: a(t) = ahat + J (t - tau) + R, J = diag(ahat) - ahat ahat^T, and by Taylor's
  theorem R_k = 1/2 x^T H_k(xi) x with x = t - tau, xi on the segment, where the Hessian's form is
  x^T H_k x = a_k(xi) [(x_k - xbar)^2 - Var_a(x)] (xbar, Var: the mean and variance of x under
  the weights a(xi)). Both brackets are >= 0, so R_k in [-a_k^+ V / 2, a_k^+ Q_k / 2] with a_k^+ the
  largest a_k over the score box, V >= Var and Q_k >= (x_k - xbar)^2 (``taylor_remainder``); R is
  unchanged when a common c(u) is taken from every x_k (J 1 = 0), so the bound is also taken with
  the keys' mean linear part removed from D, and the narrower kept;
- so a_k = ahat_k + G_k . u + delta_k (G = J T) with delta_k in [R_lo_k - |J_k| . e, R_hi_k + |J_k| . e],
  intersected with what the caller's bounds lo_k <= a_k <= hi_k allow (``box``), and sum_k delta_k
  = 0 (1^T J = 0; up to rounding, ``eps``). Then o = sum_k (ahat_k + G_k . u) w_k + sum_k delta_k w_k:
  the first sum's u-u part is one quadratic form per output coordinate (``quadratic_range``
  again), the second is bounded by ``centred.dual_bound`` (the sum-zero constraint lets any
  lambda be taken from every value).

Sound for any t-box: nothing assumes the expansion point is an input of the class. Float64 with
the allowances of ``affine`` (RELATIVE_SLACK of every product's magnitude) and ``zonotope.FN_RTOL``
on the float exp and the weights computed from it (ahat, J: the Taylor identity holds for the
exact ahat and J, and their float values differ by less than FN_RTOL per entry, which adds
FN_RTOL (1 + sum_m D_m) to every rho_k).
"""

from __future__ import annotations

import numpy as np

from . import centred
from .affine import RELATIVE_SLACK, TINY, Forms

FN_RTOL = 1e-13  # as zonotope.FN_RTOL: a float exp, sum and quotient err by a few ulp


def gamma(count: int) -> float:
    """Twice Higham's gamma_count: the relative error of a float sum or dot product of count terms."""
    u = 2.0 ** -53
    return 2 * count * u / (1 - count * u)


def quadratic_range(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[min, max] enclosures of v^T B_c v over v in [-1, 1]^N for each B_c of B [..., N, N]
    (diagonal terms in [min(B_aa, 0), max(B_aa, 0)], each pair within +-|B_ab + B_ba|)."""
    diag = np.diagonal(B, axis1=-2, axis2=-1)
    pairs = np.abs(B + np.swapaxes(B, -1, -2)).sum(axis=(-2, -1))
    off = (pairs - np.abs(2 * diag).sum(axis=-1)) / 2
    return np.minimum(diag, 0).sum(axis=-1) - off, np.maximum(diag, 0).sum(axis=-1) + off


def score_forms(M: np.ndarray, z: Forms, i: int, cols: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tau [K], T [K, n], e [K]) with t_k = z_i^T M (z_k - z_0) in tau_k + T_k . u_cols +- e_k for
    k = 0..i (K = i + 1) over every u and remainder; u_cols: the contents of tokens 1..i (the only
    ones streams 0..i depend on, by causality)."""
    A = z.A[:i + 1, :, cols]  # [K, d, n]
    b = z.b[:i + 1]
    r = z.r[:i + 1] + np.abs(z.A[:i + 1, :, cols.stop:]).sum(axis=2)  # 0 by causality; kept sound
    yb, yA, yr = b - b[0], A - A[0], r + r[0]  # keys minus BOS (A[0] = 0: BOS is one point)
    xb, xA, xr = b[i], A[i], r[i]
    Mt_x = M.T @ xb  # [d]
    My = yb @ M.T  # [K, d]  rows M y_k
    tau = yb @ Mt_x
    T = np.einsum("d,kdn->kn", Mt_x, yA) + np.einsum("kd,dn->kn", My, xA)
    Q = np.matmul((xA.T @ M)[None], yA)  # [K, n, n]: xA^T M yA_k
    q_lo, q_hi = quadratic_range(Q)
    tau = tau + (q_lo + q_hi) / 2
    x_size = np.abs(xb) + np.abs(xA).sum(axis=1)  # |z_i - eps_i| per coordinate
    y_size = np.abs(yb) + np.abs(yA).sum(axis=2)  # [K, d]
    absM = np.abs(M)
    rem = (xr @ absM) @ (y_size + yr).T + (x_size @ absM) @ yr.T  # eps_i^T M y + x^T M eps_k
    n, d = A.shape[2], A.shape[1]
    slack = (RELATIVE_SLACK + gamma(d * (n * n + 2 * n + 4))) * ((x_size + xr) @ absM @ (y_size + yr).T) * 4 + TINY
    e = (q_hi - q_lo) / 2 + rem + slack
    tau[0], T[0], e[0] = 0.0, 0.0, 0.0  # BOS minus itself: exactly 0
    return tau, T, e


def jacobian(ahat: np.ndarray) -> np.ndarray:
    """d softmax / d t at the weights ahat: diag(ahat) - ahat ahat^T."""
    return np.diag(ahat) - np.outer(ahat, ahat)


def taylor_remainder(tau: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] per k of a_k(t) - ahat_k - J_k (t - tau) over |t - tau| <= D (exact ahat, J at tau)."""
    with np.errstate(over="ignore"):
        up, down = np.exp(np.minimum(tau + D - tau.max(), 700.0)), np.exp(tau - D - tau.max())
    others = (1.0 - np.eye(len(D))) @ down  # each a sum of non-negative terms (no cancellation)
    a_plus = np.minimum(1.0, up / (up + others * (1 - 4 * FN_RTOL)) * (1 + 4 * FN_RTOL))
    a_plus = np.where(np.isfinite(a_plus) & (tau + D - tau.max() <= 700.0), a_plus, 1.0)  # capped exp: no bound
    Dmax = float(D.max())
    xbar = min(Dmax, float(a_plus @ D))
    var = min(Dmax ** 2, float(a_plus @ D ** 2))
    q = (D + xbar) ** 2
    slack = RELATIVE_SLACK * (1 + q + var)
    return -a_plus * (var / 2 + slack), a_plus * (q / 2 + slack)


def intersect_box(d_lo, d_hi, ahat, g1, lo, hi, fl):
    """delta_k = a_k - ahat_k - g_k in [d_lo_k, d_hi_k], narrowed by lo_k <= a_k <= hi_k for every
    |g_k| <= g1_k (the weights' linear part G_k . u over the box): delta_k >= lo_k - ahat_k - g1_k
    and <= hi_k - ahat_k + g1_k (``fl``: the float differences' allowance)."""
    new_lo = np.maximum(d_lo, lo - ahat - g1 - fl)
    new_hi = np.minimum(d_hi, hi - ahat + g1 + fl)
    return np.minimum(new_lo, new_hi), np.maximum(new_lo, new_hi)


def output(M: np.ndarray, w: Forms, z: Forms, i: int, box: tuple[np.ndarray, np.ndarray] | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A [d, N], b [d], r [d]) enclosing o_i = sum_{k<=i} a_ik w_k (softmax weights of z's scores
    under M, w the value images), plus the weights' enclosure a_k in [lo_k, hi_k] from the
    linearisation (for the callers that intersect it with others)."""
    L, d, N = z.A.shape
    n = d - 3
    K = i + 1
    cols = slice(0, i * n)  # tokens 1..i
    tau, T, e = score_forms(M, z, i, cols)
    D = np.abs(T).sum(axis=1) + e
    s = np.exp(tau - tau.max())
    ahat = s / s.sum()
    J = jacobian(ahat)
    R_lo, R_hi = taylor_remainder(tau, D)
    if i > 1:  # softmax is shift-invariant: R(x) = R(x - c 1), so the keys' common part may leave D
        phi = T[1:].mean(axis=0)
        lo2, hi2 = taylor_remainder(tau, np.abs(T - phi).sum(axis=1) + e)
        R_lo, R_hi = np.maximum(R_lo, lo2), np.minimum(R_hi, hi2)
    G = J @ T  # [K, n]
    g1 = np.abs(G).sum(axis=1)
    fl = FN_RTOL * (1 + D.sum()) * 2 + RELATIVE_SLACK * (np.abs(J) @ (np.abs(T).sum(axis=1) + e + np.abs(tau)) + 1 + g1) + TINY
    spread = np.abs(J) @ e
    d_lo, d_hi = R_lo - spread - fl, R_hi + spread + fl  # delta_k = a_k - ahat_k - G_k . u
    if box is not None:
        d_lo, d_hi = intersect_box(d_lo, d_hi, ahat, g1, box[0][:K], box[1][:K], fl)
    # sum_k delta_k = 1 - sum_k ahat_k - (sum_k G_k) . u: zero for the exact J, up to rounding here
    eps = abs(1 - ahat.sum()) + np.abs(G.sum(axis=0)).sum() + 8 * K * 2.0 ** -53 * (1 + g1.sum())
    wb, wA = w.b[:K], w.A[:K, :, cols]
    wr = w.r[:K] + np.abs(w.A[:K, :, cols.stop:]).sum(axis=2)  # 0 by causality; kept sound
    w_rad = np.abs(wA).sum(axis=2) + wr  # [K, d]
    # o = sum_k (ahat_k + G_k u)(wb_k + wA_k u + ew_k) + sum_k delta_k w_k
    b = ahat @ wb
    A_cols = np.einsum("k,kdn->dn", ahat, wA) + wb.T @ G  # [d, n]
    Bq = np.matmul(G.T[None], wA.transpose(1, 0, 2))  # [d, n, n] the u-u part: sum_k G_k (x) wA_k[c]
    q_lo, q_hi = quadratic_range(Bq)
    up = centred.dual_bound(wb - w_rad, wb + w_rad, d_lo, d_hi, eps)
    down = centred.dual_bound(-(wb + w_rad), -(wb - w_rad), d_lo, d_hi, eps)
    b = b + (q_lo + q_hi) / 2 + (up - down) / 2
    r = (q_hi - q_lo) / 2 + (up + down) / 2 + (ahat + g1) @ wr
    mag = (ahat + g1 + np.maximum(np.abs(d_lo), np.abs(d_hi))) @ (np.abs(wb) + w_rad)
    ncol = i * n
    r = r + gamma(K * ncol * ncol + 8) * 4 * (g1 @ w_rad)  # the quadratic's float sums
    r = r + RELATIVE_SLACK * 4 * (mag + np.abs(b)) * (K + ncol) + TINY
    A = np.zeros((d, N))
    A[:, cols] = A_cols
    return A, b, r, ahat - g1 + d_lo, ahat + g1 + d_hi
