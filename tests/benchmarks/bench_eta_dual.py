"""Where eta_up's looseness lives: the worst-case and reference single-layer heads of a
``sinks reproduce`` results folder, each with eta_up / eta_lo over every input beside the
fixed-query bound (``proofs.certify.head.trigger.dual``) at its witness's trigger position and
trigger content.

    python -m tests.benchmarks.bench_eta_dual [--results results] [--cells 64] [--json FILE]
    python -m tests.benchmarks.bench_eta_dual --around [--cells 16] [--random 8] [--heads 0 3 ...]

(from the checkout root; about 15-40 s CPU per head). It reads the worst-case setting's job records
(``results/runs/worst_case/*.json``: each seed's fine-tuned weights and its SPEC section 4
reference weights), certifies each head over every input (``empirical.analysis.certificates.certify_network``:
eta_up, and eta_lo with its witness), then bounds the error over every input that shares the
witness's trigger position j and trigger content q. That bound is certified for that slice of the
input class only; eta_lo's witness lies in the slice, so bound / eta_lo is the bracket there.

``--around``: how the fixed-query bound varies with the trigger content at the witness's j: at the
witness's q, at each of its n single-coordinate flips, at ``--random`` random vertices of the
content box and at q = 0 (bound / eta_lo each; a diagnostic of where a bound over every trigger
content would have to be tight, not a certificate over them; about 2-7 min per head at 16 cells).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from constructions.numbers import format_down, format_up


def heads_of(results: Path) -> list[tuple[str, object]]:
    """(label, network) for every worst-case seed's fine-tuned and reference head."""
    from empirical.weights.formats import networks_from_summary

    out = []
    for path in sorted((results / "runs" / "worst_case").glob("*.json")):
        summary = json.loads(path.read_text())["result"]
        for item, member in zip(networks_from_summary(summary, str(path)), summary["members"]):
            out.append((f"worst-case seed {member['seed']}", item.network))
            ref = {**summary, "weights": [member["reference_weights"]], "config": {**summary["config"], "seeds": [member["seed"]]}}
            out.append((f"reference seed {member['seed']}", networks_from_summary(ref, str(path))[0].network))
    return out


def row(label: str, net, L: int, cells: int | None = None) -> dict:
    from empirical.analysis.certificates import certify_network
    from proofs.certify.arithmetic import heads
    from proofs.certify.head.trigger import dual as trigger_dual

    start = time.process_time()
    eta = certify_network(net, L)["eta"]
    fixed = trigger_dual.at_witness(heads.head_maps(net), eta, cells or trigger_dual.CELLS)
    out = {"head": label, "eta_up": eta["eta_up"], "eta_lo": eta["eta_lo"], "ratio": eta["ratio"],
           "witness_case": eta["case"]}
    if fixed is not None:  # None: the witness is at a non-trigger query, no trigger slice to bound
        out.update({"attained_by": eta["attained_by"], "witness_trigger": eta["trigger"],
                    "fixed_query_bound": fixed["bound"], "fixed_query_ratio": fixed["ratio"],
                    "dual": fixed["dual"], "box": fixed["box"]})
    out["cpu_s"] = time.process_time() - start
    return out


def around(label: str, net, L: int, cells: int, random: int, seed: int = 0) -> dict:
    """The fixed-query bound / eta_lo at the witness's trigger content, its single flips, random
    vertices and 0 (the witness's trigger position throughout)."""
    import numpy as np

    from empirical.analysis.certificates import certify_network
    from proofs.certify.arithmetic import heads
    from proofs.certify.head.trigger import dual as trigger_dual

    h = heads.head_maps(net)
    eta = certify_network(net, L)["eta"]
    if h.kind != "softmax" or eta.get("case") != "trigger":
        return {"head": label, "witness_case": eta.get("case")}
    j, q0 = eta["trigger"], np.array(eta["contents"][eta["trigger"] - 1])
    flips = [q0 * np.where(np.arange(h.n) == i, -1, 1) for i in range(h.n)]
    rng = np.random.default_rng(seed)
    randoms = [rng.choice([-1.0, 1.0], size=h.n) for _ in range(random)]
    ratio = lambda q: trigger_dual.fixed_query_bound(h, j, q, cells)["bound"] / eta["eta_lo"]
    return {"head": label, "trigger": j, "cells": cells, "witness": ratio(q0), "flips": [ratio(q) for q in flips],
            "random": [ratio(q) for q in randoms], "zero": ratio(np.zeros(h.n))}


def _around_cells(r: dict) -> list[str]:
    if "witness" not in r:
        return [f"({r['witness_case']} query)", "-", "-", "-", "-"]
    return [str(r["trigger"]), f"{r['witness']:.3f}", f"{min(r['flips']):.3f} - {max(r['flips']):.3f}",
            f"{min(r['random']):.3f} - {max(r['random']):.3f}", f"{r['zero']:.3f}"]


def _row_cells(r: dict) -> list[str]:
    head = [format_up(r["eta_up"], 6), format_down(r["eta_lo"], 6), f"{r['ratio']:.3f}"]  # bounds on their side
    if "fixed_query_bound" not in r:
        return head + [f"({r['witness_case']} query)", "-", "-", "-", f"{r['cpu_s']:.1f}"]
    return head + [str(r["witness_trigger"]), format_up(r["fixed_query_bound"], 6), f"{r['fixed_query_ratio']:.3f}",
                   format_up(r["box"], 6), f"{r['cpu_s']:.1f}"]


def print_table(columns: list[str], nets, compute, cells, path: Path | None) -> int:
    """One markdown row per head (printed as it is computed); the rows as JSON to ``path``."""
    print("| head | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    rows = []
    for label, net in nets:
        rows.append(compute(label, net))
        print("| " + " | ".join([label] + cells(rows[-1])) + " |", flush=True)
    if path:
        path.write_text(json.dumps(rows, indent=1))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--cells", type=int, default=None, help="cells of the normaliser (default trigger_dual.CELLS)")
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--json", type=Path)
    p.add_argument("--around", action="store_true", help="the bound at the witness's content, its flips and random vertices")
    p.add_argument("--random", type=int, default=8, help="random vertices of the trigger content (--around)")
    p.add_argument("--heads", type=int, nargs="+", help="only these heads (indices in the order printed)")
    a = p.parse_args(argv)
    nets = heads_of(a.results)
    if not nets:
        print(f"no worst-case job records under {a.results / 'runs' / 'worst_case'}", file=sys.stderr)
        return 2
    nets = [nets[i] for i in a.heads if 0 <= i < len(nets)] if a.heads else nets
    if a.around:
        columns = ["witness j", "bound / eta_lo at the witness's q", "single flips: min - max",
                   "random vertices: min - max", "q = 0"]
        return print_table(columns, nets, lambda label, net: around(label, net, a.L, a.cells or 16, a.random),
                           _around_cells, a.json)
    columns = ["eta_up", "eta_lo", "eta_up / eta_lo", "witness j", "bound at the witness's (j, q)", "its / eta_lo",
               "box relaxation there", "CPU s"]
    return print_table(columns, nets, lambda label, net: row(label, net, a.L, a.cells), _row_cells, a.json)


if __name__ == "__main__":
    raise SystemExit(main())
