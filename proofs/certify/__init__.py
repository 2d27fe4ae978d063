"""Certificates over every input (issue 12): the worst case of a head's sink and error over the
whole input domain of the task, not over a sample.

- ``heads``: the exact bilinear score form M = W_Q^T W_K and value map V = W_O W_V of a head, and
  the exponent functions of its BOS mass as functions of the query's content.
- ``branch``: certified branch and bound over the query's content box.
- ``sink``: certified minimum BOS mass at every non-trigger query (and maximum at the trigger),
  with a witness input replayed exactly.
- ``error``: certified upper bound eta_up on the worst-case max-abs error, and a replayed lower
  bound eta_lo.
- ``t1``: the project's T1 applied with eta_up.
- ``stack``: interval bound propagation through residual stacks (a bound per head).

Pure mathematics on weights (Fractions, numpy float64 with a-priori rounding bounds, mpmath.iv);
imports ``constructions`` and ``proofs`` only, never torch or ``empirical``.
"""
