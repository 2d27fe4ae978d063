"""Certified per-head BOS mass of trained residual stacks, with SINKS_SLOW=1:

    SINKS_SLOW=1 pytest tests/benchmarks/test_bench_certify_stack.py --benchmark-only -s

trains a 2 x 2 softmax stack (seed 0, the reference settings: lr 1e-4, stop rule 5e-3; 5-15 k steps,
minutes) and certifies it; with SINKS_STACK_SUMMARY=PATH it certifies every seed of that
``sinks train`` summary instead (for instance the 4 x 4 runs, whose training takes an hour on
a loaded machine). Prints per head the measured mean and min BOS mass (eval set), the certified
minimum over every input and the CPU seconds per stack, and checks the goal: every head whose
mean non-trigger BOS mass is above STACK_SINK_MASS gets a non-vacuous bound."""

import json
import os
import time

import pytest

from constructions.numbers import format_down
from empirical.training.metrics import STACK_SINK_MASS

from .conftest import FIGURES

pytestmark = pytest.mark.skipif(not os.environ.get("SINKS_SLOW"), reason="trains or reads trained stacks: set SINKS_SLOW=1")


def summary():
    path = os.environ.get("SINKS_STACK_SUMMARY")
    if path:
        with open(path) as f:
            return json.load(f)
    from empirical.training.train import TrainConfig, train

    return train(TrainConfig(layers=2, heads=2, seeds=(0,), log_every=10_000), quiet=True)


def certify_all(s):
    from empirical.analysis.certificates import certify_network
    from empirical.weights.formats import networks_from_summary

    out = []
    for item, member in zip(networks_from_summary(s), s["members"]):
        start = time.process_time()
        cert = certify_network(item.network, s["config"]["L"])
        out.append((item.label, member, cert, time.process_time() - start))
    return out


def test_bench_certify_trained_stacks(benchmark):
    s = summary()
    results = benchmark.pedantic(certify_all, args=(s,), rounds=1, iterations=1)
    shape = f"{s['config']['layers']} x {s['config']['heads']}"
    for label, member, cert, cpu in results:
        sinking = certified = 0
        for h in cert["heads"]:
            m = member["layers"][h["layer"]][h["head"]]
            sinks = m["bos_nontrigger_mean"] > STACK_SINK_MASS
            sinking, certified = sinking + sinks, certified + (sinks and h["non_vacuous"])
            print(f"{shape} {label} L{h['layer']}H{h['head']}: measured mean {m['bos_nontrigger_mean']:.4f} "
                  f"min {m['bos_nontrigger_min']:.4f}; certified min {format_down(h['min_bos_certified'], 4)}")
            assert h["min_bos_certified"] <= m["bos_nontrigger_min"]  # an eval-set input is an input
        FIGURES.append(f"{shape} {label}: {certified}/{sinking} sinking heads certified, {cpu:.1f} s CPU per stack")
        if shape == "2 x 2":
            assert certified == sinking
