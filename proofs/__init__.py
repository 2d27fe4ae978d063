"""Symbolic (sympy) checks of the project's lemmas and theorems, and z3 counterexample search.
Imports ``constructions`` only, never ``empirical``.

Every statement is one module with a ``check() -> Verdict``; ``proofs.registry`` lists them and
runs them (``sinks prove``). ``proofs/README.md`` states T1 and T3 with their proofs, each step
pointing at the module that checks it.
"""
