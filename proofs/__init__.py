"""Symbolic (sympy) checks of the project's lemmas and theorems, and z3 counterexample search.
Imports ``constructions`` only, never ``empirical``."""
