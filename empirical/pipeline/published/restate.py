"""The bound figures of a published run's stored table text, restated from the numbers stored
beside them.

A part record keeps its report tables as text, written when the run was made; a run from before
bounds were written on their safe side (``numbers.fmt``'s ``side``) rounded them to nearest. Where
claims.json also stores the number a figure was written from, ``restate`` rewrites that figure
from it exactly as the part writes it now (same digits, same side); a figure whose number is not
stored stays as the run wrote it until the next run. ``restate`` of a claims.json written since
changes nothing (``tests/test_safe_side_rounding.py`` holds the committed file to that).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from .numbers import fmt


def _table(part: dict, title_start: str) -> dict | None:
    return next((t for t in part.get("tables") or [] if t and (t.get("title") or "").startswith(title_start)), None)


def _set(changed: list[str], table: dict, row: list, column: str, text: str) -> None:
    k = table["columns"].index(column)
    if row[k] != text:
        changed.append(f"{table['title'][:40]}... / {row[0]} / {column}: {row[k]} -> {text}")
        row[k] = text


def _sub(pattern: str, text: str, new: str) -> str:
    """``text`` with the number in ``pattern``'s group replaced by ``new`` (kept when it is the
    same number written otherwise, such as 3.4e-04 for 0.00034)."""
    def one(m: re.Match) -> str:
        return m.group(0) if float(m.group(1)) == float(new) else m.group(0).replace(m.group(1), new)

    return re.sub(pattern, one, text, count=1)


def _training(training: dict, changed: list[str]) -> None:
    details = training.get("details") or {}
    runs = details.get("runs") or {}
    bounds = (runs.get("softmax-1x1") or {}).get("bound")
    table = _table(training, "Reference runs")
    if bounds and table:
        lowest = fmt(min(b["bound_min"] for b in bounds), 4, "lower")  # parts.training._runs_table's
        k = table["columns"].index("certified bound (single head)")
        for row in table["rows"]:
            if row[0] == "softmax 1x1":
                _set(changed, table, row, table["columns"][k], _sub(r", min ([^;]+);", row[k], lowest))
    singles = (details.get("certificates") or {}).get("single_layer")
    table = _table(training, "T1 end to end: trained")
    if singles and table:  # rows and records in the same order (parts.certificate_tables)
        for row, record in zip(table["rows"], singles):
            c = record["certificate"]
            _set(changed, table, row, "eta_up (certified)", fmt(c["eta"]["eta_up"], 4, "upper"))
            _set(changed, table, row, "eta_lo (replayed witness)", fmt(c["eta"]["eta_lo"], 4, "lower"))
            before, after = (row[table["columns"].index(n)] for n in ("certified min a_i0 before the trigger",
                                                                      "after the trigger"))
            # nearest rounding is monotone: "after" written below "before" means the after-trigger
            # minimum is the smaller one, i.e. the stored minimum over every non-trigger query
            if float(after) < float(before):
                _set(changed, table, row, "after the trigger", fmt(c["min_bos_nontrigger"], 6, "lower"))
    worst = (details.get("worst_case") or {}).get("results")
    table = _table(training, "T1 in full on trained weights")
    if worst and table:  # rows and results in the same order (parts.t1_end_to_end.seed_table)
        for row, result in zip(table["rows"], worst):
            _set(changed, table, row, "eta_up (certified)", fmt(result["certificate"]["eta"]["eta_up"], 4, "upper"))


def _beyond(beyond: dict, changed: list[str]) -> None:
    constructions = (beyond.get("details") or {}).get("constructions") or {}
    table = _table(beyond, "attention kinds")
    if not table:
        return
    k = table["columns"].index("construction")
    for row in table["rows"]:
        point = ((constructions.get(row[0]) or {}).get("curve") or [None])[-1]
        if point and point.get("max_error") is not None:  # parts.beyond.construction_cell's
            _set(changed, table, row, "construction",
                 _sub(r"error <= ([^,]+),", row[k], fmt(point["max_error"], 2, "upper")))


RESTATERS: dict[str, Callable[[dict, list[str]], None]] = {"training": _training, "beyond": _beyond}


def restate(inputs: dict[str, Any]) -> list[str]:
    """Rewrite, in place, every stored bound figure of claims.json's ``inputs`` whose number is
    stored too; returns what changed (one line each)."""
    changed: list[str] = []
    for name, restater in RESTATERS.items():
        if isinstance(inputs.get(name), dict):
            restater(inputs[name], changed)
    return changed
