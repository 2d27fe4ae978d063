"""Every sinking head of a trained stack searched for its worst input, beside its certified minimum.

    python -m tests.benchmarks.bench_stack_attack SUMMARY [--certify CERTIFY_JSON ...] [--out FILE]

SUMMARY is a ``sinks train`` summary; each CERTIFY_JSON a ``sinks certify`` output for some of its
seeds (the box certificate's per-head minima; several files for seeds certified apart). Per seed,
every head that sinks on the evaluation set (mean non-trigger BOS mass > STACK_SINK_MASS) is
searched by ``empirical.analysis.stack_attack`` and its worst input replayed exactly; printed: seed,
head, measured mean, worst input found (the replayed upper end), certified minimum and verdict, and
the search's and the replay's CPU seconds per stack. Not a test: a measurement for the READMEs.
"""

from __future__ import annotations

import argparse
import json
import time


def certified_minima(paths: list[str]) -> dict[tuple[str, int, int], float]:
    out = {}
    for path in paths:
        for r in json.load(open(path))["results"]:
            for h in r["certificate"]["heads"]:
                out[(r["label"], h["layer"], h["head"])] = h["min_bos_certified"]
    return out


def main(argv: list[str] | None = None) -> None:
    import torch

    from constructions import files
    from constructions.numbers import format_down, format_up
    from empirical.analysis import stack_attack
    from empirical.training.metrics import STACK_SINK_MASS
    from empirical.weights import networks_from_summary
    from proofs.certify.stack import refute

    p = argparse.ArgumentParser()
    p.add_argument("summary")
    p.add_argument("--certify", nargs="*", default=[])
    p.add_argument("--seeds", type=int, nargs="*", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    summary = json.load(open(args.summary))
    L = summary["config"]["L"]
    certified = certified_minima(args.certify)
    rows, stacks = [], []
    print("seed | head | measured mean | worst input found (replayed, upper) | certified min (box) | verdict")
    for item, member in zip(networks_from_summary(summary, "training summary"), summary["members"]):
        if args.seeds is not None and int(item.label.split()[1]) not in args.seeds:
            continue
        sinking = [(n, h) for n, layer in enumerate(member["layers"]) for h, m in enumerate(layer)
                   if m["bos_nontrigger_mean"] > STACK_SINK_MASS]
        found = stack_attack.attack(item.network, L, sinking)
        cpu = time.process_time()
        for w in found["heads"]:
            low, high = refute.replay_bos(item.network, w["contents"], w["trigger"], w["layer"], w["head"], w["query"])
            cert = certified.get((item.label, w["layer"], w["head"]))
            b = refute.bracket(cert, high) if cert is not None else {"verdict": "-", "width": None}
            mean = member["layers"][w["layer"]][w["head"]]["bos_nontrigger_mean"]
            rows.append({"seed": item.label, "head": f"L{w['layer']}H{w['head']}", "measured_mean": mean,
                         "worst_low": low, "worst_found": high, "certified_min": cert, **{k: b[k] for k in ("verdict", "width")},
                         "query": w["query"], "trigger": w["trigger"], "contents": w["contents"]})
            print(f"{item.label} | L{w['layer']}H{w['head']} | {mean:.4f} | {format_up(high, 4)} (query {w['query']}, "
                  f"trigger {w['trigger']}) | {format_down(cert, 4) if cert is not None else '-'} | {b['verdict']}", flush=True)
        replay_cpu = time.process_time() - cpu
        stacks.append({"seed": item.label, "heads": len(sinking), "search_cpu_seconds": found["cpu_seconds"],
                       "replay_cpu_seconds": replay_cpu})
        print(f"  {item.label}: {len(sinking)} sinking heads; search {found['cpu_seconds']:.1f} s CPU, replay "
              f"{replay_cpu:.1f} s CPU", flush=True)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("certified", "refuted", "unknown")}
    print(f"sinking heads: {len(rows)}; {counts}")
    if args.out:
        files.write_json(args.out, {"rows": rows, "stacks": stacks, "counts": counts,
                                    "provenance": files.provenance({"summary": args.summary, "certify": args.certify,
                                                                    "seeds": args.seeds, "steps": stack_attack.STEPS,
                                                                    "restarts": stack_attack.RESTARTS,
                                                                    "screen": stack_attack.SCREEN_STEPS,
                                                                    "keep": stack_attack.KEEP}, args.seeds)})


if __name__ == "__main__":
    main()
