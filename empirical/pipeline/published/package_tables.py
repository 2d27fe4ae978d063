"""The package READMEs' run-produced tables (the ``empirical`` rooms' READMEs, ``proofs/certify/README.md``).

Most are a report table of a part, whole or some of its columns (``report_table``); the
reference-runs table condenses a stack's per-head masses to their range, and the functional-sink
summary the training part's per-head ablation rows to one row per run (the report keeps both per
head).
"""

from __future__ import annotations

import statistics
from typing import Any, Callable

from .numbers import fmt, span
from .records import NotInRun, Records, Table


def report_table(part: str, title_start: str, columns: list[str] | None = None) -> Callable[[Records], Any]:
    """A part's report table (its first one whose title starts so), optionally only ``columns``."""

    def build(R: Records) -> tuple[list[str], list[list[str]]]:
        try:
            t = R.table(part, title_start)
        except NotInRun as e:
            return ["table"], [[str(e)]]
        keep = [t["columns"].index(c) for c in columns] if columns else range(len(t["columns"]))
        return [t["columns"][i] for i in keep], [[row[i] for i in keep] for row in t["rows"]]

    return build


def training_runs(R: Records) -> tuple[list[str], list[list[str]]]:
    """The training part's reference-runs table, a stack's "per head: m ± s, ..." mass cell
    written as the range of its heads' means over the seeds (each head's: the report's per-head
    table), so that every cell stays one short line."""
    columns, rows = report_table("training", "Reference runs")(R)
    mass = "BOS mass at non-trigger queries"
    if mass not in columns:
        return columns, rows
    k = columns.index(mass)
    for row in rows:
        if str(row[k]).startswith("per head:"):
            heads = R.details("training")["runs"][row[0].replace(" ", "-")]["bos_nontrigger_mean"]
            means = [statistics.fmean(h) for layer in heads for h in layer]
            row[k] = f"per head {span(means, 4)} (mean over seeds); {row[k].rsplit('; ', 1)[-1]}"
    return columns, rows


def functional_summary(R: Records) -> tuple[list[str], list[list[str]]]:
    columns = ["run", "seeds", "heads relied on in some seed (BOS removed: error +> 0.05)", "their BOS mass",
               "error increase when removed (those heads)", "largest increase", "BOS value zeroed: functional head-seeds"]
    try:
        ablations = R.details("training")["functional_sinks"]
    except NotInRun as e:
        return columns, [[str(e)] + [""] * (len(columns) - 1)]
    rows = []
    for key, a in ablations.items():
        if "rows" not in a:
            rows.append([key, "-", a["missing"], "-", "-", "-", "-"])
            continue
        rs = a["rows"]
        heads = sorted({(r["layer"], r["head"]) for r in rs})
        relied = [r for r in rs if r["removed_functional"]]
        relied_heads = sorted({(r["layer"], r["head"]) for r in relied})
        worst = max(rs, key=lambda r: r["removed_increase"])
        rows.append([
            key.replace("-", " "), len({r["seed"] for r in rs}), f"{len(relied_heads)}/{len(heads)}",
            span([r["bos_mass"] for r in relied], 3) if relied else "-",
            span([r["removed_increase"] for r in relied], 2, sign=True) if relied else "-",
            f"{worst['removed_increase']:+.2g} (L{worst['layer']}H{worst['head']}, seed {worst['seed']}, BOS mass "
            f"{fmt(worst['bos_mass'], 3)})",
            f"{sum(r['value_zeroed_functional'] for r in rs)}/{len(rs)}",
        ])
    return columns, rows


def worst_case_table(R: Records) -> tuple[list[str], list[list[str]]]:
    """The training part's "T1 in full" table (the worst-case setting, ``empirical.pipeline.parts.t1_end_to_end``).
    A recorded run from before that setting holds no such table (its unread tables are recorded
    as empty entries), which renders as "not in this run"."""
    try:
        tables = [t for t in R.part("training")["tables"] if t is not None]
    except NotInRun as e:
        return ["table"], [[str(e)]]
    t = next((t for t in tables if t["title"].startswith("T1 in full on trained weights")), None)
    if t is None:
        return ["table"], [["not in this run (the worst-case setting's table 'T1 in full on trained weights' of part "
                            "training: `sinks reproduce` has it)"]]
    return list(t["columns"]), [list(row) for row in t["rows"]]


def vocabulary(R: Records) -> tuple[list[str], list[list[str]]]:
    """The report's verdict words and what each means (``empirical.pipeline.reproduce.VERDICT_MEANINGS``)."""
    from empirical.pipeline.reproduce import VERDICT_MEANINGS

    return ["verdict", "meaning"], [[f"*{word}*", meaning] for word, meaning in VERDICT_MEANINGS.items()]


TABLES = {
    "vocabulary": Table("empirical/pipeline/README.md", vocabulary, from_run=False),
    "training-runs": Table("empirical/training/README.md", training_runs),
    "functional-sinks": Table("empirical/analysis/README.md", functional_summary),
    "beyond-kinds": Table("empirical/analysis/README.md", report_table("beyond", "attention kinds")),
    "beyond-variants": Table("empirical/analysis/README.md", report_table("beyond", "task variants")),
    "certify-seeds": Table("proofs/certify/README.md", report_table(
        "training", "T1 end to end: trained", ["seed", "certified min a_i0 before the trigger", "after the trigger",
                                               "certified max a_j0 at the trigger", "eta_up (certified)",
                                               "eta_lo (replayed witness)", "eta_up / eta_lo",
                                               "T1 (a) bound (eta <= 1/12)", "T1 (b) bound (eta <= 1/120)", "T1 check",
                                               "per-example bound min (eval set)", "measured min (eval set)", "seconds"])),
    "certify-worst-case": Table("proofs/certify/README.md", worst_case_table),
}
