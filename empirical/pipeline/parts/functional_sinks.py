"""The functional-sink table, figure and claims of the ``training`` part: for every trained run
and head, the evaluation error with the head's BOS attention removed (row renormalised) and
with BOS's value zeroed, against the error kept (``empirical.analysis.ablation``), next to the head's
BOS mass.

The theory (T2, ``proofs/statements/t2_multi_layer_existential``) says no particular head of a stack must
sink; the ablation says which sinks training made the model rely on.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

FIGURE = "training_functional_sinks.png"
TEST = "tests/test_ablation.py"


def ablate_runs(summaries: dict) -> dict[tuple, dict[str, Any]]:
    """{(kind, layers, heads): {"rows": [...]} or {"missing": reason}} for every run."""
    from constructions.errors import BadInput
    from empirical.analysis import ablation
    from empirical.host import watch

    out = {}
    with watch.stage("ablations (runs)", len(summaries)) as stage:
        for key, s in summaries.items():
            try:
                result = ablation.of_summary(s)
            except BadInput as e:  # a record written before weights were stored
                out[key] = {"missing": str(e)}
            else:
                out[key] = {"rows": ablation.rows(result, [m["seed"] for m in s["members"]])}
            stage.advance(note="{} {}x{}".format(*key))
    return out


def _head_rows(rows: list[dict]) -> dict[tuple[int, int], list[dict]]:
    heads: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        heads.setdefault((r["layer"], r["head"]), []).append(r)
    return heads


def table(ablations: dict) -> dict[str, Any]:
    from empirical.analysis.ablation import FUNCTIONAL_INCREASE

    out = []
    for (kind, layers, heads), a in ablations.items():
        if "missing" in a:
            out.append([f"{kind} {layers}x{heads}", "-", "-", "-", "-", "-", "-", a["missing"]])
            continue
        for (n, h), per_seed in _head_rows(a["rows"]).items():
            out.append([
                f"{kind} {layers}x{heads}", f"L{n}H{h}",
                ", ".join(f"{r['bos_mass']:.3f}" for r in per_seed),
                ", ".join(f"{r['kept']:.2g}" for r in per_seed),
                ", ".join(f"{r['removed_increase']:+.2g}" for r in per_seed),
                ", ".join(f"{r['value_zeroed_increase']:+.2g}" for r in per_seed),
                f"{sum(r['removed_functional'] for r in per_seed)}/{len(per_seed)}",
                f"{sum(r['value_zeroed_functional'] for r in per_seed)}/{len(per_seed)}",
            ])
    return {
        "title": "Functional sinks: error increase when a head's BOS attention is ablated",
        "columns": ["run", "head", "BOS mass non-trigger (per seed)", "eval max-abs error kept (per seed)",
                    "increase, BOS removed + row renormalised", "increase, BOS value zeroed",
                    "seeds where the sink is functional (removed)", "seeds functional (value zeroed)"],
        "rows": out,
        "note": (f"Evaluation set of the run (1000 sequences, trigger at 7, float64). 'removed': a_i0 = 0 at every "
                 f"non-trigger query i >= 1 of that head, the row rescaled to keep its total; 'value zeroed': BOS's value in "
                 f"that head = 0. A sink is functional when the max-abs error rises by more than "
                 f"{FUNCTIONAL_INCREASE:g} (10 x the stop tolerance)."),
    }


def figure(results_dir: Path, ablations: dict) -> str | None:
    """BOS mass against error increase, one point per head and seed, for the softmax stacks."""
    from empirical.analysis.ablation import FUNCTIONAL_INCREASE
    from empirical.training.figures import _plt, save_png

    stacks = {k: a for k, a in ablations.items() if k[0] == "softmax" and k[1] > 1 and "rows" in a}
    if not stacks:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(stacks), figsize=(5.5 * len(stacks), 4.2), squeeze=False)
    for ax, ((kind, layers, heads), a) in zip(axes[0], sorted(stacks.items())):
        for ablation, marker in (("removed", "o"), ("value_zeroed", "x")):
            ax.scatter([r["bos_mass"] for r in a["rows"]], [r[f"{ablation}_increase"] for r in a["rows"]],
                       marker=marker, label=f"BOS {ablation.replace('_', ' ')}")
        ax.axhline(FUNCTIONAL_INCREASE, color="k", ls="--", lw=1, label=f"functional: > {FUNCTIONAL_INCREASE:g}")
        ax.set_yscale("symlog", linthresh=1e-3)
        low = min(r[f"{which}_increase"] for r in a["rows"] for which in ("removed", "value_zeroed"))
        ax.set_ylim(bottom=1.5 * low if low < 0 else 0.0)  # no empty negative range
        ax.set(xlabel="BOS mass at non-trigger queries (head, seed)", ylabel="eval max-abs error increase",
               title=f"{kind} {layers}x{heads}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, Path(results_dir) / FIGURE)
    return FIGURE


def claims(ablations: dict, figure_name: str | None) -> list[dict]:
    from empirical.analysis.ablation import FUNCTIONAL_INCREASE
    from empirical.training.metrics import STACK_SINK_MASS

    out = []
    for (kind, layers, heads), a in ablations.items():
        if "rows" not in a:
            continue
        rows = a["rows"]
        seeds = sorted({r["seed"] for r in rows})
        relied = [f"L{n}H{h}" for (n, h), rs in _head_rows(rows).items() if any(r["removed_functional"] for r in rs)]
        sinking = [f"L{n}H{h}" for (n, h), rs in _head_rows(rows).items()
                   if statistics.fmean(r["bos_mass"] for r in rs) > STACK_SINK_MASS]
        worst = max(rows, key=lambda r: r["removed_increase"])
        out.append({
            "id": f"functional_{kind}_{layers}x{heads}",
            "claim": f"Functional sinks in the trained {kind} {layers}x{heads} run: which heads' BOS attention the model "
                     f"relies on (error increase > {FUNCTIONAL_INCREASE:g} when removed)",
            "verdict": "observed",
            "evidence": (f"seeds {seeds}: heads relied on in at least one seed {relied or 'none'}; heads whose "
                         f"non-trigger BOS mass, averaged over the {len(seeds)} seeds, is > {STACK_SINK_MASS}: "
                         f"{sinking or 'none'}; largest increase {worst['removed_increase']:.3g} (L{worst['layer']}H{worst['head']}, "
                         f"seed {worst['seed']}, BOS mass {worst['bos_mass']:.3f}); value zeroed functional in "
                         f"{sum(r['value_zeroed_functional'] for r in rows)} of {len(rows)} head-seeds"),
            "test": TEST, "command": "sinks reproduce --only training",
            "figures": [figure_name] if figure_name and kind == "softmax" and layers > 1 else [],
        })
    return out


def part(results_dir: Path, summaries: dict) -> dict[str, Any]:
    """Table, figure and claims for the training part's report."""
    ablations = ablate_runs(summaries)
    name = figure(results_dir, ablations)
    rows = {f"{k}-{l}x{h}": a for (k, l, h), a in ablations.items()}
    return {"table": table(ablations), "claims": claims(ablations, name), "figure": name, "rows": rows}
