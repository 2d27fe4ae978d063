"""T2: with several heads, a sink statement can only be existential (some head sinks).

Statement (proved): per-head sink statements are false. Take the sink head H of
``softmax_head.build(d, beta)`` and add pairs of "diffuse" heads (W_Q = W_K = 0, so every row is
uniform: BOS mass 1/(i+1); W_V = I) whose output blocks are +I and -I. Each pair cancels exactly
on every input, so
  - one layer, heads (H, +, -): the output equals H's output on every input (same error);
  - two residual layers, heads (H, +, -) then (+, -): the stream equals the one-head residual
    network's (same error on the residual task),
while 4 of those 5 heads put only 1/(i+1) <= 1/2 on BOS at every non-trigger query i >= 1.
So "every head must sink" fails for every error level the sink head reaches; whatever holds
for several heads must be of the form "some head in some layer sinks" (SPEC's T2).

Not proved here (status of the existential T2): that some head must sink when several heads or
layers solve the task. It is observed in training (SPEC section 4; the training part), and the
single-head T1 does not extend directly: the error constrains the sum of the heads' outputs,
not one head's.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

from constructions import reference, softmax_head, task

from .algebra import is_zero
from .verdict import Evidence, Verdict, timed

NAME = "t2_multi_layer_existential"
CITES = ()  # registered statements whose conclusions this proof uses
D, L = 4, 4
BETA = Fraction(3)


def _blocks(*blocks: reference.Matrix) -> reference.Matrix:
    """W_O = [B_1 | B_2 | ...] for d x d blocks."""
    return tuple(tuple(x for b in blocks for x in b[r]) for r in range(len(blocks[0])))


def _neg(M: reference.Matrix) -> reference.Matrix:
    return tuple(tuple(-x for x in row) for row in M)


def cancelling_networks(d: int = D, beta=BETA) -> tuple[reference.Network, reference.Network,
                                                        reference.Network, reference.Network]:
    """(sink head, 1 layer x 3 heads, 1-head residual, 2-layer residual stack with cancelling pairs)."""
    sink = softmax_head.build(d, beta)
    s = sink.layers[0]
    zero, one = Fraction(0), Fraction(1)
    Z, I = reference.zeros(d, d, zero), reference.identity(d, zero, one)
    three = reference.Layer((s.W_Q[0], Z, Z), (s.W_K[0], Z, Z), (s.W_V[0], I, I), _blocks(s.W_O, I, _neg(I)))
    pair = reference.Layer((Z, Z), (Z, Z), (I, I), _blocks(I, _neg(I)))
    return (sink, reference.Network("softmax", (three,)),
            reference.Network("softmax", (s,), residual=True),
            reference.Network("softmax", (three, pair), residual=True))


def check() -> Verdict:
    def body(ev: Evidence) -> None:
        sink, wide, sink_res, stack = cancelling_networks()
        contents = [[sympy.Symbol(f"c{p}", real=True)] for p in range(1, L)]
        for j in range(2, L):
            X = task.make_sequence(contents, j, sympy.Integer(0), sympy.Integer(1))
            Y1, _ = reference.forward(sink, X, "sympy")
            Y3, P3 = reference.forward(wide, X, "sympy")
            ev.step(all(is_zero(a - b) for ra, rb in zip(Y1, Y3) for a, b in zip(ra, rb)),
                    f"j={j}: one layer (sink, +, -) has exactly the sink head's output (symbolic contents)")
            Yr, _ = reference.forward(sink_res, X, "sympy")
            Ys, Ps = reference.forward(stack, X, "sympy")
            ev.step(all(is_zero(a - b) for ra, rb in zip(Yr, Ys) for a, b in zip(ra, rb)),
                    f"j={j}: two residual layers with cancelling pairs equal the one-head residual network")
            diffuse = [P3[0][1], P3[0][2], Ps[1][0], Ps[1][1]]
            ok = all(is_zero(p[i][0] - sympy.Rational(1, i + 1)) for p in diffuse for i in range(1, L) if i != j)
            ev.step(ok, f"j={j}: the 4 diffuse heads put exactly 1/(i+1) <= 1/2 on BOS at every non-trigger query i >= 1")
        ev.note("the existential T2 (some head must sink) is not proved here: observed in training only")
        ev.case(f"d={D}, L={L}, j=2..{L - 1}, beta={BETA}, symbolic contents; the cancellation holds for any "
                f"weights of the pair (equal patterns, opposite output blocks)")

    return timed(NAME, "per-head sink statements are false: adding head pairs with equal patterns and opposite "
                       "output blocks leaves the output (and the error) unchanged while those heads put 1/(i+1) "
                       "on BOS; a multi-head or multi-layer sink theorem can only say that some head sinks", body, cites=CITES)
