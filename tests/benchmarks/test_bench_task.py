"""Sampler throughput (run with timings: pytest tests/benchmarks --benchmark-enable --benchmark-only)."""

import torch

from constructions import task


def test_bench_sampler_reference_size(benchmark):
    cfg = task.TaskConfig()  # d = 16, L = 16
    gen = torch.Generator().manual_seed(0)
    batch = benchmark(task.sample, cfg, 4096, gen)
    assert batch.x.shape == (4096, 16, 16)
    assert torch.all(batch.x[:, 0, 0] == 1)
