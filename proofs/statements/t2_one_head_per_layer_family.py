"""Question (b), the candidate two-layer construction: where it breaks.

The family F (the candidate construction of question (b), widened): two residual layers with one softmax head each;
layer 1's scores read only the flags; layer 2's scores do not read the contents (its weights are
the same for every content); both value maps send the content coordinate to itself times mu_1,
mu_2 and write contents nowhere else; anything on the flags (layer 1 may write position-dependent
features into the flag coordinates, e.g. its content-flag mass into the BOS coordinate). Then the
layers add T X to the stream, with A_1, A_2 the non-BOS weight matrices (rows = queries) and

    T = mu_1 A_1 + mu_2 A_2 + mu_1 mu_2 A_2 A_1            (content coordinate, every content).

Statement ``t2_one_head_per_layer_flag_family`` (proved): no member of F solves the task with
error exactly 0 at L >= 6. Steps (all checked):

1. Before the trigger layer 1 is uniform: A_1[i, k] = 1/(P + i). For any weights A_2[i, k] = w_ik,
   T[i, k] - T[i, k+1] = mu_2 (w_ik (1 + mu_1/(P + k)) - w_i,k+1), so exact cancellation forces
   w_i,k+1 / w_ik = R_k = (P + k + mu_1)/(P + k), i.e. A_2[i, k] = c_i / G_{k-1}; and
   T[i, i] = 0 forces mu_1 != 0 (w_ii = -mu_1/(mu_2 (P + i + mu_1)) is a softmax weight, so > 0).
2. Layer 1's output at a key k before the trigger is M_1 (P e_BOS + sum_{m<=k} x_m)/(P + k), so
   X^1_k's non-content coordinates are U + f_k V with f_k = k/(P + k) (exact evaluator, generic
   layer 1); layer 2's score s_ik = y_i . W y_k is then alpha_i + gamma_i f_k, and its weights have
   w_i,k+1 / w_ik = exp(gamma_i (f_{k+1} - f_k)).
3. Row 4 (a query before the trigger only when L >= 6) holds the ratios R_1, R_2, R_3, all with
   its one gamma_4; with f_{k+1} - f_k = P/((P + k)(P + k + 1)) they need
   phi(P + 1) = phi(P + 2) = phi(P + 3) = gamma_4 P, phi(x) = x (x + 1) log(1 + mu_1/x).
4. With u = mu_1/x in (-1, oo): phi'' = A(u) + B(u)/x and phi' = x C_1(u) + C_0(u), where
   A <= 0 on (-1, 0), B = -u^2/(1 + u)^2 < 0 for u != 0, and C_0, C_1 >= 0 on (0, oo) (interval
   checks). So for mu_1 < 0 phi is concave, and three equal values at x, x + 1, x + 2 would make it
   constant there (phi'' = 0, impossible as B < 0); for mu_1 > 0 phi is non-decreasing and two
   equal values would make phi' = 0 on an interval, impossible as C_0 > 0 there (argued: C_0 is
   strictly increasing from C_0(0) = 0). Contradiction.

At L = 5 the rows before the trigger leave phi(P + 1) = phi(P + 2) (one relation: a one-parameter
family; e.g. P = 1, mu_1 = -3/2, gamma = -12 log 2, key weights 2^-6, 2^-8, 2^-9, checked exactly
in ``exact_point_at_length_5``), and what fails there are the BOS column and the trigger rows
(numerical, proofs/README.md). Error -> 0 (rather than error 0) inside F is not covered here.
"""

from __future__ import annotations

import sympy

from constructions import reference, task

from .algebra import Atom, certificate, is_zero
from .verdict import Evidence, Verdict, timed

NAME = "t2_one_head_per_layer_flag_family"
CITES = ()
D = 4
L_ROWS = 6  # rows 1..4 before the trigger (j = 5): three ratios R_1, R_2, R_3
P, mu1, mu2 = sympy.Symbol("P", positive=True), sympy.Symbol("mu_1", real=True), sympy.Symbol("mu_2", real=True)
x = sympy.Symbol("x", positive=True)
u = sympy.Symbol("u", real=True)


def content_transfer(w: dict[tuple[int, int], sympy.Expr], n: int) -> sympy.Matrix:
    """T = mu_1 A_1 + mu_2 A_2 + mu_1 mu_2 A_2 A_1 on the first n rows before the trigger."""
    A1 = sympy.Matrix(n, n, lambda i, k: 1 / (P + i + 1) if k <= i else 0)
    A2 = sympy.Matrix(n, n, lambda i, k: w[(i + 1, k + 1)] if k <= i else 0)
    return mu1 * A1 + mu2 * A2 + mu1 * mu2 * A2 * A1


def _ratio_step(ev: Evidence) -> None:
    n = L_ROWS - 2
    w = {(i, k): sympy.Symbol(f"w_{i}{k}", positive=True) for i in range(1, n + 1) for k in range(1, i + 1)}
    T = content_transfer(w, n)
    ok = all(is_zero(T[i - 1, k - 1] - T[i - 1, k] - mu2 * (w[(i, k)] * (1 + mu1 / (P + k)) - w[(i, k + 1)]))
             for i in range(2, n + 1) for k in range(1, i))
    ev.step(ok, "before the trigger, T[i,k] - T[i,k+1] = mu_2 (w_ik (1 + mu_1/(P+k)) - w_i,k+1) (rows 1..4, "
                "symbolic weights): exact cancellation forces w_i,k+1/w_ik = (P + k + mu_1)/(P + k)")
    ok = all(is_zero(T[i - 1, i - 1] - (mu1 / (P + i) + mu2 * w[(i, i)] * (1 + mu1 / (P + i)))) for i in range(1, n + 1))
    ev.step(ok, "T[i,i] = mu_1/(P+i) + mu_2 w_ii (P + i + mu_1)/(P + i): T[i,i] = 0 with w_ii > 0 needs mu_1 != 0")


def layer_one(d: int = D) -> reference.Network:
    """Layer 1 of F as a network: flag-reading scores (BOS weight P at content queries), a value map
    acting as mu_1 on the content coordinate and as a generic matrix on the flags."""
    zero, one = sympy.Integer(0), sympy.Integer(1)
    f, t, c = task.content_flag(d), task.TRIGGER_FLAG, task.CONTENT_START
    W_Q = [[zero] * d for _ in range(d)]
    W_Q[task.BOS_FLAG][f] = sympy.log(P)
    W_Q[t][t] = sympy.Symbol("s_tt", real=True)
    flags = (task.BOS_FLAG, t, f)
    M = [[sympy.Symbol(f"F_{r}{k}", real=True) if (r in flags and k in flags) else zero for k in range(d)]
         for r in range(d)]
    M[c][c] = mu1
    eye = reference.identity(d, zero, one)
    layer = reference.Layer((reference.as_matrix(W_Q),), (eye,), (eye,), reference.as_matrix(M))
    return reference.Network("softmax", (layer,), residual=True)


def _feature_step(ev: Evidence) -> None:
    net = layer_one()
    contents = [[sympy.Symbol(f"c{p}", real=True)] for p in range(1, L_ROWS)]
    X = task.make_sequence(contents, L_ROWS - 1, sympy.Integer(0), sympy.Integer(1))
    X1, _ = reference.forward(net, X, "sympy")
    flags = (task.BOS_FLAG, task.TRIGGER_FLAG, task.content_flag(D))
    f = {k: sympy.Rational(1) * k / (P + k) for k in range(1, L_ROWS - 1)}
    V = [sympy.cancel((X1[2][r] - X1[1][r]) / (f[2] - f[1])) for r in flags]
    U = [sympy.cancel(X1[1][r] - f[1] * v) for r, v in zip(flags, V)]
    ok = all(is_zero(X1[k][r] - (U[n] + f[k] * V[n])) for k in f for n, r in enumerate(flags))
    content = all(not X1[k][r].free_symbols & {s[0] for s in contents} for k in f for r in flags)
    ev.step(ok and content, "exact evaluator, generic layer 1 of F: before the trigger every X^1_k (k = 1..4) has "
                            "non-content coordinates U + f_k V, f_k = k/(P+k), with no content in them; so layer 2's "
                            "score is alpha_i + gamma_i f_k and its weights have w_i,k+1/w_ik = exp(gamma_i (f_k+1 - f_k))")
    ev.step(all(is_zero(f[k + 1] - f[k] - P / ((P + k) * (P + k + 1))) for k in (1, 2, 3)),
            "f_{k+1} - f_k = P/((P+k)(P+k+1)); row 4 holds R_1, R_2, R_3 with its one gamma_4, and log R_k = "
            "gamma_4 P/((P+k)(P+k+1)) for k = 1, 2, 3 is phi(P+k) = gamma_4 P, phi(x) = x(x+1) log(1 + mu_1/x)")


def phi(xx: sympy.Expr = x) -> sympy.Expr:
    return xx * (xx + 1) * sympy.log(1 + mu1 / xx)


A_U = 2 * sympy.log(1 + u) - 4 * u / (1 + u) + u * (2 + u) / (1 + u) ** 2
B_U = -u ** 2 / (1 + u) ** 2
C1_U = 2 * sympy.log(1 + u) - u / (1 + u)
C0_U = sympy.log(1 + u) - u / (1 + u)


def _phi_step(ev: Evidence) -> None:
    at = {u: mu1 / x}
    ev.step(is_zero(sympy.diff(phi(), x, 2) - (A_U + B_U / x).xreplace(at)),
            "phi'' = A(u) + B(u)/x with u = mu_1/x, B = -u^2/(1+u)^2")
    ev.step(is_zero(sympy.diff(phi(), x) - (x * C1_U + C0_U).xreplace(at)), "phi' = x C_1(u) + C_0(u)")
    neg = sympy.Interval.open(-1, 0)
    pos = sympy.Interval.open(0, sympy.oo)
    atoms = [Atom("-A", -A_U, "interval"), Atom("C_1", C1_U, "interval"), Atom("C_0", C0_U, "interval")]
    ok, why = certificate(-A_U, [(1, ["-A"])], atoms, u, neg)
    ev.step(ok, f"A(u) <= 0 on (-1, 0) (mu_1 < 0): {why}")
    for name, expr in (("C_1", C1_U), ("C_0", C0_U)):
        ok, why = certificate(expr, [(1, [name])], atoms, u, pos)
        ev.step(ok, f"{name}(u) >= 0 on (0, oo) (mu_1 > 0): {why}")
    ev.step(is_zero(sympy.diff(C0_U, u) - u / (1 + u) ** 2), "C_0' = u/(1+u)^2 > 0 on (0, oo), so C_0 > 0 there")
    ev.note("mu_1 < 0: phi concave (phi'' <= 0), so phi(x) = phi(x+1) = phi(x+2) would make phi affine, hence "
            "constant, on [x, x+2], i.e. phi'' = 0 there, impossible since B(u) < 0 for u != 0; mu_1 > 0: phi' >= "
            "x C_1 + C_0 > 0, so phi is increasing and has no two equal values (then even L = 5 fails)")


def exact_point_at_length_5() -> dict:
    """P = 1, mu_1 = -3/2: R_1 = 1/4, R_2 = 1/2 and gamma = -12 log 2 give the key weights
    exp(gamma f_k) = 2^-6, 2^-8, 2^-9 (k = 1, 2, 3), whose ratios are R_1 and R_2 exactly."""
    p, m = sympy.Integer(1), sympy.Rational(-3, 2)
    gamma = -12 * sympy.log(2)
    weights = [sympy.nsimplify(sympy.exp(gamma * k / (p + k))) for k in (1, 2, 3)]
    ratios = [(p + k + m) / (p + k) for k in (1, 2)]
    return {"weights": weights, "ratios": ratios,
            "holds": all(is_zero(weights[k] / weights[k - 1] - ratios[k - 1]) for k in (1, 2))}


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        _ratio_step(ev)
        _feature_step(ev)
        _phi_step(ev)
        point = exact_point_at_length_5()
        ev.step(point["holds"], f"L = 5 is not excluded this way: P = 1, mu_1 = -3/2, gamma = -12 log 2 give key "
                                f"weights {point['weights']} with ratios {point['ratios']} (exact)")
        ev.case("family F at L >= 6, d = 4 (other d: the same on each content coordinate), every P > 0, mu_1, mu_2")

    return timed(NAME, "no two-layer residual stack of one softmax head per layer in the candidate family F (layer-1 "
                       "scores read only the flags, layer-2 scores read no contents, value maps scalar on the content "
                       "coordinate) solves the task with error exactly 0 at L >= 6: the rows before the trigger need "
                       "phi(P+1) = phi(P+2) = phi(P+3), phi(x) = x(x+1) log(1 + mu_1/x), which no mu_1 allows",
                 body, cites=CITES)
