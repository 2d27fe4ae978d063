"""The lemma chain in sympy: one module per registered statement, each with ``NAME``, ``CITES``
and ``check() -> Verdict``, and what they share: ``algebra`` (the certificate checker every
symbolic step goes through), ``verdict`` (the verdict record and how a citation's status carries
over), ``trigger_rows`` (the trigger query's attention rows). ``planted_false_statements`` holds
the controls that must come out refuted.

Imports ``constructions`` only. Every module is public: the registry loads each statement module
by name, and the Coq twins and the certificates read the statements' constants.
"""
