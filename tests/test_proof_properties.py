"""Property tests (hypothesis): the proved inequalities hold in floating point on random
instances, with the stated constants; T1 holds on random perturbed heads (with eta measured on
exactly the sequences the proof uses); the softmax family meets T1's bound at every beta."""

import math
import random

import numpy as np
import sympy
from hypothesis import given, settings, strategies as st

from constructions import reference, softmax_head, task
from proofs.statements.t1_single_layer_sink import f_all, f_pre

SETTINGS = settings(max_examples=25, deadline=None)
F_PRE = sympy.lambdify(sympy.Symbol("eta", nonnegative=True), f_pre())
F_ALL = sympy.lambdify(sympy.Symbol("eta", nonnegative=True), f_all())
TOL = 1e-12


def _simplex(rng, n):
    w = rng.exponential(size=n + 1) ** 3  # some rows nearly one-hot
    return w / w.sum()


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 8), d=st.integers(2, 5), beta=st.floats(0, 2))
def test_sink_bound_direction_holds(seed, n, d, beta):
    rng = np.random.default_rng(seed)
    a = _simplex(rng, n)
    V = rng.normal(size=(n + 1, d))
    u = rng.normal(size=d)
    u /= np.abs(u).sum()  # ||u||_1 = 1: dual of the max-abs norm
    p = V @ u
    V[0] += u / (u @ u) * (-beta - p[0])  # u . v_0 = -beta exactly
    m = (V[1:] @ u).min()
    o = a @ V
    eps = np.abs(o).max()
    if m > 0:  # the certificate's form: a_0 (m + beta) >= m - eps, for every eps >= ||o||
        assert a[0] * (m + beta) >= m - eps - TOL


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 8), d=st.integers(1, 4))
def test_convex_hull_bound_holds(seed, n, d):
    rng = np.random.default_rng(seed)
    a = _simplex(rng, n)
    U = rng.normal(size=(n + 1, d)) + rng.normal(size=d) * 3  # a shared offset keeps the hull off 0
    o = a @ U
    # a certified lower bound on the distance from 0 to the hull: min_k w . u_k for unit w
    candidates = [U[1:].mean(0)] + list(U[1:])
    delta = max(min(U[1:] @ (w / np.linalg.norm(w))) for w in candidates if np.linalg.norm(w) > 0)
    if delta > 0:
        bound = (delta - np.linalg.norm(o)) / (delta + np.linalg.norm(U[0]))
        assert a[0] >= bound - TOL


@SETTINGS
@given(A=st.floats(0.01, 100), B=st.floats(1e-6, 1), v=st.floats(0.1, 2), n=st.integers(1, 30), slack=st.floats(0, 1))
def test_token_consistency_bound_holds(A, B, v, n, slack):
    eps = n * B * v / (A + n * B) * (1 + slack)  # the error at position n is at most eps
    if eps < v:
        assert A / (A + B) >= 1 - eps / (n * v - (n - 1) * eps) - TOL


def _perturbed_family_head(d, beta, sigma, rng):
    net = softmax_head.build(d, float(beta))
    layer = net.layers[0]
    noisy = [[[float(x) + rng.gauss(0, sigma) for x in row] for row in m]
             for m in (layer.W_Q[0], layer.W_K[0], layer.W_V[0], layer.W_O)]
    return reference.single_head("softmax", *noisy)


def _max_error(net, X, j):
    Y, pat = reference.forward(net, X, "float")
    T = task.target(X, j)
    return max(abs(y - t) for yr, tr in zip(Y, T) for y, t in zip(yr, tr)), pat[0][0]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), beta=st.floats(6.5, 12), sigma=st.sampled_from([0.0, 1e-4, 1e-3, 1e-2]),
       j=st.integers(2, 4))
def test_t1_holds_on_perturbed_heads(seed, beta, sigma, j):
    """eta is measured on exactly what the proof uses: the query's own sequence, and for each
    content present the equal-content sequences with the trigger at 2, 3, 4 (the BOS query is
    position 0 of every one of them). d = 4, L = 5."""
    rng = random.Random(seed)
    d, L = 4, 5
    net = _perturbed_family_head(d, beta, sigma, rng)
    contents = [[rng.uniform(-1, 1) for _ in range(d - 3)] for _ in range(L - 1)]
    X = task.make_sequence(contents, j, 0.0, 1.0)
    eta, pattern = _max_error(net, X, j)
    for c in contents:
        for jj in (2, 3, 4):
            eta = max(eta, _max_error(net, task.make_sequence([c] * (L - 1), jj, 0.0, 1.0), jj)[0])
    for i in range(1, L):
        if i < j and eta <= 1 / 12:
            assert pattern[i][0] >= 1 - F_PRE(eta) - TOL
        if i != j and eta <= 1 / 120:
            assert pattern[i][0] >= 1 - F_ALL(eta) - TOL


@SETTINGS
@given(beta=st.floats(5.2, 30), L=st.integers(5, 64))
def test_softmax_family_meets_t1_bound(beta, L):
    eta = max((L - 1) / (math.exp(beta) + L - 1), math.exp(-beta) / (2 + math.exp(-beta)))
    assert math.isclose(eta, float(softmax_head.max_error(beta, L)), rel_tol=1e-12)
    for i in range(1, L):
        gap = 1 - float(softmax_head.bos_mass(beta, i))
        if i <= L - 2 and eta <= 1 / 12:  # a query before a trigger at i + 1 <= L - 1
            assert gap <= F_PRE(eta) + TOL
        if eta <= 1 / 120:
            assert gap <= F_ALL(eta) + TOL


def _trigger_equations_solution(A, B, C, bos, dev2, dev3, coordinate_targets):
    """Images (t, r) along one coordinate with BOS image ``bos`` whose trigger errors at j = 2, 3
    are exactly dev2, dev3: solves A bos + (j-1) B t + C r = Z_j (target_j + dev_j), j = 2, 3."""
    Z = {j: A + (j - 1) * B + C for j in (2, 3, 4)}
    rhs = {j: Z[j] * (coordinate_targets(j) + dev) - A * bos for j, dev in ((2, dev2), (3, dev3))}
    t = (rhs[3] - rhs[2]) / B
    r = (rhs[2] - B * t) / C
    return t, r, Z


@settings(max_examples=120, deadline=None)
@given(logA=st.floats(-8, 3), logC=st.floats(-8, 3), dev=st.lists(st.floats(-1, 1), min_size=6, max_size=6),
       scale=st.sampled_from([1e-4, 1e-3, 4e-3, 8e-3]))
def test_trigger_row_lemmas_hold_where_the_trigger_barely_attends_to_itself(logA, logC, dev, scale):
    """Steps 3, 5, 6 of T1 on the trigger-row equations directly, in the regime the proof worries
    about (A, C << B): pick A, B = 1, C and the errors, solve for the images, measure eta over all
    the errors used (BOS images and the j = 2, 3, 4 trigger errors), check the stated bounds."""
    A, B, C = math.exp(logA), 1.0, math.exp(logC)
    gb, hb, g2, g3, h2, h3 = (scale * x for x in dev)
    gt, gr, Z = _trigger_equations_solution(A, B, C, gb, g2, g3, lambda j: 1 / j)
    ht, hr, _ = _trigger_equations_solution(A, B, C, hb, h2, h3, lambda j: (j - 1) / j)
    h4 = (A * hb + 3 * B * ht + C * hr) / Z[4] - 3 / 4  # the j = 4 error these images produce
    eta = max(abs(x) for x in (gb, hb, g2, g3, h2, h3, h4))
    if eta <= 1 / 12:
        assert ht >= 5 / 6 - 3 * eta - TOL
        assert gr >= 2 / 3 - 3 * eta + (B / C) * (1 / 3 - 4 * eta) + (A / C) * (2 / 3 - 4 * eta) - 1e-9 * (1 + B / C)
    if eta <= 1 / 120:
        rho = Z[2] / B
        assert rho * (1 + 48 * eta) >= 2 - 48 * eta - TOL and rho * (1 - 48 * eta) <= 2 + 48 * eta + TOL
        m_r = 1 - 6 * eta - 8 * eta * (1 + 48 * eta) / (1 - 96 * eta)
        m_t = 1 - 2 * eta - 4 * eta * (2 + 48 * eta) / (1 - 48 * eta)
        assert gt + ht >= m_t - 1e-9 and gr + hr >= m_r - 1e-9
