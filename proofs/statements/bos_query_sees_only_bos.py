"""The BOS query sees only BOS, so its output is BOS's value image, which the task forces to ~0.

Statement: for any single-layer single-head network of any kind in the registry whose rows
are on the simplex (softmax), query 0 has the one weight a_00 = 1 and output
o_0 = W_O W_V x_0 = u_0. The target there is y_0 = 0 (``constructions.task.target``), so a head
with max-abs error <= eta has ||u_0||_inf <= eta, and for every direction w,
|w . u_0| <= ||w||_1 eta.

Checked with the exact evaluator (``constructions.reference.forward``) on a generic symbolic
softmax head (every entry of W_Q, W_K, W_V, W_O a symbol, d = 4) and a sequence with symbolic
content, for each trigger position of L = 4.
"""

from __future__ import annotations

import sympy

from constructions import reference, task

from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "bos_query_sees_only_bos"
CITES = ()  # registered statements whose conclusions this proof uses
D, L = 4, 4


def generic_head(d: int, kind: str = "softmax") -> tuple[reference.Network, list[list[sympy.Expr]]]:
    """A single head with one symbol per weight entry; returns it and M = W_O W_V."""
    mats = [sympy.Matrix(d, d, lambda r, c, n=name: sympy.Symbol(f"{n}_{r}{c}", real=True))
            for name in ("Q", "K", "V", "O")]
    WQ, WK, WV, WO = (reference.as_matrix(m.tolist()) for m in mats)
    net = reference.single_head(kind, WQ, WK, WV, WO)
    return net, (mats[3] * mats[2]).tolist()


def symbolic_sequence(d: int, L: int, j: int) -> list[list[sympy.Expr]]:
    contents = [[sympy.Symbol(f"c_{p}_{q}", real=True) for q in range(d - 3)] for p in range(1, L)]
    return task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        net, M = generic_head(D)
        u0 = reference.matvec(M, [1] + [0] * (D - 1))
        for j in range(2, L):
            X = symbolic_sequence(D, L, j)
            Y, patterns = reference.forward(net, X, "sympy")
            target0 = task.target(X, j)[0]
            ok = is_zero(patterns[0][0][0][0] - 1) and all(is_zero(y - u) for y, u in zip(Y[0], u0))
            ev.step(ok, f"trigger j={j}: a_00 = 1 and o_0 = (W_O W_V) x_0 for a generic symbolic head")
            ev.step(all(t == 0 for t in target0), f"trigger j={j}: task target y_0 = 0")
            ev.case(f"d={D}, L={L}, j={j}, symbolic weights and contents")
        ev.note("hence |u_0|_inf = |o_0 - y_0|_inf <= eta and |w . u_0| <= |w|_1 eta (Hoelder)")

    return timed(NAME, "the BOS query (position 0) puts weight 1 on BOS, so o_0 = u_0 = W_O W_V x_0; since "
                       "y_0 = 0, a head with max-abs error <= eta has |u_0|_inf <= eta", body, cites=CITES)
