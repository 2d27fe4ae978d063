"""Training and bound timings (run with timings: pytest tests/benchmarks --benchmark-enable
--benchmark-only; the default run, as in CI, runs each once untimed: pyproject's --benchmark-disable). Figures measured here go to the README with the command;
the derived ones (steps/s, GFLOP/s, the matmul share) are printed at the end of the run.

The training step timed here is the one ``empirical.training.train.train`` runs (``train._sample``,
``train.batch_errors``, the stop-rule read-back, ``train.update``), 5 seeds in one ensemble, one
torch thread, on the CPU and, when torch sees one, a CUDA GPU (skipped with a reason otherwise).
"""

import dataclasses
import statistics
import time

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from constructions import softmax_head, task
from empirical.training import bound
from empirical.training import train as T
from empirical.training.model import AttentionModel, from_network

from .conftest import FIGURES

FIXED_STEPS = dict(tol=1e-12, eval_sequences=10, log_every=10_000)  # never stops early; tiny evaluation
SEEDS = (0, 1, 2, 3, 4)
SETTINGS = [(1, 1), (2, 2), (4, 4)]
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                  reason="no CUDA GPU visible to torch on this machine")),
]


def _sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _step_fn(layers, heads, seeds=SEEDS, device="cpu"):
    """One training step exactly as ``train`` runs it: sample, forward, errors, read the [S]
    errors back for the stop rule, Adam on the active members."""
    cfg = T.TrainConfig(layers=layers, heads=heads, seeds=seeds)
    model = AttentionModel("softmax", cfg.d, layers=layers, heads=heads, residual=cfg.residual,
                           ensemble=len(seeds), seeds=seeds, device=device)
    opt = T.optimizer(model, cfg)
    gens = [torch.Generator().manual_seed(T.data_seed(s)) for s in seeds]
    train_task = cfg.task()

    def step():
        x, y = T._sample(train_task, cfg.batch, gens, device)
        mse, max_err = T.batch_errors(model, x, y)
        max_err.tolist()
        T.update(opt, mse)
        return mse.sum().item()

    return step


def _seconds_per_call(fn, calls, device="cpu"):
    _sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / calls


@pytest.mark.benchmark(group="train step, 5 seeds")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layers, heads", SETTINGS)
def test_bench_training_step(benchmark, layers, heads, device):
    step = _step_fn(layers, heads, device=device)
    for _ in range(3):
        step()
    loss = benchmark.pedantic(step, rounds=20 if layers == 4 else 50, iterations=1, setup=lambda: _sync(device))
    assert loss > 0
    median = benchmark.stats.stats.median if benchmark.stats else None
    if median:
        FIGURES.append(f"ensemble steps/s, {layers}x{heads}, 5 seeds, {device}: {1 / median:.1f} "
                       f"(median step {median * 1e3:.2f} ms)")


# ----------------------------------------------------------------------------------------
# The 4 x 4 x 5-seed step against the matmuls it runs.


class _MatmulLog(TorchDispatchMode):
    """Records every matrix product of the ops run under it: (op, shapes, strides, dtype)."""

    OPS = {torch.ops.aten.bmm.default, torch.ops.aten.mm.default, torch.ops.aten.baddbmm.default,
           torch.ops.aten.addmm.default}

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in self.OPS:
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            self.calls.append((func, [(tuple(t.shape), t.stride(), t.dtype) for t in tensors]))
        return func(*args, **(kwargs or {}))


def _flops(func, specs) -> int:
    a, b = specs[-2][0], specs[-1][0]  # the two factors (baddbmm / addmm: after the addend)
    batch = a[0] if len(a) == 3 else 1
    m, k, n = a[-2], a[-1], b[-1]
    return 2 * batch * m * k * n


def _replay(calls):
    """The logged products on fresh tensors of the same shapes and strides, as one function."""
    g = torch.Generator().manual_seed(0)
    prepared = []
    for func, specs in calls:
        args = []
        for shape, stride, dtype in specs:
            t = torch.empty_strided(shape, stride, dtype=dtype)
            t.copy_(torch.randn(shape, generator=g, dtype=dtype))
            args.append(t)
        prepared.append((func, args))

    def run():
        for func, args in prepared:
            func(*args)

    return run


def test_bench_matmul_share_of_the_4x4_step(benchmark):
    """Effective GFLOP/s of the 4 x 4 x 5-seed step (the FLOPs of the matrix products it runs,
    forward and backward, over the whole step's time) next to the GFLOP/s of those same products
    run alone on this machine (same shapes and strides). Their ratio is the share of the step
    spent at matmul speed; the target is >= 70 %. Timings are interleaved in 10 rounds
    of 5 calls, and each side's fastest round is used: on a shared machine the fastest round is
    the one least disturbed by other jobs (medians are reported beside it)."""
    step = _step_fn(4, 4)
    for _ in range(3):
        step()
    log = _MatmulLog()
    with log:
        step()
    flops = sum(_flops(f, s) for f, s in log.calls)
    matmuls = _replay(log.calls)
    step_s, mm_s = [], []

    def measure():
        for _ in range(10):  # interleaved rounds
            step_s.append(_seconds_per_call(step, 5))
            mm_s.append(_seconds_per_call(matmuls, 5))

    benchmark.pedantic(measure, rounds=1, iterations=1)
    step_t, mm_t = min(step_s), min(mm_s)
    # The reference formulation (separate Q, K, V projections per head) runs 6 products of
    # 2 S B L d^2 H FLOPs per layer forward and twice that backward: ~1.51 GFLOP per step.
    reference = 3 * 4 * 6 * 2 * 5 * 128 * 16 * 16 * 16 * 4
    info = {"matmul_calls": len(log.calls), "step_gflop": flops / 1e9, "step_ms": step_t * 1e3,
            "matmul_ms": mm_t * 1e3, "effective_gflops": flops / step_t / 1e9,
            "matmul_gflops_same_shapes": flops / mm_t / 1e9, "ratio": mm_t / step_t,
            "reference_formulation_gflop": reference / 1e9,
            "reference_equivalent_gflops": reference / step_t / 1e9,
            "median_step_ms": statistics.median(step_s) * 1e3, "median_matmul_ms": statistics.median(mm_s) * 1e3,
            "median_ratio": statistics.median(mm_s) / statistics.median(step_s)}
    benchmark.extra_info.update(info)
    FIGURES.append(
        f"4x4 x 5 seeds step: {info['step_gflop']:.3f} GFLOP in {len(log.calls)} matmuls, {info['step_ms']:.1f} ms "
        f"-> {info['effective_gflops']:.1f} GFLOP/s; the same matmuls alone {info['matmul_ms']:.1f} ms "
        f"-> {info['matmul_gflops_same_shapes']:.1f} GFLOP/s; ratio {100 * info['ratio']:.0f} % (target >= 70 %); "
        f"reference formulation {info['reference_formulation_gflop']:.2f} GFLOP -> "
        f"{info['reference_equivalent_gflops']:.1f} GFLOP/s equivalent (fastest rounds; medians: step "
        f"{info['median_step_ms']:.1f} ms, matmuls {info['median_matmul_ms']:.1f} ms, ratio "
        f"{100 * info['median_ratio']:.0f} %)")
    assert flops > 0 and 0 < info["ratio"]


# ----------------------------------------------------------------------------------------
# Whole runs.


@pytest.mark.benchmark(group="full run")
def test_bench_single_layer_softmax_run_to_the_stop_rule(benchmark):
    cfg = T.TrainConfig(seeds=(0,), max_steps=5000)
    summary = benchmark.pedantic(T.train, args=(cfg,), kwargs={"quiet": True}, rounds=1, iterations=1)
    member = summary["members"][0]
    head = member["layers"][0][0]
    assert member["converged"] and member["final_batch_max_abs_error"] < cfg.tol
    assert head["bos_nontrigger_mean"] > 0.99
    assert head["bound"]["violations"] == 0 and head["bound"]["bound_mean"] > 0.99
    benchmark.extra_info.update(steps=member["steps"], steps_per_second=summary["timing"]["steps_per_second"],
                                bound_mean=head["bound"]["bound_mean"], bos_mass=head["bos_nontrigger_mean"])


SEED_RUN = T.TrainConfig(seeds=SEEDS, max_steps=300, **FIXED_STEPS)


@pytest.mark.benchmark(group="5 seeds, 300 steps")
def test_bench_five_seeds_batched(benchmark):
    summary = benchmark.pedantic(T.train, args=(SEED_RUN,), kwargs={"quiet": True}, rounds=1, iterations=1)
    assert [m["steps"] for m in summary["members"]] == [300] * 5


@pytest.mark.benchmark(group="5 seeds, 300 steps")
def test_bench_five_seeds_sequential(benchmark):
    def sequential():
        return [T.train(dataclasses.replace(SEED_RUN, seeds=(s,)), quiet=True) for s in SEED_RUN.seeds]

    summaries = benchmark.pedantic(sequential, rounds=1, iterations=1)
    assert [s["members"][0]["steps"] for s in summaries] == [300] * 5


@pytest.mark.benchmark(group="certified bound")
def test_bench_certified_bound_on_1000_sequences(benchmark):
    model = from_network(softmax_head.build(16, 8), dtype=torch.float64)
    batch = task.sample(task.TaskConfig(trigger=7), 1000, torch.Generator().manual_seed(0), dtype=torch.float64)
    summary = benchmark.pedantic(bound.model_bounds, args=(model, batch.x, batch.trigger), rounds=1, iterations=1)[0][0]
    assert summary["violations"].item() == 0 and summary["bound_mean"].item() > 0.99
