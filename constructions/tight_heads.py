"""Single softmax heads that attain T1's bounds on the equal-content sequences with content 0.

``build_t1b`` (below) comes within 0.9988 of T1(b)'s bound at L = 5; the rest of this docstring
is ``build_t1a``, exactly tight for T1(a) at L = 4.

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


def flag_head(d: int, images: dict[str, tuple[Fraction, Fraction]], content_query: tuple[Fraction, Fraction],
              trigger_query: tuple[Fraction, Fraction]) -> reference.Network:
    """A head whose scores read the flags only and whose values move only the two flags.

    ``images[t] = (g, h)`` for t in ("bos", "content", "trigger"): the (trigger-flag, content-flag)
    coordinates of the token's image (content coordinates pass through). ``content_query`` and
    ``trigger_query`` are (weight on BOS, weight on the trigger key) relative to a content key's 1;
    the scores are their logs, so the weights are exact sympy rationals."""
    import sympy

    if not isinstance(d, int) or d < 4:
        raise BadInput(f"construction field 'd' must be an integer >= 4, got {d!r}")
    R = lambda x: sympy.Rational(x.numerator, x.denominator)  # noqa: E731
    zero, one = sympy.Integer(0), sympy.Integer(1)
    b, t, h = task.BOS_FLAG, task.TRIGGER_FLAG, task.content_flag(d)
    W_Q = [[zero] * d for _ in range(d)]
    W_Q[0][h], W_Q[0][t] = sympy.log(R(content_query[0])), sympy.log(R(trigger_query[0]))  # logit on BOS
    W_Q[1][h], W_Q[1][t] = sympy.log(R(content_query[1])), sympy.log(R(trigger_query[1]))  # on the trigger key
    W_K = [[zero] * d for _ in range(d)]
    W_K[0][b], W_K[1][t] = one, one
    W_V = [[one if (r == c and task.CONTENT_START <= c < h) else zero for c in range(d)] for r in range(d)]
    for column, name in ((b, "bos"), (t, "trigger"), (h, "content")):
        W_V[t][column], W_V[h][column] = (R(x) for x in images[name])
    return reference.single_head("softmax", W_Q, W_K, W_V, reference.identity(d, zero, one))


def build_t1a(d: int = 4, eta: Fraction = DEFAULT["eta"], A: Fraction = DEFAULT["A"],
              eps: Fraction = DEFAULT["eps"]) -> reference.Network:
    """The T1(a)-tight head (sympy weights: the scores are logs of rationals)."""
    p = t1a_parameters(eta, A, eps)
    images = {"bos": (Fraction(0), p["h_b"]), "content": (p["g_t"], p["h_t"]), "trigger": (p["g_r"], p["h_r"])}
    return flag_head(d, images, (p["E"], p["kappa"]), (p["A"], p["eps"]))


# Near-tight for T1(b) at L = 5 on content 0: found by SLSQP maximising 1 - a_i0 over the non-trigger
# queries subject to every error <= 1e-4 (the c = 0 equal-content sequences, flags only), rounded to
# 10 decimals. Only the design comes from the optimiser: the error and the BOS mass are recomputed
# exactly (``equal_content_report``). Structure: images ~ (0, 1) (content), (1, 0) (trigger),
# (-eta, -eta) (BOS); the trigger row ~uniform on keys 1..j; content queries put ~1.5/eta on BOS
# and ~3 on the trigger key, so at the query after the trigger both flags err by +eta.
T1B = {
    "images": {"bos": ("-1/10000", "-1/10000"), "content": ("1000513/10000000000", "10003323241/10000000000"),
               "trigger": ("2497253063/2500000000", "2674101/10000000000")},
    "content_query": ("75030007669453/5000000000", "3756002417/1250000000"),
    "trigger_query": ("1/10000000000", "2003201289/2000000000"),
}


def build_t1b(d: int = 4) -> reference.Network:
    """The T1(b)-near-tight head of ``T1B``."""
    pair = lambda v: tuple(Fraction(x) for x in v)  # noqa: E731
    return flag_head(d, {k: pair(v) for k, v in T1B["images"].items()}, pair(T1B["content_query"]),
                     pair(T1B["trigger_query"]))


def equal_content_report(net: reference.Network, L: int, c: Any = 0) -> dict[str, Any]:
    """Exact (sympy) max-abs error over the BOS query and every position of the equal-content
    sequences with content ``c`` (every trigger j), and the smallest BOS mass before the trigger
    and at any non-trigger query i >= 1, with where (query, trigger) they occur."""
    import sympy

    c = sympy.nsimplify(c)
    worst, low = sympy.Integer(0), {"pre": (sympy.Integer(2), None), "nontrigger": (sympy.Integer(2), None)}
    for j in range(2, L):
        X = task.make_sequence([[c] * (net.d - 3)] * (L - 1), j, sympy.Integer(0), sympy.Integer(1))
        Y, patterns = reference.forward(net, X, "sympy")
        T = task.target(X, j)
        worst = max([worst] + [abs(sympy.nsimplify(y - t)) for yr, tr in zip(Y, T) for y, t in zip(yr, tr)])
        for i in (i for i in range(1, L) if i != j):
            a = sympy.nsimplify(patterns[0][0][i][0])
            for key in ("pre", "nontrigger") if i < j else ("nontrigger",):
                if a < low[key][0]:
                    low[key] = (a, (i, j))
    return {"eta": worst, "min_bos_pre": low["pre"][0], "where": low["pre"][1],
            "min_bos_nontrigger": low["nontrigger"][0], "where_nontrigger": low["nontrigger"][1]}


def _rational(x: Any) -> Fraction:
    """An exact sympy / Fraction rational as a Fraction (these heads' patterns and value maps are
    rational: exp(log r) = r); anything else is refused rather than guessed."""
    import sympy

    q = sympy.Rational(x) if not isinstance(x, Fraction) else x
    if isinstance(q, Fraction):
        return q
    if not q.is_Rational:
        raise BadInput(f"expected an exact rational, got {x!r}")
    return Fraction(int(q.p), int(q.q))


def all_inputs_report(net: reference.Network, L: int) -> dict[str, Any]:
    """Exact max-abs error over EVERY input of length L (content in [-1, 1]^(d-3), every trigger
    position), with where it occurs: (trigger j, query i, coordinate r, contents per position).

    These heads' scores read the flags only, so their pattern does not depend on the contents and
    each output coordinate is affine in them: error_{i,r} = a + sum_{k,c} b_{k,c} x_{k,c}. Its
    largest absolute value over the box is |a| + sum |b| exactly, at contents
    sign(a) * sign(b_{k,c}) (a vertex); the pattern is evaluated once per j in sympy (exact)."""
    from .abstaining_heads import pattern
    from .attention import ops

    layer, d, n = net.layers[0], net.d, net.d - 3
    WV = [[_rational(v) for v in row] for row in layer.W_V[0]]
    WO = [[_rational(v) for v in row] for row in layer.W_O]
    V = [[sum((WO[r][m] * WV[m][c] for m in range(d)), Fraction(0)) for c in range(d)] for r in range(d)]
    content = list(range(task.CONTENT_START, d - 1))
    worst, where = Fraction(0), None
    for j in range(2, L):
        P = [[_rational(a) for a in row] for row in pattern(net, L, j, ops("sympy"))]
        flags = task.make_sequence([[0] * n] * (L - 1), j)  # every token's flags, content 0
        target = [Fraction(1, j) if 1 <= k <= j else Fraction(0) for k in range(L)]
        for i in range(L):
            for r in range(d):
                t = target if i == j else [Fraction(0)] * L
                a = sum((P[i][k] * V[r][f] * flags[k][f] for k in range(i + 1) for f in range(d)), Fraction(0))
                a -= sum((t[k] * flags[k][r] for k in range(L)), Fraction(0))
                b = [[(P[i][k] * V[r][c] if k <= i else 0) - (t[k] if c == r else 0) for c in content] for k in range(1, L)]
                e = abs(a) + sum((abs(x) for row in b for x in row), Fraction(0))
                if e > worst:
                    s = 1 if a >= 0 else -1
                    worst, where = e, {"trigger": j, "query": i, "coordinate": r,
                                       "contents": [[s if x >= 0 else -s for x in row] for row in b]}
    return {"eta": worst, "where": where}
