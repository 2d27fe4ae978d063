"""An experiment, not a default: the stack certificate's box method beside its linearised mixtures
(``affine_stack.certify_stack(linear=True)``, ``sinks certify --stack-method linear``) on a trained
softmax stack, per head, with the CPU seconds of each, and per layer the mean interval remainder
of the stream entering it after the trigger (trigger position 2).

    python -m tests.benchmarks.bench_linear_stack SUMMARY [--seeds 0 1] [--out FILE.json]

(from the checkout root). A head's figure is the minimum over every trigger position, non-trigger
query and content; both are sound, so the larger is a certified minimum too.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from proofs.certify.arithmetic import affine, heads
from proofs.certify.stack import affine_stack


def remainders(net, L: int, linear: bool, j: int = 2) -> list[float]:
    """Per layer: the mean remainder per coordinate of the stream entering it, after the trigger."""
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    z, out = affine.inputs(net.d, L, j), []
    for n in range(len(maps)):
        out.append(float(z.r[j + 1:].mean()))
        if n < len(maps) - 1:
            step, _ = affine_stack.layer_step(net.kind, maps[n], z, j, n, {}, linear=linear)
            z = affine.add(z, step)
    return out


def main(argv=None) -> None:
    from empirical.weights import formats

    p = argparse.ArgumentParser()
    p.add_argument("summary")
    p.add_argument("--seeds", type=int, nargs="*", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    record = []
    for item in formats.load(args.summary, seeds=args.seeds):
        row = {"seed": item.label}
        for method, linear in (("box", False), ("linear", True)):
            cpu = time.process_time()
            cert = affine_stack.certify_stack(item.network, item.L, exact_first=False, linear=linear)
            row[method] = {"cpu_seconds": time.process_time() - cpu,
                           "minima": {f"L{h['layer']}H{h['head']}": h["min_bos_certified"] for h in cert["heads"]},
                           "remainder_entering_layer": remainders(item.network, item.L, linear)}
        record.append(row)
        print(item.label, {m: round(row[m]["cpu_seconds"], 1) for m in ("box", "linear")}, "CPU s;",
              "remainders entering each layer, box", np.round(row["box"]["remainder_entering_layer"], 3),
              "linear", np.round(row["linear"]["remainder_entering_layer"], 3), flush=True)
        for head, b in row["box"]["minima"].items():
            print(f"  {head}: box {b:.4g}  linear {row['linear']['minima'][head]:.4g}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
