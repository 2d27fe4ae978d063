"""T2 in its non-trigger form is false for two or more heads: the cancelling pair.

Statement (refuted): "for every softmax network with H >= 2 heads per layer (one layer, or a
residual stack) that solves the task with worst-case error eta, some head puts BOS mass -> 1 at
some non-trigger query i >= 1 as eta -> 0."

Counterexample: ``constructions.cancelling_heads.build(d, beta)`` (two heads, one layer; W_K reads
the BOS flag, W_V = I without BOS, head 1 scores BOS -beta and head 2 +beta at the trigger only,
W_O = [I, -I]) and ``build_stack`` (the same layer, then a layer of two zero heads with W_O = 0,
residual). Checked with the exact evaluator in sympy, symbolic beta > 0 and symbolic contents,
d = 4, L = 5, every trigger j:
  - every head of every layer puts exactly 1/(i+1) <= 1/2 on BOS at every non-trigger query i >= 1;
  - the error is exactly 0 at every non-trigger position, and S_j * factor(beta, j) at the trigger,
    factor = 1/(j + e^-b) - 1/(j + e^b) - 1/j; the stack's residual error is the same;
  - for symbolic j, factor -> 0 and the worst case j |factor| = e^-b/(j + e^-b) + j/(j + e^b) -> 0
    as beta -> oo.
So the error tends to 0 while no head's BOS mass at a non-trigger query exceeds 1/2. Head 2's
mass e^b/(e^b + j) -> 1 at the trigger only. Other d >= 4: the weights touch only the BOS and
trigger flags and W_V, W_O act coordinate-wise (argued); more heads: zero heads with zero W_O
blocks change nothing (argued). Every finite instance is also checked in Q(e^beta) and in
floats up to L = 1024 by the constructions part (``constructions.verify_multihead``).
"""

from __future__ import annotations

import sympy

from constructions import cancelling_heads, reference, task

from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "t2_multi_layer_existential"
CITES = ()  # registered statements whose conclusions this proof uses
D, L = 4, 5
beta = sympy.Symbol("beta", positive=True)
BOS_CAP = sympy.Rational(1, 2)  # no head puts more than this on BOS at a non-trigger query i >= 1


def error_bound(b, length):
    """The explicit bound on the pair's worst-case error at length ``length``: L e^-beta -> 0."""
    return length * sympy.exp(-b)


def error_bound_holds(ev: Evidence) -> None:
    """worst_error_at(beta, j) <= L e^-beta for every 2 <= j <= L - 1: with E = e^-beta, j = 2 + k and
    L = j + 1 + s, (L E - worst)/E = (s + 1 - 1/j) + (1/j - 1/(j + E)) + (j - j/(j E + 1))."""
    k, s = sympy.symbols("k s", nonnegative=True)
    E = sympy.Symbol("E", positive=True)
    j, length = 2 + k, 3 + k + s
    worst = cancelling_heads.worst_error_at(beta, j, exp=lambda x: E if x == -beta else 1 / E)
    parts = [s + 1 - 1 / j, 1 / j - 1 / (j + E), j - j / (j * E + 1)]
    bound = error_bound(beta, length).subs(sympy.exp(-beta), E)
    ev.step(is_zero((bound - worst) / E - sum(parts)) and all(sympy.factor(sympy.together(p)).is_nonnegative
                                                             for p in parts),
            "worst-case error e^-b/(j + e^-b) + j/(j + e^b) <= L e^-b for every 2 <= j <= L - 1 (symbolic j, L, beta)")


def symbolic_sequence(j: int, length: int = L) -> list[list[sympy.Expr]]:
    contents = [[sympy.Symbol(f"c{p}", real=True)] for p in range(1, length)]
    return task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))


def check_network(ev: Evidence, net: reference.Network, label: str) -> None:
    for j in range(2, L):
        X = symbolic_sequence(j)
        Y, patterns = reference.forward(net, X, "sympy")
        T = task.target(X, j, net.residual)
        S = [sum(X[k][c] for k in range(1, j + 1)) for c in range(D)]
        factor = cancelling_heads.trigger_factor(beta, j)
        off_zero = all(is_zero(Y[i][c] - T[i][c]) for i in range(L) if i != j for c in range(D))
        at = all(is_zero(Y[j][c] - T[j][c] - factor * S[c]) for c in range(D))
        masses = all(is_zero(P[i][0] - sympy.Rational(1, i + 1)) and sympy.Rational(1, i + 1) <= BOS_CAP
                     for layer in patterns for P in layer for i in range(1, L) if i != j)
        ev.step(off_zero and at, f"{label}, j={j}: error exactly 0 off the trigger, S_j * factor(beta, j) at it "
                                 f"(symbolic beta, contents)")
        ev.step(masses, f"{label}, j={j}: every head puts exactly 1/(i+1) <= 1/2 on BOS at every non-trigger query i >= 1")


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        check_network(ev, cancelling_heads.build(D, beta), "one layer, two heads")
        check_network(ev, cancelling_heads.build_stack(D, beta), "residual stack (second layer W_O = 0)")
        j = sympy.Symbol("j", integer=True, positive=True)
        worst = cancelling_heads.worst_error_at(beta, j)
        ev.step(is_zero(worst - (sympy.exp(-beta) / (j + sympy.exp(-beta)) + j / (j + sympy.exp(beta))))
                and sympy.limit(worst, beta, sympy.oo) == 0
                and sympy.limit(cancelling_heads.trigger_factor(beta, j), beta, sympy.oo) == 0,
                "symbolic j: the worst-case error e^-b/(j + e^-b) + j/(j + e^b) and factor(beta, j) -> 0 as beta -> oo")
        error_bound_holds(ev)
        at_trigger = cancelling_heads.bos_mass(beta, j, 1, True)
        ev.step(sympy.limit(at_trigger, beta, sympy.oo) == 1,
                "head 2's BOS mass e^b/(e^b + j) -> 1 at the trigger only (its sink is at the trigger query)")
        ev.note("other d >= 4 and H > 2 (zero heads with zero W_O blocks): the same computation, coordinate-wise")
        if not ev.failures:
            ev.refute("cancelling_heads.build(d, beta) and build_stack(d, beta): worst-case error -> 0 as beta -> oo "
                      "while every head puts exactly 1/(i+1) <= 1/2 on BOS at every non-trigger query i >= 1 "
                      "(exact evaluator, symbolic beta and contents, d = 4, L = 5, every j; limits for symbolic j)")
        ev.case(f"d={D}, L={L}, every trigger position, symbolic beta > 0 and contents; one layer and residual stack")

    return timed(NAME, "T2 (non-trigger, H >= 2 heads per layer): every softmax network with worst-case error "
                       "eta has some head whose BOS mass at some non-trigger query i >= 1 tends to 1 as eta -> 0",
                 body, cites=CITES)
