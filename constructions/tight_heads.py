"""A single softmax head that attains T1(a)'s bound on the equal-content sequences with content 0.

T1's proof uses, besides the BOS query, only the equal-content sequences of one content c at a
time (every content token and the trigger carry c). This head makes every step of the T1(a)
chain tight at c = 0 and L = 4, so no smaller constant can be proved from those hypotheses.

Value map M = W_V (W_O = I), columns on the flags (g = trigger flag, h = content flag):

    M x_BOS = -eta e_h,   M x_content(0) = g_t e_g + h_t e_h,   M x_trigger(0) = g_r e_g + h_r e_h

(content coordinates pass through unchanged). Scores read the flags only: a content query puts
logits (log E, 0, log kappa) on (BOS, content keys, trigger key); the trigger query puts
(log A, 0, log eps). With q = A + eps the trigger rows are nearly all on the content keys
(rho = 1 + q -> 1), and the images solve the trigger equations with the errors the
certificate of ``content_flag_lower_bound`` needs to be tight (delta_2 = +eta, delta_3 = -eta on
h; zero on g):

    h_t = 5/6 - 3 eta + q (1/6 - 2 eta),  eps h_r = (1 + q)(1/2 + eta) + A eta - h_t,
    g_t = (1 - q)/6,                      eps g_r = (1 + 2q)/3,

and E = (h_t - eta)/eta makes the error at the pre-trigger query i = 2 (trigger at 3) exactly
+eta on h, so there 1 - a_20 = 2 eta/(h_t + eta) = f_pre(eta) (5/6 - 2 eta)/(5/6 - 2 eta +
q (1/6 - 2 eta)) -> f_pre(eta) as q -> 0. With kappa <= eps^2 the huge trigger image barely
reaches the query after the trigger. All parameters are rationals; the scores are their logs,
so the evaluator in sympy is exact (exp(log r) = r).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from . import reference, task
from .errors import BadInput

DEFAULT = {"eta": Fraction(1, 1000), "A": Fraction(1, 2000), "eps": Fraction(1, 2000)}


def t1a_parameters(eta: Fraction, A: Fraction, eps: Fraction) -> dict[str, Fraction]:
    """The exact images and weights of the module docstring."""
    if not (0 < eta < Fraction(1, 12) and A > 0 and eps > 0):
        raise BadInput("tight head needs 0 < eta < 1/12 and A, eps > 0")
    q = A + eps
    h_t = Fraction(5, 6) - 3 * eta + q * (Fraction(1, 6) - 2 * eta)
    return {
        "eta": eta, "A": A, "eps": eps, "kappa": eps * eps, "E": (h_t - eta) / eta,
        "h_b": -eta, "h_t": h_t, "h_r": ((1 + q) * (Fraction(1, 2) + eta) + A * eta - h_t) / eps,
        "g_t": (1 - q) / 6, "g_r": (1 + 2 * q) / (3 * eps),
    }


def build_t1a(d: int = 4, eta: Fraction = DEFAULT["eta"], A: Fraction = DEFAULT["A"],
              eps: Fraction = DEFAULT["eps"]) -> reference.Network:
    """The tight head (sympy weights: the scores are logs of rationals)."""
    import sympy

    if not isinstance(d, int) or d < 4:
        raise BadInput(f"construction field 'd' must be an integer >= 4, got {d!r}")
    p = {k: sympy.Rational(v.numerator, v.denominator) for k, v in t1a_parameters(eta, A, eps).items()}
    zero, one = sympy.Integer(0), sympy.Integer(1)
    b, t, h = task.BOS_FLAG, task.TRIGGER_FLAG, task.content_flag(d)
    W_Q = [[zero] * d for _ in range(d)]
    W_Q[0][h], W_Q[0][t] = sympy.log(p["E"]), sympy.log(p["A"])  # logit on BOS
    W_Q[1][h], W_Q[1][t] = sympy.log(p["kappa"]), sympy.log(p["eps"])  # logit on the trigger key
    W_K = [[zero] * d for _ in range(d)]
    W_K[0][b], W_K[1][t] = one, one
    W_V = [[one if (r == c and task.CONTENT_START <= c < h) else zero for c in range(d)] for r in range(d)]
    W_V[h][b] = p["h_b"]
    W_V[t][t], W_V[h][t] = p["g_r"], p["h_r"]
    W_V[t][h], W_V[h][h] = p["g_t"], p["h_t"]
    return reference.single_head("softmax", W_Q, W_K, W_V, reference.identity(d, zero, one))


def equal_content_report(net: reference.Network, L: int, c: Any = 0) -> dict[str, Any]:
    """Exact (sympy) max-abs error over the BOS query and every position of the equal-content
    sequences with content ``c`` (every trigger j), and the smallest BOS mass at a query before
    the trigger, with where it occurs."""
    import sympy

    c = sympy.nsimplify(c)
    worst, low, where = sympy.Integer(0), sympy.Integer(1), None
    for j in range(2, L):
        X = task.make_sequence([[c] * (net.d - 3)] * (L - 1), j, sympy.Integer(0), sympy.Integer(1))
        Y, patterns = reference.forward(net, X, "sympy")
        T = task.target(X, j)
        worst = max([worst] + [abs(sympy.nsimplify(y - t)) for yr, tr in zip(Y, T) for y, t in zip(yr, tr)])
        for i in range(1, j):
            a = sympy.nsimplify(patterns[0][0][i][0])
            if a < low:
                low, where = a, (i, j)
    return {"eta": worst, "min_bos_pre": low, "where": where}
