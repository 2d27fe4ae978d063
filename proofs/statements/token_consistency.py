"""Token consistency: equal tokens get equal weights, so position 1 inherits later positions' bounds.

Statement: (i) in a softmax head without positional encoding, a query sees the same score for
equal keys, so on a sequence whose non-BOS tokens up to i are all equal the row is
a_i0 = A/(A + i B) and a_ik = B/(A + i B) (symbolic i; A, B the unnormalised weights of BOS and
of the repeated token), and a_i0 decreases strictly with i. (ii) In the abstract instance (BOS
value 0, the repeated token's value v), error <= eps at position n (n B|v|/(A + nB) <= eps,
eps < |v|) forces, already at position 1,

    a_10 >= 1 - eps/(n|v| - (n - 1) eps) = 1 - eps/(n|v|) + O(eps^2),

with equality when the error at position n is exactly eps (tight). Checked: equal weights from
the exact evaluator on a generic symbolic head; the row, the monotonicity and the bound in sympy.
"""

from __future__ import annotations

import sympy

from constructions import reference

from .algebra import Atom, certificate, is_zero
from .bos_query_sees_only_bos import generic_head, symbolic_sequence
from .verdict import Evidence, Verdict, timed

NAME = "token_consistency"
CITES = ()  # registered statements whose conclusions this proof uses
A, B = sympy.symbols("A B", positive=True)
i = sympy.Symbol("i", integer=True, positive=True)


def equal_tokens_bound(n, v, eps):
    """The BOS mass at position 1 that error <= eps at position n forces: 1 - eps/(n|v| - (n-1) eps)."""
    return 1 - eps / (n * v - (n - 1) * eps)


def equal_token_weights_from_evaluator(ev: Evidence) -> None:
    """Generic symbolic head (d = 4, L = 4, trigger at 3), equal content at positions 1, 2."""
    net, _ = generic_head(4)
    X = symbolic_sequence(4, 4, 3)
    X[2] = list(X[1])  # positions 1 and 2: the same content token
    _, patterns = reference.forward(net, X, "sympy")
    row = patterns[0][0][2]
    ev.step(is_zero(row[1] - row[2]), "exact evaluator, generic symbolic head: equal keys get equal weights at query 2")
    trig = patterns[0][0][3]
    ev.step(is_zero(trig[1] - trig[2]), "... and at the trigger query 3")


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        equal_token_weights_from_evaluator(ev)
        k = sympy.Symbol("k", integer=True)
        Z = A + sympy.Sum(B, (k, 1, i))
        ev.step(is_zero(Z - (A + i * B)), "Z_i = A + sum_(k=1..i) B = A + i B (symbolic i)")
        a_i0 = A / (A + i * B)
        drop = a_i0 - A / (A + (i + 1) * B)
        ev.step(is_zero(drop - A * B / ((A + i * B) * (A + (i + 1) * B))) and bool(
            (A * B / ((A + i * B) * (A + (i + 1) * B))).is_positive),
            "a_i0 - a_(i+1)0 = A B/((A + iB)(A + (i+1)B)) > 0: BOS mass decreases along equal tokens")
        n = sympy.Symbol("n", integer=True, positive=True)
        eps, r = sympy.symbols("epsilon r", positive=True)  # |v| = eps + r > eps
        V = eps + r
        bound = equal_tokens_bound(n, V, eps)
        atoms = [Atom("error slack at n", eps * (A + n * B) - n * B * V, "premise"),
                 Atom("1/(A + B)", 1 / (A + B), "positive"),
                 Atom("1/(n|v| - (n-1) eps)", 1 / (n * r + eps), "positive")]
        ok, why = certificate(A / (A + B) - bound, [(1, ["error slack at n", "1/(A + B)", "1/(n|v| - (n-1) eps)"])], atoms)
        ev.step(ok, f"a_10 >= 1 - eps/(n|v| - (n-1) eps) given n B|v|/(A + nB) <= eps: {why}")
        x, y = sympy.symbols("x y", positive=True)  # eps and |v|
        series = sympy.series(x / (n * y - (n - 1) * x), x, 0, 2).removeO()
        ev.step(is_zero(series - x / (n * y)), "eps/(n|v| - (n-1) eps) = eps/(n|v|) + O(eps^2)")
        Bt = eps * A / (n * (V - eps))  # the tight B: error exactly eps at position n
        ev.step(is_zero(n * Bt * V / (A + n * Bt) - eps) and is_zero(A / (A + Bt) - bound),
                "tight: B = eps A/(n(|v| - eps)) has error eps at position n and a_10 equal to the bound")
        ev.case("symbolic i and n; generic symbolic head d = 4, L = 4 for the evaluator step")

    return timed(NAME, "equal tokens get equal softmax weights, so along n equal tokens a_i0 = A/(A + iB) "
                       "decreases in i; with BOS value 0, error <= eps at position n forces a_10 >= "
                       "1 - eps/(n|v| - (n-1) eps) = 1 - eps/(n|v|) + O(eps^2) (tight)", body, cites=CITES)
