"""Certification time per head at the reference size d = 16, L = 16 (run with timings:
pytest tests/benchmarks/test_bench_certify.py --benchmark-enable --benchmark-only): the full certificate (sink at
every query, eta_up, eta_lo, T1) of

- a trained single-layer softmax head (seed 0, trained here to the stop rule, ~900 steps);
- a harder head: the sink construction (beta = 8) with N(0, 0.02^2) noise on every weight, whose
  content-content score couplings are ~10x the trained heads', so the search meets its node
  budget at many queries and reports a certified gap instead of closing."""

import os
from fractions import Fraction

import numpy as np
import pytest

from constructions import reference, softmax_head
from empirical.analysis.certificates import certify_network


def trained_head() -> reference.Network:
    from empirical.training.train import TrainConfig, train
    from empirical.weights.formats import networks_from_summary

    summary = train(TrainConfig(seeds=(0,), eval_sequences=16, log_every=10_000), quiet=True)
    return networks_from_summary(summary)[0].network


def noisy_construction(seed: int = 0) -> reference.Network:
    net = softmax_head.build(16, 8)
    rng = np.random.default_rng(seed)

    def noisy(M):
        return reference.as_matrix([[Fraction(float(v) + float(rng.normal(0, 0.02))) for v in row] for row in M])

    layer = net.layers[0]
    return reference.single_head("softmax", noisy(layer.W_Q[0]), noisy(layer.W_K[0]), noisy(layer.W_V[0]), noisy(layer.W_O))


def test_bench_certify_trained_head(benchmark):
    # eta_up at the trigger by the box relaxation (the vertex bound on this head: the next benchmark)
    net = trained_head()
    cert = benchmark.pedantic(certify_network, args=(net, 16, False), rounds=1, iterations=1)
    assert cert["min_bos_nontrigger"] > 0.99 and cert["eta"]["eta_lo"] <= cert["eta"]["eta_up"]
    benchmark.extra_info["largest_gap"] = cert["largest_gap"]


@pytest.mark.skipif(not os.environ.get("SINKS_SLOW"), reason="the vertex bound on a trained head (~1-7 min): set SINKS_SLOW=1")
def test_bench_certify_trained_head_with_the_vertex_bound(benchmark):
    net = trained_head()
    cert = benchmark.pedantic(certify_network, args=(net, 16), rounds=1, iterations=1)
    eta = cert["eta"]
    assert eta["eta_lo"] <= eta["eta_up"] <= eta["eta_up_box"]
    benchmark.extra_info["ratio"] = eta["ratio"]


@pytest.mark.skipif(not os.environ.get("SINKS_SLOW"), reason="harder head (~30 s): set SINKS_SLOW=1")
def test_bench_certify_harder_head(benchmark):
    net = noisy_construction()
    cert = benchmark.pedantic(certify_network, args=(net, 16), rounds=1, iterations=1)
    assert all(q["certified"] <= q["witness_high"] + 1e-12 for q in cert["queries"] if q["case"] != "trigger")
    assert cert["eta"]["eta_lo"] <= cert["eta"]["eta_up"]
    benchmark.extra_info["largest_gap"] = cert["largest_gap"]


SLOW = os.environ.get("SINKS_SLOW") == "1"
SIZES = [(d, L) for d in (16, 32, 64, 128) for L in (16, 64, 256)]


def _cpu(fn):
    import time

    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


@pytest.mark.skipif(not SLOW, reason="size table: set SINKS_SLOW=1")
@pytest.mark.parametrize("d,L", SIZES)
def test_bench_certify_size_table(benchmark, d, L):
    """The softmax BOS-gap head (beta = 10), whose exact answer is known in closed form, certified
    over every input (sink at every query, eta_up, eta_lo, T1) at every size of the table: CPU
    time (one thread), branch-and-bound nodes in all, and the final gaps."""
    from tests.benchmarks.conftest import FIGURES

    net = softmax_head.build(d, 10)
    (cert, cpu) = benchmark.pedantic(lambda: _cpu(lambda: certify_network(net, L)), rounds=1, iterations=1)
    closed = float(softmax_head.max_error(10, L))
    e = cert["eta"]
    nodes = sum(q["nodes"] for q in cert["queries"])
    assert cert["all_exact"] and e["eta_lo"] <= closed <= e["eta_up"]
    benchmark.extra_info.update({"cpu_s": cpu, "nodes": nodes, "largest_gap": cert["largest_gap"],
                                 "eta_ratio": e["ratio"]})
    FIGURES.append(f"certify BOS-gap head d = {d:3d}, L = {L:3d}: {cpu:7.1f} s CPU, {nodes:6d} nodes, "
                   f"largest sink gap {cert['largest_gap']:.1e}, eta_up / eta_lo {e['ratio']:.6f}")


@pytest.mark.skipif(not SLOW, reason="trains a d = 64 head (~2 min): set SINKS_SLOW=1")
def test_bench_certify_trained_d64(benchmark):
    """A trained d = 64 single-layer head (``sinks train --d 64``, seed 0), certified at L = 16."""
    from constructions.numbers import format_down, format_up
    from empirical.training.train import TrainConfig, train
    from empirical.weights.formats import networks_from_summary
    from tests.benchmarks.conftest import FIGURES

    net = networks_from_summary(train(TrainConfig(d=64, seeds=(0,), eval_sequences=16, log_every=10_000),
                                      quiet=True))[0].network
    (cert, cpu) = benchmark.pedantic(lambda: _cpu(lambda: certify_network(net, 16)), rounds=1, iterations=1)
    e = cert["eta"]
    assert cert["min_bos_nontrigger"] > 0.99 and e["eta_lo"] <= e["eta_up"]
    nodes = sum(q["nodes"] for q in cert["queries"])
    benchmark.extra_info.update({"cpu_s": cpu, "nodes": nodes, "largest_gap": cert["largest_gap"]})
    FIGURES.append(f"certify trained d = 64 head, L = 16: {cpu:.1f} s CPU, {nodes} nodes, largest sink gap "
                   f"{cert['largest_gap']:.1e}, eta_up {format_up(e['eta_up'], 4)} / eta_lo {format_down(e['eta_lo'], 4)}")
