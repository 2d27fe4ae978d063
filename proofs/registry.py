"""The registry of statements: name -> check, in proof order; ``run(names)`` checks them.

Statements are modules of this package with ``NAME`` and ``check() -> Verdict``. The planted
false statements (``planted_false_statements.CONTROLS``) run with them so that every run shows
the checkers can fail; they are marked ``planted`` and expected to come out refuted.
"""

from __future__ import annotations

import importlib
from typing import Callable, Iterable

from constructions.errors import BadInput

from .verdict import Verdict

STATEMENT_MODULES = (
    "softmax_rows_on_simplex",
    "relu_rows_can_vanish",
    "bos_query_sees_only_bos",
    "sink_bound_direction",
    "sink_bound_convex_hull",
    "token_consistency",
    "no_cancellation",
    "content_flag_lower_bound",
    "trigger_row_ratio_bound",
    "flag_sum_lower_bound",
    "trigger_flag_lower_bound",
    "t1_single_layer_sink",
    "relu_construction_exact",
    "softmax_family_limits",
    "t2_multi_layer_existential",
)


def checks() -> dict[str, Callable[[], Verdict]]:
    """Every registered check by name: the statements, then the planted controls."""
    table: dict[str, Callable[[], Verdict]] = {}
    for module in STATEMENT_MODULES:
        mod = importlib.import_module(f"proofs.{module}")
        table[mod.NAME] = mod.check
    from .planted_false_statements import CONTROLS

    table.update(CONTROLS)
    return table


def names() -> tuple[str, ...]:
    return tuple(checks())


def run(names: Iterable[str] | None = None) -> list[Verdict]:
    """Check the named statements (all when ``names`` is None); unknown names are bad input."""
    table = checks()
    wanted = list(table) if names is None else list(names)
    unknown = [n for n in wanted if n not in table]
    if unknown:
        raise BadInput(f"unknown statement(s) {', '.join(unknown)}; valid: {', '.join(table)}")
    return [table[n]() for n in wanted]
