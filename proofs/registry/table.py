"""The registry of statements: name -> check and citations, in proof order; ``run(names)`` checks them.

Statements are modules of this package with ``NAME``, ``CITES`` (the registered statements whose
conclusions the proof uses; declared once, there) and ``check() -> Verdict``. A run checks the
requested statements together with everything they cite, transitively, lemmas first; a statement
is ``proved`` only if every lemma it cites came out ``proved`` in the same run (``verdict.timed``
enforces it). A citation of an unregistered statement, or a cycle of citations, is an error.

The planted false statements (``planted_false_statements.CONTROLS``) run with them so that every
run shows the checkers can fail; they are marked ``planted`` and expected to come out refuted.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from constructions.errors import BadInput

from ..statements.verdict import Verdict, run_statuses

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
    "t1_tightness",
    "relu_construction_exact",
    "softmax_family_limits",
    "t2_multi_layer_existential",
    "t2_two_heads_flag_scores",
    "t2_one_head_per_layer_family",
    "t2_open_questions",
)


# The suite's findings where the honest verdict is not "proved": refuted by an exact
# counterexample, or open. Everything else registered is expected proved, a planted control
# refuted. ``sinks prove`` exits 0 exactly when every verdict is the expected one, so a change
# in either direction (an open question settled, a proof lost) is reported, not hidden.
EXPECTED = {
    "t2_multi_layer_existential": "refuted",
    "t2_sink_at_some_query": "refuted",
    "t2_two_heads_sink_at_some_query": "unknown",
    "t2_one_head_per_layer": "unknown",
    "t1a_tightened_per_content": "refuted",
    "t1b_tightened_per_content": "refuted",
}


def expected_status(verdict: Verdict) -> str:
    """The verdict the suite states for this statement (see ``EXPECTED``)."""
    return "refuted" if verdict.planted else EXPECTED.get(verdict.name, "proved")


class CitationError(Exception):
    """The statements' citations do not form a finite acyclic graph of registered statements."""


@dataclass(frozen=True)
class Statement:
    name: str
    check: Callable[[], Verdict]
    cites: tuple[str, ...] = ()


def statements() -> dict[str, Statement]:
    """Every registered statement by name: the modules' statements, then the planted controls."""
    table: dict[str, Statement] = {}
    for module in STATEMENT_MODULES:
        mod = importlib.import_module(f"proofs.statements.{module}")
        specs = mod.STATEMENTS if hasattr(mod, "STATEMENTS") else ((mod.NAME, mod.check, mod.CITES),)
        for name, check, cites in specs:
            table[name] = Statement(name, check, tuple(cites))
    from ..statements.planted_false_statements import CONTROLS

    table.update({name: Statement(name, check) for name, check in CONTROLS.items()})
    return table


def checks() -> dict[str, Callable[[], Verdict]]:
    return {name: s.check for name, s in statements().items()}


def names() -> tuple[str, ...]:
    return tuple(statements())


def proof_order(table: Mapping[str, Statement], wanted: Iterable[str]) -> list[str]:
    """``wanted`` and everything it cites, transitively, each lemma before its citers (registry
    order among independent statements). Raises ``CitationError`` on a cycle or a dangling name."""
    order: list[str] = []
    state: dict[str, str] = {}  # "open" while on the current path, "done" once placed

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            raise CitationError("citation cycle: " + " -> ".join(path[path.index(name):] + (name,)))
        if name not in table:
            raise CitationError(f"{path[-1]} cites {name}, which is not a registered statement")
        state[name] = "open"
        for lemma in table[name].cites:
            visit(lemma, path + (name,))
        state[name] = "done"
        order.append(name)

    for name in wanted:
        visit(name, ())
    return order


def dependencies(name: str, table: Mapping[str, Statement] | None = None) -> tuple[str, ...]:
    """Everything ``name`` relies on, transitively, lemmas first, ending with ``name`` itself."""
    return tuple(proof_order(table if table is not None else statements(), [name]))


def run(names: Iterable[str] | None = None, table: Mapping[str, Statement] | None = None,
        kernel=None) -> list[Verdict]:
    """Check the named statements (all when ``names`` is None) and everything they cite, in proof
    order; unknown names are bad input. ``table`` replaces the registry (tests plant statements).
    A statement with a Coq twin also carries the kernel check (``kernel``, a
    ``proofs.coq.kernel.KernelReport``; by default the installed development's, compiled once per
    process and only when the run has such a statement): a failed check makes it ``unknown``,
    and so every statement citing it."""
    from ..coq import kernel as coq_kernel
    from ..coq.overlay import has_twin, with_kernel

    table = statements() if table is None else table
    wanted = list(table) if names is None else list(names)
    missing = [n for n in wanted if n not in table]
    if missing:
        raise BadInput(f"unknown statement(s) {', '.join(missing)}; valid: {', '.join(table)}")
    full = proof_order(table, table)  # every citation in the table is checked, requested or not
    needed = set(proof_order(table, wanted))
    order = [n for n in full if n in needed]
    if kernel is None and any(has_twin(n) for n in order):
        kernel = coq_kernel.default_report()
    verdicts = []
    with run_statuses() as statuses:
        for name in order:
            v = table[name].check()
            if v.name != name or tuple(v.cites) != table[name].cites:
                raise CitationError(f"statement {name}: its check reported name {v.name!r} and citations "
                                    f"{v.cites}, the registry declares {table[name].cites}")
            if kernel is not None:
                v = with_kernel(v, kernel)
            statuses[name] = v.status
            verdicts.append(v)
    return verdicts
