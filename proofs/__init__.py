"""The formal side of the suite: the project's statements checked in sympy, the z3 search on finite
instances, certificates over every input for any weights, the Coq development, and the registry
that runs them. Imports ``constructions`` only, never ``empirical``.

Its rooms (README.md in each says what it does and how to run it):

- ``statements``: the lemma chain in sympy, one module per statement with ``check() -> Verdict``;
- ``smt``: the z3 counterexample search for T1 on finite instances (``sinks search``);
- ``certify``: a head's sink and error over every input, and residual stacks (``sinks certify``);
- ``marabou``: Marabou 2.0 as a second verifier of a head's certified BOS mass (optional extra
  ``.[marabou]``; ``sinks certify --recheck marabou``);
- ``coq``: T1, T3 and the T2 counterexample as Coq theorems and their kernel check, and the Coq
  checker of a head's certificate;
- ``registry``: every statement by name, run in proof order with the planted false statements and
  the Coq kernel check applied (``sinks prove``).

A room imports only rooms below it, never a sibling or one above (``tests/test_import_graph.py``);
``RANKS`` is that rule as data, lowest first. Each room's ``PUBLIC`` names the modules other rooms
may import. ``proofs/README.md`` states T1 and T3 with their proofs, each step pointing at the
module that checks it.
"""

RANKS = {"statements": 0, "smt": 0, "certify": 1, "coq": 2, "marabou": 2, "registry": 3}
