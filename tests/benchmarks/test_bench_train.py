"""Training and bound timings (run with timings: pytest tests/benchmarks/test_bench_train.py --benchmark-only;
CI runs each once with --benchmark-disable). Figures measured here go to the README with the command."""

import dataclasses

import pytest
import torch

from constructions import softmax_head, task
from empirical import bound
from empirical import train as T
from empirical.model import AttentionModel, from_network



FIXED_STEPS = dict(tol=1e-12, eval_sequences=10, log_every=10_000)  # never stops early; tiny evaluation


def _step_fn(layers, heads, seeds):
    """One training step of the reference setting (sample, forward, backward, Adam)."""
    cfg = T.TrainConfig(layers=layers, heads=heads, seeds=seeds)
    model = AttentionModel("softmax", cfg.d, layers=layers, heads=heads, residual=cfg.residual,
                           ensemble=len(seeds), seeds=seeds)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas)
    gens = [torch.Generator().manual_seed(T.data_seed(s)) for s in seeds]
    train_task = cfg.task()

    def step():
        x, y = T._sample(train_task, cfg.batch, gens, "cpu")
        out, _ = model(x)
        loss = (out - y).pow(2).mean(dim=(1, 2, 3)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    return step


@pytest.mark.benchmark(group="train step")
@pytest.mark.parametrize("layers, heads, seeds", [(1, 1, (0,)), (1, 1, (0, 1, 2, 3, 4)), (4, 4, (0,)),
                                                  (4, 4, (0, 1, 2, 3, 4))])
def test_bench_training_step(benchmark, layers, heads, seeds):
    loss = benchmark(_step_fn(layers, heads, seeds))
    assert loss > 0


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


SEED_RUN = T.TrainConfig(seeds=(0, 1, 2, 3, 4), max_steps=300, **FIXED_STEPS)


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
