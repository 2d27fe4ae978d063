"""The default ``sinks reproduce``'s budget, part by part, against the 20-minute target:

    python -m tests.benchmarks.bench_reproduce_budget RESULTS_DIR [--run] [--quick] [--json FILE]

(from the checkout root). With ``--run`` it first runs ``reproduce`` into RESULTS_DIR (parts
already finished there with the same config are reused, as ``sinks reproduce`` does: use a fresh
folder to time a whole run); without it, it reads a finished run's part records. It prints each
part's wall time, CPU time (its worker processes included) and the load it ran at, the machine
with its vector width, and the total against ``BUDGET_WALL_S`` (the time some part ran,
``reproduce.total_wall``: the smt part runs alongside the others, ``reproduce.ALONGSIDE``, so the
parts' walls overlap). Plan by CPU time: the load moves
wall time far more than CPU time, so a wall figure taken on a busy machine overstates an idle one's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from empirical.host import usage
from empirical.pipeline import reproduce as R

BUDGET_WALL_S = 20 * 60  # the target: the default run on an idle 2-core machine


def budget(results_dir: Path) -> dict:
    """Each stored part's wall and CPU seconds and load, in ``PARTS`` order, and the totals."""
    parts = {}
    for name in R.PARTS:
        record = R.load_part(results_dir, name)
        if record is None:
            continue
        use = record.get("usage") or {}
        parts[name] = {"status": record.get("status"), "wall_s": record.get("wall_s"), "cpu_s": use.get("cpu_s"),
                       "load_mean": use.get("load_mean"), "machine": record.get("machine") or {},
                       "quick": bool((record.get("provenance") or {}).get("config", {}).get("quick"))}
    wall = R.total_wall([r for r in (R.load_part(results_dir, name) for name in parts) if r])
    cpu = sum(p["cpu_s"] or 0 for p in parts.values())
    return {"parts": parts, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "budget_wall_s": BUDGET_WALL_S,
            "missing": [name for name in R.PARTS if name not in parts]}


def table(data: dict) -> str:
    lines = ["| part | mode | status | wall s | CPU s | load |", "|---|---|---|---|---|---|"]
    for name, p in data["parts"].items():
        load = "not recorded" if p["load_mean"] is None else f"{p['load_mean']:.1f}"
        cpu = "not recorded" if p["cpu_s"] is None else f"{p['cpu_s']:.1f}"
        lines.append(f"| {name} | {'quick' if p['quick'] else 'default'} | {p['status']} | {p['wall_s']:.1f} | {cpu} | {load} |")
    machines = sorted({usage.describe_machine(p["machine"]) for p in data["parts"].values() if p["machine"]})
    verdict = "within" if data["wall_s"] <= data["budget_wall_s"] else "over"
    lines += ["", f"total: {data['wall_s']:.1f} s wall, {data['cpu_s']:.1f} s CPU; {verdict} the "
                  f"{data['budget_wall_s'] / 60:.0f}-minute wall budget (which is for an idle machine)",
              "machine: " + ("; ".join(machines) or "not recorded")]
    if data["missing"]:
        lines.append("parts not in this folder: " + ", ".join(data["missing"]))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--run", action="store_true", help="run reproduce into RESULTS first")
    parser.add_argument("--quick", action="store_true", help="with --run: the quick run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.run:
        R.reproduce(args.results, quick=args.quick, log=lambda line: print(line, file=sys.stderr, flush=True))
    elif not args.results.is_dir():
        parser.error(f"{args.results} is not a results folder (give --run to make one)")
    data = budget(args.results)
    print(table(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
