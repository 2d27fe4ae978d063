"""The zonotope stack certificate on trained stacks, with SINKS_SLOW=1:

    SINKS_SLOW=1 SINKS_STACK_SUMMARY=results/train/softmax-4x4.json \
        pytest tests/benchmarks/test_bench_zono_stack.py --benchmark-only -s

certifies every seed of that ``sinks train`` summary with ``proofs.certify.stack.zono_stack``
(SINKS_ZONO_BOXES classes per trigger position, default 1; SINKS_COMPARE_BOX=1 also runs the
affine-form method, ~190 s CPU per 4 x 4 stack) and prints per head the measured mean and min BOS
mass (eval set), the certified minima and the CPU seconds per stack; every certified minimum must
lie below the measured minimum (an eval-set input is an input)."""

import json
import os
import time

import pytest

from constructions.numbers import format_down
from empirical.training.metrics import STACK_SINK_MASS

from .conftest import FIGURES

pytestmark = pytest.mark.skipif(not (os.environ.get("SINKS_SLOW") and os.environ.get("SINKS_STACK_SUMMARY")),
                                reason="reads a trained stack summary: set SINKS_SLOW=1 and SINKS_STACK_SUMMARY")


def certify_all(s, boxes, box_too):
    from empirical.weights.formats import networks_from_summary
    from proofs.certify.stack import affine_stack, zono_stack

    out = []
    for item, member in zip(networks_from_summary(s), s["members"]):
        start = time.process_time()
        zono = zono_stack.certify_stack(item.network, s["config"]["L"], boxes=boxes)
        mid = time.process_time()
        box = affine_stack.certify_stack(item.network, s["config"]["L"], exact_first=False) if box_too else None
        out.append((item.label, member, zono, box, mid - start, time.process_time() - mid))
    return out


def test_bench_zonotope_on_trained_stacks(benchmark):
    with open(os.environ["SINKS_STACK_SUMMARY"]) as f:
        s = json.load(f)
    boxes, box_too = int(os.environ.get("SINKS_ZONO_BOXES", "1")), bool(os.environ.get("SINKS_COMPARE_BOX"))
    results = benchmark.pedantic(certify_all, args=(s, boxes, box_too), rounds=1, iterations=1)
    shape = f"{s['config']['layers']} x {s['config']['heads']}"
    for label, member, zono, box, cpu, box_cpu in results:
        counts = [0, 0, 0]
        for n, h in enumerate(zono["heads"]):
            m = member["layers"][h["layer"]][h["head"]]
            sinks = m["bos_nontrigger_mean"] > STACK_SINK_MASS
            b = box["heads"][n]["min_bos_certified"] if box else None
            counts = [counts[0] + sinks, counts[1] + (sinks and h["non_vacuous"]), counts[2] + bool(sinks and box and b >= 0.5)]
            print(f"{shape} {label} L{h['layer']}H{h['head']}: measured mean {m['bos_nontrigger_mean']:.4f} "
                  f"min {m['bos_nontrigger_min']:.4f}; zonotope min {format_down(h['min_bos_certified'], 4)}"
                  + (f"; affine-form min {format_down(b, 4)}" if box else ""))
            assert h["min_bos_certified"] <= m["bos_nontrigger_min"]
        FIGURES.append(f"{shape} {label}: zonotope ({boxes} classes per trigger position) {counts[1]}/{counts[0]} sinking heads "
                       f"certified, {cpu:.1f} s CPU" + (f"; affine forms {counts[2]}/{counts[0]}, {box_cpu:.1f} s CPU" if box else ""))
