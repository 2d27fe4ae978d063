"""Question (a') for scores that read only the flags: two heads must sink at the trigger.

Class: one softmax layer of two heads whose scores read only the flags (the bilinear form
W_Q^T W_K vanishes on the content coordinates), any value maps, d >= 4, L >= 5, worst-case
max-abs error eta. Such a head sees a token only through its type: at a content query it gives
BOS the unnormalised weight P_h (content keys 1); at the trigger query it gives BOS Q_h and the
trigger itself T_h (content keys 1). Write a, b for the two value maps' entry (content coordinate
-> content coordinate), rho_h = Q_h + T_h - 1 > -1, alpha_h(x) = Q_h/(rho_h + x) for head h's BOS
mass at the trigger j = x.

``t2_two_heads_flag_rows`` (lemma). Half the difference of the outputs on two sequences that
differ in one content (+1 / -1) is that content's coefficient; the exact evaluator, on a generic
layer of this class (symbolic weights, generic value maps), gives

    e0_i = a/(P_1 + i) + b/(P_2 + i)                       queries i = 1, 2 before the trigger
    e1_x = a/(rho_1 + x) + b/(rho_2 + x) - 1/x              a content key at the trigger j = x
    e3_x = a T_1/(rho_1 + x) + b T_2/(rho_2 + x) - 1/x      the trigger's own content, j = x

(x = 2, 3, 4), each within eta of 0. Then a + b = (P_1+2)(P_2+2) e0_2 - (P_1+1)(P_2+1) e0_1, so
|a + b| <= eta K_p when both heads put at most theta on BOS at query 1 (P_h <= p = theta/(1 -
theta), K_p = (p+1)^2 + (p+2)^2), and with delta = eta (1 + K_p)

    d_x  = e1_x - (a + b)/(rho_2 + x)  = a (rho_2 - rho_1)/((rho_1 + x)(rho_2 + x)) - 1/x
    d3_x = e3_x - (a + b) T_2/(rho_2 + x) = a (alpha_2(x) - alpha_1(x)) - 1 - (x - 1) d_x

satisfy |d_x| <= delta and |d3_x| <= delta (certificates).

``t2_two_heads_trigger_spread`` (cites the lemma) and ``t2_two_heads_flag_scores_sink`` (cites
both). With S = a (rho_2 - rho_1) and
N_x = (rho_1 + x)(rho_2 + x), S x = N_x (1 + x d_x), and the monic quadratic N_x has second
difference 2, first-order coefficient rho_1 + rho_2 and constant rho_1 rho_2 on the nodes 2, 3, 4
(Lagrange). Hence, for 0 < delta <= DELTA_MAX and kappa = delta/(1 - 4 delta):

    38 delta S >= 2 - 8 delta                  (so S > 0: a and rho_2 - rho_1 have one sign)
    rho_1 + rho_2 >= (1 - 108 kappa) S,   rho_1 rho_2 <= 144 kappa S
    rho_2 - rho_1 >= (1 - C_SPREAD kappa) S    (when rho_2 > rho_1; cases rho_1 >= 0 and < 0)

(the spread), and, since a alpha_2(2) >= 1 - 2 delta and a = S/(rho_2 - rho_1) (the sink),

    alpha_2(2) >= (1 - 2 delta)(1 - C_SPREAD kappa) >= 1 - C_SINK delta.

When rho_1 > rho_2 the premises are the same after swapping the heads (checked), so head 1
sinks. So some head puts at least 1 - C_SINK delta on BOS at the trigger (j = 2): as eta -> 0
with theta fixed this tends to 1, which is (a') for flag-reading scores. Scores that read the
contents are not covered (``t2_two_heads_sink_at_some_query`` stays open).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import sympy

from constructions import reference, task

from .algebra import Atom, certificate, is_zero
from .verdict import Evidence, Verdict, timed

LEMMA = "t2_two_heads_flag_rows"
SPREAD = "t2_two_heads_trigger_spread"
NAME = "t2_two_heads_flag_scores_sink"
SPREAD_CITES = (LEMMA,)
CITES = (LEMMA, SPREAD)
D, L = 4, 5  # the rows used: queries 1, 2 before the trigger and the trigger at j = 2, 3, 4 (L >= 5)
NODES = (2, 3, 4)  # trigger positions
DELTA_MAX = sympy.Rational(1, 1000)  # the certificates' interval for delta = eta (1 + K_p)
C_SPREAD = 122  # rho_2 - rho_1 >= (1 - C_SPREAD kappa) S
C_SINK = 125  # (1 - 2 delta)(1 - C_SPREAD kappa) >= 1 - C_SINK delta on (0, DELTA_MAX]
CONTENT = task.CONTENT_START  # the content coordinate the proof reads (d = 4: the only one)

R = sympy.Rational
eta = sympy.Symbol("eta", nonnegative=True)
p = sympy.Symbol("p", positive=True)  # theta/(1 - theta): both heads' BOS weight at query 1 is P_h <= p
a, b = sympy.symbols("a b", real=True)
P1, P2, Q1, Q2, T1, T2, R1, R2 = sympy.symbols("P_1 P_2 Q_1 Q_2 T_1 T_2 R_1 R_2", positive=True)
delta = sympy.Symbol("delta", positive=True)
INTERVAL = sympy.Interval.Lopen(0, DELTA_MAX)
kappa = delta / (1 - 4 * delta)
K_p = (p + 1) ** 2 + (p + 2) ** 2


# ----------------------------------------------------------------------------------------
# The lemma: the layer's rows, from the evaluator, and the bounds on d_x, d3_x.


def flag_layer() -> reference.Network:
    """Two heads reading only the flags: W_K = I, W_Q's content row and column 0; the content query
    scores BOS log P_h and the trigger log R_h, the trigger query scores BOS log Q_h and itself
    log T_h (content keys 0). W_V = I, W_O = [M_1 | M_2] with generic content rows (the only rows that
    reach the content coordinate), M_1[c][c] = a, M_2[c][c] = b."""
    f, t, c = task.content_flag(D), task.TRIGGER_FLAG, CONTENT
    zero = sympy.Integer(0)
    queries, blocks = [], []
    for h, (P, Rk, Q, T, value) in enumerate(((P1, R1, Q1, T1, a), (P2, R2, Q2, T2, b)), start=1):
        W_Q = [[zero] * D for _ in range(D)]
        W_Q[task.BOS_FLAG][f], W_Q[t][f] = sympy.log(P), sympy.log(Rk)
        W_Q[task.BOS_FLAG][t], W_Q[t][t] = sympy.log(Q), sympy.log(T)
        queries.append(reference.as_matrix(W_Q))
        # only M's content row reaches the coordinate the proof reads; it is generic
        M = [[sympy.Symbol(f"m{h}_{k}", real=True) if r == c else zero for k in range(D)] for r in range(D)]
        M[c][c] = value
        blocks.append(M)
    eye = reference.identity(D, zero, sympy.Integer(1))
    W_O = tuple(tuple(blocks[h][r][k] for h in range(2) for k in range(D)) for r in range(D))
    return reference.Network("softmax", (reference.Layer(tuple(queries), (eye, eye), (eye, eye), W_O),))


def _sequence(j: int, position: int, sign: int) -> list[list[sympy.Expr]]:
    contents = [[sympy.Integer(sign if p_ == position else 0)] for p_ in range(1, L)]
    return task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))


def half_difference(net: reference.Network, j: int, query: int, position: int) -> sympy.Expr:
    """(error(+1) - error(-1))/2 at ``query``, content coordinate, when the content at ``position``
    is +1 or -1 (all others 0), trigger at j: the exact evaluator and the task's target."""
    errs = []
    for sign in (1, -1):
        X = _sequence(j, position, sign)
        Y, _ = reference.forward(net, X, "sympy")
        errs.append(Y[query][CONTENT] - task.target(X, j)[query][CONTENT])
    return (errs[0] - errs[1]) / 2


def rho(h: int) -> sympy.Expr:
    return (Q1 + T1 - 1) if h == 1 else (Q2 + T2 - 1)


def e0(i: int) -> sympy.Expr:
    return a / (P1 + i) + b / (P2 + i)


def e1(x: int) -> sympy.Expr:
    return a / (rho(1) + x) + b / (rho(2) + x) - R(1, x)


def e3(x: int) -> sympy.Expr:
    return a * T1 / (rho(1) + x) + b * T2 / (rho(2) + x) - R(1, x)


def d(x: int) -> sympy.Expr:
    return e1(x) - (a + b) / (rho(2) + x)


def d3(x: int) -> sympy.Expr:
    return e3(x) - (a + b) * T2 / (rho(2) + x)


def lemma_conclusions(dl: sympy.Expr | None = None) -> dict[str, sympy.Expr]:
    """What the lemma proves >= 0, by name, with delta = eta (1 + K_p) (or ``dl``: the theorem
    writes delta for that number)."""
    dl = eta * (1 + K_p) if dl is None else dl
    out = {}
    for x in NODES:
        out[f"delta + d_{x}"], out[f"delta - d_{x}"] = dl + d(x), dl - d(x)
        out[f"delta + d3_{x}"], out[f"delta - d3_{x}"] = dl + d3(x), dl - d3(x)
    return out


def _premises() -> list[Atom]:
    """|e| <= eta for each coefficient, and P_h <= p. The e0 premises are written over their common
    denominator (P_1 + i)(P_2 + i), the same object as the positive atom below, so that the products in
    the certificates cancel as they are formed (``premise_forms`` checks that the forms are the premises)."""
    atoms = []
    for i in (1, 2):
        den = (P1 + i) * (P2 + i)
        for s, sign in (("+", 1), ("-", -1)):
            atoms.append(Atom(f"eta {s} e0_{i}", (eta * den + sign * (a * (P2 + i) + b * (P1 + i))) / den, "premise"))
    for name, e in [(f"e1_{x}", e1(x)) for x in NODES] + [(f"e3_{x}", e3(x)) for x in NODES]:
        atoms += [Atom(f"eta + {name}", eta + e, "premise"), Atom(f"eta - {name}", eta - e, "premise")]
    return atoms + [Atom("p - P_1", p - P1, "premise"), Atom("p - P_2", p - P2, "premise")]


def premise_forms_hold() -> bool:
    """The premises' written forms are eta -+ e (each coefficient within eta of 0) and p - P_h."""
    plain = {f"eta {s} {n}": eta + sign * e for n, e in [(f"e0_{i}", e0(i)) for i in (1, 2)] +
             [(f"e1_{x}", e1(x)) for x in NODES] + [(f"e3_{x}", e3(x)) for x in NODES]
             for s, sign in (("+", 1), ("-", -1))}
    plain.update({"p - P_1": p - P1, "p - P_2": p - P2})
    return all(is_zero(x.expr - plain[x.name]) for x in _premises())


def _balance(sign: int) -> list[tuple]:
    """eta K_p + sign (a + b) as non-negative terms (sign = +1 or -1)."""
    s1, s2 = ("+", "-") if sign > 0 else ("-", "+")
    return [(1, ["(P_1+2)(P_2+2)", f"eta {s1} e0_2"]), (1, ["(P_1+1)(P_2+1)", f"eta {s2} e0_1"]),
            (1, ["eta", "p - P_1", "p + 2"]), (1, ["eta", "P_1 + 2", "p - P_2"]),
            (1, ["eta", "p - P_1", "p + 1"]), (1, ["eta", "P_1 + 1", "p - P_2"])]


def _times(names: Sequence[str], terms: list[tuple]) -> list[tuple]:
    return [(k, list(names) + list(n)) for k, n in terms]


def check_rows() -> Verdict:
    def body(ev: Evidence) -> None:
        net = flag_layer()
        rows = [(4, i, 1, e0(i), f"query {i} before the trigger (j = 4)") for i in (1, 2)]
        rows += [(x, x, 1, e1(x), f"trigger j = {x}, content key 1") for x in NODES]
        rows += [(x, x, x, e3(x), f"trigger j = {x}, its own content") for x in NODES]
        for j, query, position, formula, label in rows:
            ev.step(is_zero(half_difference(net, j, query, position) - formula),
                    f"{label}: half the difference of the errors for content +1 / -1 is {formula} (evaluator)")
        u, v = sympy.symbols("u v", real=True)
        halves = [Atom("eta - u", eta - u, "premise"), Atom("eta + v", eta + v, "premise")]
        ok, why = certificate(eta - (u - v) / 2, [(R(1, 2), ["eta - u"]), (R(1, 2), ["eta + v"])], halves)
        ev.step(ok, f"|u|, |v| <= eta gives (u - v)/2 <= eta (and -(u - v)/2 by symmetry): {why}; so |e| <= eta "
                    "for each coefficient above")
        ev.step(is_zero((P1 + 2) * (P2 + 2) * e0(2) - (P1 + 1) * (P2 + 1) * e0(1) - (a + b)),
                "a + b = (P_1+2)(P_2+2) e0_2 - (P_1+1)(P_2+1) e0_1")
        ev.step(premise_forms_hold(), "the premises as written below are |e| <= eta for each coefficient and P_h <= p")
        atoms = _premises() + [Atom("(P_1+2)(P_2+2)", (P1 + 2) * (P2 + 2), "positive"),
                               Atom("(P_1+1)(P_2+1)", (P1 + 1) * (P2 + 1), "positive"),
                               Atom("eta", eta, "positive"), Atom("K_p", K_p, "positive"),
                               Atom("p + 1", p + 1, "positive"), Atom("p + 2", p + 2, "positive"),
                               Atom("P_1 + 1", P1 + 1, "positive"), Atom("P_1 + 2", P1 + 2, "positive")]
        for sign in (1, -1):
            ok, why = certificate(eta * K_p + sign * (a + b), _balance(sign), atoms)
            ev.step(ok, f"eta K_p {'+' if sign > 0 else '-'} (a + b) >= 0 (P_h <= p): {why}")
        conclusions = lemma_conclusions()
        for x in NODES:
            beta2, gamma2 = 1 / (rho(2) + x), T2 / (rho(2) + x)
            Z2 = Q2 + T2 + x - 1  # rho_2 + x
            atoms += [Atom(f"beta_2({x})", beta2, "positive"), Atom(f"1 - beta_2({x})", (Z2 - 1) / Z2, "positive"),
                      Atom(f"gamma_2({x})", gamma2, "positive"), Atom(f"1 - gamma_2({x})", (Z2 - T2) / Z2, "positive")]
            for sign in (1, -1):
                s, o = ("+", "-") if sign > 0 else ("-", "+")
                for var, weight in (("d", "beta_2"), ("d3", "gamma_2")):
                    err = "e1" if var == "d" else "e3"
                    terms = [(1, [f"eta {s} {err}_{x}"])] + \
                        _times([f"{weight}({x})"], _balance(-sign)) + [(1, [f"1 - {weight}({x})", "eta", "K_p"])]
                    ok, why = certificate(conclusions[f"delta {s} {var}_{x}"], terms, atoms)
                    ev.step(ok, f"delta {s} {var}_{x} >= 0, delta = eta (1 + K_p): {why}")
        ev.note("a score form vanishing on the content coordinates gives every content query the scores "
                "(BOS, content, trigger) and every trigger query (BOS, content, itself) up to a shift, which "
                "softmax ignores, so the generic layer above is the whole class; other d >= 4: the same on the "
                "first content coordinate with the others 0")
        ev.case("d = 4, L = 5 (queries 1, 2 before the trigger, the trigger at j = 2, 3, 4), symbolic weights "
                "and value maps; any L >= 5")

    return timed(LEMMA, "two softmax heads reading only the flags, max-abs error <= eta, both heads' BOS weight "
                        "at query 1 <= theta (P_h <= p = theta/(1 - theta)): with delta = eta (1 + (p+1)^2 + "
                        "(p+2)^2) the trigger rows' d_x, d3_x (x = 2, 3, 4) satisfy |d_x|, |d3_x| <= delta", body)


# ----------------------------------------------------------------------------------------
# The theorem: the spread of the trigger rows, in the two cases of rho_1's sign.


def _mul(*certs: list[tuple]) -> list[tuple]:
    """The product of sums of atom products, expanded (still a sum of atom products)."""
    out = [(sympy.Integer(1), [])]
    for cert in certs:
        out = [(k1 * k2, n1 + n2) for k1, n1 in out for k2, n2 in cert]
    return out


def _one(*names: str, k=1) -> list[tuple]:
    return [(sympy.sympify(k), list(names))]


@lru_cache(maxsize=None)
def case_variables(case: str) -> dict:
    """Variables of the main case a > 0, rho_2 - rho_1 = Delta > 0: case "I" rho_1 = r >= 0,
    case "II" rho_1 = u - 1 with 0 < u <= 1."""
    av, Dl = sympy.symbols("a Delta", positive=True)
    r1 = sympy.Symbol("r", nonnegative=True) if case == "I" else sympy.Symbol("u", positive=True) - 1
    r2 = r1 + Dl
    N = {x: (r1 + x) * (r2 + x) for x in NODES}
    return {"a": av, "Delta": Dl, "rho_1": r1, "rho_2": r2, "S": av * Dl, "N": N,
            "T_1": r1 + 1 - Q1, "T_2": r2 + 1 - Q2}


def _case_atoms(case: str) -> list[Atom]:
    """The atoms of a case. The lemma's conclusions are written with d_x = (S - N_x/x)/N_x (an identity,
    checked in ``check_sink``) so that N_x (delta +- d_x) is a polynomial and the checks stay fast."""
    v = case_variables(case)
    r1, r2, S, N = v["rho_1"], v["rho_2"], v["S"], v["N"]
    atoms = [Atom("delta", delta, "interval"), Atom("1 - 4 delta", 1 - 4 * delta, "interval"),
             Atom("1 - 2 delta", 1 - 2 * delta, "interval"), Atom("1 - 7 delta", 1 - 7 * delta, "interval"),
             Atom("(1 - 2 delta)/(1 - 4 delta)", (1 - 2 * delta) / (1 - 4 * delta), "interval"),
             Atom("S", S, "positive"), Atom("Delta", v["Delta"], "positive"), Atom("1/S", 1 / S, "positive"),
             Atom("1/a", 1 / v["a"], "positive"), Atom("a alpha_1(2)", v["a"] * Q1 / (r1 + 2), "positive")]
    for x in NODES:
        n_x = S - N[x] / x  # N_x d_x
        atoms += [Atom(f"N_{x}", N[x], "positive"),
                  Atom(f"delta + d_{x}", (delta * N[x] + n_x) / N[x], f"lemma:{LEMMA}"),
                  Atom(f"delta - d_{x}", (delta * N[x] - n_x) / N[x], f"lemma:{LEMMA}")]
    d2 = (S - N[2] / 2) / N[2]
    d3_2 = v["a"] * (Q2 / (r2 + 2) - Q1 / (r1 + 2)) - 1 - d2
    atoms.append(Atom("delta + d3_2", delta + d3_2, f"lemma:{LEMMA}"))
    cc = C_SPREAD - 108
    if case == "I":
        atoms += [Atom("1/rho_2", 1 / r2, "positive"),
                  Atom("h3", R(cc, 2) / (1 - 4 * delta), "interval"),
                  Atom("h1", cc * (1 - 112 * delta) / (76 * delta * (1 - 4 * delta)), "interval"),
                  Atom("h0", cc * (1 - 112 * delta) / (38 * delta) - 288, "interval")]
    else:
        atoms.append(Atom("-rho_1", -r1, "premise"))  # 0 < u <= 1: the case's hypothesis
    return atoms


def case_lemma_forms(case: str) -> dict[str, tuple[sympy.Expr, sympy.Expr]]:
    """Each lemma atom of a case: (the lemma's conclusion in the case's variables, the form used)."""
    v = case_variables(case)
    substitution = {a: v["a"], T1: v["T_1"], T2: v["T_2"]}
    forms = {x.name: x.expr for x in _case_atoms(case) if x.why.startswith("lemma:")}
    conclusions = lemma_conclusions(delta)
    return {name: (conclusions[name].xreplace(substitution), expr) for name, expr in forms.items()}


def _lagrange(coef: dict[int, int]) -> list[tuple]:
    """(1 - 4 delta) sum_x coef_x N_x (delta -+ d_x) + delta sum_x coef_x N_x [x (d_x + delta) + (4 - x) delta]."""
    sign = {2: "+", 3: "-", 4: "+"}
    terms = [(coef[x], ["1 - 4 delta", f"N_{x}", f"delta {sign[x]} d_{x}"]) for x in NODES]
    for x in NODES:
        terms.append((coef[x] * x, ["delta", f"N_{x}", f"delta + d_{x}"]))
        if x < 4:
            terms.append((coef[x] * (4 - x), ["delta", f"N_{x}", "delta"]))
    return terms


# The inequalities of the spread, each as a sum of atom products (G2 .. G5 below).
LARGE_S = [(2, ["N_2", "delta + d_2", "1 - 2 delta"]), (4, ["N_2", "delta", "delta"]),
           (6, ["N_3", "delta - d_3", "1 - 7 delta"]), (42, ["N_3", "delta", "delta"]), (4, ["N_4", "delta + d_4"])]
SUM_LOWER = _lagrange({2: 7, 3: 18, 4: 10})
PRODUCT_UPPER = _lagrange({2: 12, 3: 24, 4: 12})


def inequalities(case: str) -> dict[str, sympy.Expr]:
    """G2: 38 delta S - (2 - 8 delta); G3: (1 - 4 delta)(rho_1 + rho_2) - (1 - 112 delta) S, i.e.
    rho_1 + rho_2 >= (1 - 108 kappa) S; G4: 144 delta S - (1 - 4 delta) rho_1 rho_2, i.e. rho_1 rho_2
    <= 144 kappa S; G5: (1 - 4 delta) Delta - (1 - 4 delta - C_SPREAD delta) S, i.e. rho_2 - rho_1 >=
    (1 - C_SPREAD kappa) S; sink: alpha_2(2) - (1 - 2 delta)(1 - C_SPREAD kappa)."""
    v = case_variables(case)
    r1, r2, S = v["rho_1"], v["rho_2"], v["S"]
    return {"G2": 38 * delta * S - (2 - 8 * delta), "G3": (1 - 4 * delta) * (r1 + r2) - (1 - 112 * delta) * S,
            "G4": 144 * delta * S - (1 - 4 * delta) * r1 * r2,
            "G5": (1 - 4 * delta) * v["Delta"] - (1 - 4 * delta - C_SPREAD * delta) * S,
            "sink": Q2 / (r2 + 2) - sink_bound()}


def spread(case: str) -> list[tuple]:
    """G5 as non-negative terms."""
    if case == "II":  # rho_1 < 0: rho_2 - rho_1 >= rho_1 + rho_2
        return SUM_LOWER + _one("1 - 4 delta", "-rho_1", k=2) + _one("delta", "S", k=C_SPREAD - 108)
    # rho_1 = r >= 0: rho_2 [(C - 108) delta S - 2 (1 - 4 delta) r] = delta S [(C - 108) rho_2 - 288] + 2 G4,
    # 2 rho_2 = (rho_1 + rho_2) + Delta, and S is large (G2)
    inner = (_mul(_one("h3"), SUM_LOWER) + _one("Delta", k=R(C_SPREAD - 108, 2)) + _mul(_one("h1"), LARGE_S)
             + _one("h0"))
    return SUM_LOWER + _mul(_one("1/rho_2", "delta", "S"), inner) + _mul(_one("1/rho_2", k=2), PRODUCT_UPPER)


# alpha_2(2) - (1 - 2 delta)(1 - C_SPREAD kappa) = (1/a)[a alpha_1(2) + (delta + d_2) + (delta + d3_2)]
#     + (1 - 2 delta)/(1 - 4 delta) G5 / S        (a = S/Delta)
SINK_TERMS = [(1, ["1/a", "a alpha_1(2)"]), (1, ["1/a", "delta + d_2"]), (1, ["1/a", "delta + d3_2"]),
              (1, ["(1 - 2 delta)/(1 - 4 delta)", "1/S", "G5"])]


def sink_bound() -> sympy.Expr:
    return (1 - 2 * delta) * (1 - C_SPREAD * kappa)


def _check_case(ev: Evidence, case: str) -> None:
    atoms = _case_atoms(case)
    label = "rho_1 >= 0" if case == "I" else "-1 < rho_1 < 0"
    ev.step(all(is_zero(lemma - form) for lemma, form in case_lemma_forms(case).values()),
            f"case {label}: the lemma's conclusions in the case's variables are the atoms used below")
    targets = inequalities(case)
    for key, terms, what in (
            ("G2", LARGE_S, "38 delta S >= 2 - 8 delta"),
            ("G3", SUM_LOWER, "rho_1 + rho_2 >= (1 - 108 kappa) S"),
            ("G4", PRODUCT_UPPER, "rho_1 rho_2 <= 144 kappa S"),
            ("G5", spread(case), f"rho_2 - rho_1 >= (1 - {C_SPREAD} kappa) S")):
        ok, why = certificate(targets[key], terms, atoms, delta, INTERVAL)
        ev.step(ok, f"case a > 0, rho_2 > rho_1, {label}: {what}: {why}")


def check_spread() -> Verdict:
    def body(ev: Evidence) -> None:
        S = a * (rho(2) - rho(1))
        Nx = {x: (rho(1) + x) * (rho(2) + x) for x in NODES}
        for x in NODES:
            ev.step(is_zero(d(x) - (S / Nx[x] - R(1, x))), f"d_{x} = a (rho_2 - rho_1)/N_{x} - 1/{x}")
        # S > 0 in the layer's own variables, before any case split
        general = [Atom(f"N_{x}", Nx[x], "positive") for x in NODES] + [
            Atom("delta", delta, "interval"), Atom("1 - 2 delta", 1 - 2 * delta, "interval"),
            Atom("1 - 7 delta", 1 - 7 * delta, "interval")] + [
            Atom(f"delta {s} d_{x}", (delta * Nx[x] + sign * (S - Nx[x] / x)) / Nx[x], f"lemma:{LEMMA}")
            for x in NODES for s, sign in (("+", 1), ("-", -1))]
        ok, why = certificate(38 * delta * S - (2 - 8 * delta), LARGE_S, general, delta, sympy.Interval(0, DELTA_MAX))
        ev.step(ok, f"38 delta S >= 2 - 8 delta for every such layer (S = a (rho_2 - rho_1)): {why}; so S > 0, "
                    "a and rho_2 - rho_1 are non-zero with one sign, and delta = 0 (error 0) is impossible")
        for case in ("I", "II"):
            _check_case(ev, case)
        ev.case(f"0 < delta <= {DELTA_MAX}; a > 0 and rho_2 > rho_1 with rho_1 >= 0 (I) or -1 < rho_1 < 0 (II)")

    return timed(SPREAD, "for two flag-reading heads as in the lemma, with S = a (rho_2 - rho_1), kappa = delta/(1 - "
                         "4 delta), 0 < delta <= 1/1000: 38 delta S >= 2 - 8 delta (so S > 0), and when rho_2 > "
                         "rho_1: rho_1 + rho_2 >= (1 - 108 kappa) S, rho_1 rho_2 <= 144 kappa S and rho_2 - rho_1 >= "
                         f"(1 - {C_SPREAD} kappa) S", body, cites=SPREAD_CITES)


def check_sink() -> Verdict:
    def body(ev: Evidence) -> None:
        for x in NODES:
            alpha = [Q / (rh + x) for Q, rh in ((Q1, rho(1)), (Q2, rho(2)))]
            ev.step(is_zero(d3(x) - (a * (alpha[1] - alpha[0]) - 1 - (x - 1) * d(x))),
                    f"d3_{x} = a (alpha_2({x}) - alpha_1({x})) - 1 - {x - 1} d_{x}")
        swap = {a: b, b: a, P1: P2, P2: P1, Q1: Q2, Q2: Q1, T1: T2, T2: T1, R1: R2, R2: R1}
        premises = {x.name: x.expr for x in _premises()}
        image = {name: {"p - P_1": "p - P_2", "p - P_2": "p - P_1"}.get(name, name) for name in premises}
        ev.step(all(is_zero(expr.xreplace(swap) - premises[image[name]]) for name, expr in premises.items()),
                "swapping the heads maps the lemma's premises onto themselves, so the case rho_1 > rho_2 is the case "
                "rho_2 > rho_1 of the swapped layer (head 1 then sinks); rho_1 = rho_2 is impossible (S > 0)")
        for case in ("I", "II"):
            label = "rho_1 >= 0" if case == "I" else "-1 < rho_1 < 0"
            atoms = _case_atoms(case) + [Atom("G5", inequalities(case)["G5"], f"lemma:{SPREAD}")]
            ok, why = certificate(inequalities(case)["sink"], SINK_TERMS, atoms, delta, INTERVAL)
            ev.step(ok, f"case a > 0, rho_2 > rho_1, {label}: alpha_2(2) >= (1 - 2 delta)(1 - {C_SPREAD} kappa) "
                        f"(a alpha_2(2) >= 1 - 2 delta and a = S/(rho_2 - rho_1)): {why}")
        ok = sympy.minimum(sink_bound() - (1 - C_SINK * delta), delta, INTERVAL) >= 0
        ev.step(ok, f"(1 - 2 delta)(1 - {C_SPREAD} delta/(1 - 4 delta)) >= 1 - {C_SINK} delta on (0, {DELTA_MAX}]")
        ev.case(f"two flag-reading softmax heads, L >= 5, d >= 4, both heads' BOS mass at query 1 <= theta; "
                f"delta = eta (1 + (p+1)^2 + (p+2)^2) <= {DELTA_MAX}; every sign of a and rho_1 (cases above)")

    return timed(NAME, "(a') for flag-reading scores: a softmax layer of two heads whose scores read only the flags, "
                       "with worst-case max-abs error eta (L >= 5, d >= 4), whose heads both put at most theta on BOS "
                       f"at query 1 has a head putting at least 1 - {C_SINK} delta on BOS at the trigger (j = 2), "
                       "delta = eta (1 + (p+1)^2 + (p+2)^2), p = theta/(1 - theta), whenever delta <= 1/1000; so "
                       "some head's BOS mass at some query i >= 1 tends to 1 as eta -> 0", body, cites=CITES)


STATEMENTS = (
    (LEMMA, check_rows, ()),
    (SPREAD, check_spread, SPREAD_CITES),
    (NAME, check_sink, CITES),
)
