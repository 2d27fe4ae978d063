"""The registry on top: every statement by name with its citations, run in proof order with the
planted false statements beside them and the Coq kernel check applied (``table``; ``sinks prove``).

``from proofs import registry`` keeps working as before: ``registry.run``, ``registry.names``,
``registry.dependencies`` and the rest are ``table``'s, re-exported here.
"""

from .table import (EXPECTED, STATEMENT_MODULES, CitationError, Statement, checks, dependencies, expected_status,
                    names, proof_order, run, statements)

__all__ = ["EXPECTED", "STATEMENT_MODULES", "CitationError", "Statement", "checks", "dependencies",
           "expected_status", "names", "proof_order", "run", "statements"]

PUBLIC = ()
