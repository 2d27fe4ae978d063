"""The certify time per head and its eta_up / eta_lo (the target: <= 60 s CPU at ratio <= 1.1
on a freshly trained head, the five reference seeds in under 5 minutes), with the host's CPU model
and vector width beside each figure:

    SINKS_SLOW=1 pytest tests/benchmarks/test_bench_certify_speed.py --benchmark-enable --benchmark-only -s
    SINKS_SLOW=1 SINKS_CERTIFY_SUMMARY=s5.json SINKS_TARGET_RATIO=1.1 pytest ... (each seed of a stored summary)

The first trains seed 0 as ``sinks train --seeds 0`` does (the stop rule, ~900 steps); the second
certifies every seed of a ``sinks train`` summary (``sinks train --seeds 0 1 2 3 4``: the five
reference seeds). CPU seconds are this process's (``time.process_time``), the certificate alone."""

import os
import time

import pytest

from constructions import native
from empirical.analysis.certificates import certify_network

SLOW = os.environ.get("SINKS_SLOW") == "1"
SUMMARY = os.environ.get("SINKS_CERTIFY_SUMMARY")
TARGET = float(os.environ.get("SINKS_TARGET_RATIO", "1.1"))


def _line(label: str, cert: dict, cpu: float) -> str:
    e = cert["eta"]
    return (f"certify {label} (d = {cert['d']}, L = {cert['L']}, target ratio {TARGET:g}): {cpu:.1f} s CPU, "
            f"eta_up / eta_lo {e['ratio']:.4f} (target {'met' if e['target_met'] else 'NOT met'}); "
            f"CPU {native.cpu_model()}, {native.vector_width()}, {os.cpu_count()} logical CPUs, "
            f"load {os.getloadavg()[0]:.1f}")


def _certify(net, L: int) -> tuple[dict, float]:
    start = time.process_time()
    cert = certify_network(net, L, target_ratio=TARGET)
    return cert, time.process_time() - start


@pytest.mark.skipif(not SLOW, reason="trains and certifies a head (~1 min): set SINKS_SLOW=1")
def test_bench_certify_time_per_fresh_head(benchmark):
    from empirical.training.train import TrainConfig, train
    from empirical.weights.formats import networks_from_summary
    from tests.benchmarks.conftest import FIGURES

    net = networks_from_summary(train(TrainConfig(seeds=(0,), eval_sequences=16, log_every=10_000), quiet=True))[0].network
    cert, cpu = benchmark.pedantic(_certify, args=(net, 16), rounds=1, iterations=1)
    e = cert["eta"]
    assert e["eta_lo"] <= e["eta_up"] <= e["eta_up_box"]
    benchmark.extra_info.update({"cpu_s": cpu, "ratio": e["ratio"], "cpu": native.cpu_model(), "vector": native.vector_width()})
    FIGURES.append(_line("a fresh seed-0 head", cert, cpu))
    print(FIGURES[-1])


@pytest.mark.skipif(not (SLOW and SUMMARY), reason="set SINKS_SLOW=1 and SINKS_CERTIFY_SUMMARY=a sinks train summary")
def test_bench_certify_time_per_summary_seed(benchmark):
    import json

    from empirical.weights.formats import networks_from_summary
    from tests.benchmarks.conftest import FIGURES

    with open(SUMMARY) as f:
        summary = json.load(f)
    items = networks_from_summary(summary, SUMMARY)
    L = summary["config"]["L"]
    results = benchmark.pedantic(lambda: [(item.label, *_certify(item.network, L)) for item in items], rounds=1, iterations=1)
    for label, cert, cpu in results:
        assert cert["eta"]["eta_lo"] <= cert["eta"]["eta_up"]
        FIGURES.append(_line(label, cert, cpu))
        print(FIGURES[-1])
    total = sum(cpu for _, _, cpu in results)
    FIGURES.append(f"certify {len(results)} seeds of {SUMMARY}: {total:.1f} s CPU together")
    print(FIGURES[-1])
    benchmark.extra_info.update({"cpu_s": total, "ratios": [c["eta"]["ratio"] for _, c, _ in results]})
