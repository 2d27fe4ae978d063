"""Certificates over every input: the worst case of a head's sink and error over the whole input
domain of the task, not over a sample.

Its rooms, lowest first (``RANKS``; a room imports only rooms below it):

- ``arithmetic``: what the certificates compute with. ``heads`` (the exact bilinear score form
  M = W_Q^T W_K and value map V = W_O W_V of a head, and the exponent functions of its BOS mass as
  functions of the query's content), ``exact`` (rational matrices at integer speed), ``replay``
  (witness inputs through the exact evaluator in interval arithmetic), ``branch`` (certified branch
  and bound over the query's content box), ``affine`` and ``zonotope`` (the stream's domains in
  the input contents), ``native`` (the trigger bounds' inner loops compiled from ``dual.c``).
- ``head``: a single head. ``sink`` (certified minimum BOS mass at every non-trigger query and
  maximum at the trigger, with a witness replayed exactly), ``free`` (the largest BOS weight of a
  sink-free ReLU head), ``error`` and ``witness`` (eta_up and eta_lo), ``trigger`` (eta_up at the
  trigger, each key's weight tied to its content), ``eta`` (the bracket), ``t1`` (the project's T1
  applied with eta_up).
- ``stack``: residual stacks, a bound per head: ``affine_stack`` (affine forms with interval
  remainders; ``scores``, a deeper layer's scores; ``directional``, the remainders read along the
  scores' directions; ``joint_weights``, each key's weight bounds searched jointly over the query's
  content) and ``zono_stack`` (zonotopes).

Pure mathematics on weights (Fractions, numpy float64 with a-priori rounding bounds, Arb balls);
imports ``constructions`` and ``proofs.statements`` only, never torch or ``empirical``.
"""

RANKS = {"arithmetic": 0, "head": 1, "stack": 2}
