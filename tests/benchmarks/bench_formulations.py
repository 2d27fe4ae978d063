"""Training steps per second of each formulation of the layer's products (``empirical.training.formulations``)
against the paper author's loop (``author_loop``), one torch thread, side by side.

    python -m tests.benchmarks.bench_formulations [--rounds 5] [--budget 0.25] [--kind softmax]
                                                  [--compile] [--json FILE] [--only NAME ...]
                                                  [--shapes 1x1 2x2 4x4] [--layer]

(from the checkout root; about 3 minutes on an idle core). Rows: every formulation training the
5-seed ensemble exactly as ``empirical.training.train.train`` steps it (sample, forward, errors, the
stop-rule read-back, Adam), in float32, and ``bmm`` in float64; ``--compile`` adds ``bmm`` under
``torch.compile``. The author's loop trains one seed. Columns: 1 x 1, 2 x 2 and 4 x 4 at the
reference shape (d = L = 16, batch 128).

Timing: every (row, shape) runs for ``--budget`` seconds of CPU time per round, rounds
interleaved, the first round a warm-up; a rate is steps over process CPU time (user + system,
which moves far less than wall time when other jobs share the machine), and each row keeps its
fastest round (the least disturbed; the median is printed too, and the paired ratio: the median
over rounds of a row's rate against bmm's in the same round, which holds still when the load
drifts from round to round, where the fastest round does not). The load average and the machine
are printed with the table. Below it: what 5 seeds of each formulation cost against the author's 1
seed per shape, and the six reference settings (SPEC section 4's steps to stop, 5 seeds in one
ensemble each) against the author's six runs of one seed. The ensemble's figure is an upper bound:
in training, stopped members leave the ensemble and later steps get cheaper.

``--layer`` times the compiled kernel alone instead: the forward and the backward of one layer
(``attend.cpp``, built for this host and ``$SINKS_KERNEL_FLAGS``) at the ensemble's shape (5
members x the batch of 128 sequences, L = d = 16, float32) with each shape's heads, both kinds;
milliseconds of process CPU time per call, the fastest of ``--rounds`` rounds of ``--budget`` s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from empirical.training import formulations as F
from empirical.training import model as M
from empirical.training import train as T
from empirical.host import usage

SHAPES = ((1, 1), (2, 2), (4, 4))
AUTHOR = "author's loop, 1 seed"
SEEDS = (0, 1, 2, 3, 4)


def ensemble_step(layers: int, heads: int, kind: str, dtype: torch.dtype, formulation: str, compiled: bool = False):
    """One training step of the 5-seed ensemble as ``train`` runs it, with ``formulation``."""
    cfg = T.TrainConfig(kind=kind, layers=layers, heads=heads, seeds=SEEDS)
    model = M.AttentionModel(kind, cfg.d, layers=layers, heads=heads, residual=cfg.residual,
                             ensemble=len(SEEDS), seeds=SEEDS, dtype=dtype)
    run = torch.compile(model) if compiled else model
    opt = T.optimizer(model, cfg)
    gens = [torch.Generator().manual_seed(T.data_seed(s)) for s in SEEDS]
    task = cfg.task()

    def step():
        F.use(formulation)
        x, y = T._sample(task, cfg.batch, gens, "cpu")
        mse, max_err = T.batch_errors(run, x.to(dtype), y.to(dtype))
        max_err.tolist()
        T.update(opt, mse)

    return step


def rows(kind: str, compile_too: bool, shapes=SHAPES, only: list[str] | None = None) -> dict[str, dict]:
    """name -> {shape: step function}; ``only``: these formulations beside bmm and the author's
    loop (no float64 row)."""
    from tests.benchmarks.author_loop import step_fn

    names = [n for n in F.FORMULATIONS if not only or n == "bmm" or n in only]
    out = {f"{n} float32": {s: ensemble_step(*s, kind, torch.float32, n) for s in shapes} for n in names}
    if not only:
        out["bmm float64"] = {s: ensemble_step(*s, kind, torch.float64, "bmm") for s in shapes}
    if compile_too:
        out["bmm float32, torch.compile"] = {s: ensemble_step(*s, kind, torch.float32, "bmm", compiled=True)
                                             for s in shapes}
    out[AUTHOR] = {s: step_fn(*s, kind) for s in shapes}
    return out


def measure(table: dict[str, dict], rounds: int, budget: float) -> dict[str, dict]:
    """{row: {shape: [steps per CPU second, one per round]}} (rounds interleaved)."""
    rates = {r: {s: [] for s in fns} for r, fns in table.items()}
    for n in range(rounds + 1):
        for r, fns in table.items():
            for s, fn in fns.items():
                steps, start = 0, time.process_time()
                while steps < 1 or time.process_time() - start < budget:
                    fn()
                    steps += 1
                if n:
                    rates[r][s].append(steps / (time.process_time() - start))
    return rates


def layer_times(heads, rounds: int, budget: float) -> dict[tuple[str, int], tuple[float, float]]:
    """{(kind, H): (forward ms, backward ms)} of the compiled kernel on one layer at the ensemble's
    shape (see ``--layer``); the backward as a hidden layer's: the output's gradient, none for the
    pattern, the input's gradient wanted. Empty where no kernel could be built."""
    from empirical.training.compiled import build

    cfg = T.TrainConfig()
    kernel = build.library(cfg.L, cfg.d, torch.float32, F.cache_path().parent)
    if kernel is None:
        return {}
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(len(SEEDS), cfg.batch, cfg.L, cfg.d, generator=gen)
    out = {}
    for kind in build.KINDS:
        for H in heads:
            Gt, Mt = (0.3 * torch.randn(len(SEEDS), *shape, generator=gen) for shape in ((cfg.d, H * cfg.d), (H * cfg.d, cfg.d)))
            pattern, _ = kernel.forward(kind, True, x, Gt, Mt)
            gout = torch.randn(x.shape, generator=gen)
            calls = (lambda: kernel.forward(kind, True, x, Gt, Mt),
                     lambda: kernel.backward(kind, True, x, Gt, Mt, pattern, gout, None, True))
            out[(kind, H)] = tuple(1e3 * min(_seconds_per_call(fn, budget) for _ in range(rounds + 1)) for fn in calls)
    return out


def _seconds_per_call(fn, budget: float) -> float:
    calls, start = 0, time.process_time()
    while calls < 1 or time.process_time() - start < budget:
        fn()
        calls += 1
    return (time.process_time() - start) / calls


def layer_report(times: dict, heads) -> str:
    from empirical.training.compiled import build

    if not times:
        return f"no compiled kernel here: {'; '.join(build.unavailable.values())}"
    lines = ["| kind | " + " | ".join(f"H = {H}: forward, backward (ms)" for H in heads) + " |",
             "|" + "---|" * (len(heads) + 1)]
    for kind in build.KINDS:
        lines.append(f"| {kind} | " + " | ".join(f"{times[(kind, H)][0]:.3f}, {times[(kind, H)][1]:.3f}" for H in heads) + " |")
    return "\n".join([f"kernels: {build.record()}", *lines])


def cost_of_reference(rate: dict) -> float:
    """Seconds of one core for the six reference settings at SPEC's steps, from steps/s per shape
    (nan when a shape was not measured)."""
    from empirical.pipeline.parts.training import SPEC_STEPS

    return sum(steps / rate[(layers, heads)] if (layers, heads) in rate else float("nan")
               for (kind, layers, heads), steps in SPEC_STEPS.items())


def report(rates: dict, before: dict, after: dict, args) -> tuple[str, dict]:
    best = {r: {s: max(v) for s, v in by.items()} for r, by in rates.items()}
    median = {r: {s: statistics.median(v) for s, v in by.items()} for r, by in rates.items()}
    ref, author = best["bmm float32"], best[AUTHOR]
    shapes = list(ref)
    paired = {r: {s: statistics.median(x / y for x, y in zip(v, rates["bmm float32"][s])) for s, v in by.items()}
              for r, by in rates.items()}  # each round against bmm's in the same round: robust to the load drifting
    scaled = {r: {s: v * median["bmm float32"][s] for s, v in by.items()} for r, by in paired.items()}
    head = (["formulation"] + [f"{l} x {h}: steps/s (vs bmm; median; paired)" for l, h in shapes]
            + ["six settings: 5 seeds / author's 1 (fastest; medians; paired)"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rates:
        cells = [f"{best[r][s]:.1f} ({best[r][s] / ref[s]:.2f}x; {median[r][s]:.1f}; {paired[r][s]:.2f}x)"
                 for s in shapes]
        ratio = "" if r.startswith("author") else "; ".join(
            f"{cost_of_reference(rate[r]) / cost_of_reference(rate[AUTHOR]):.2f}" for rate in (best, median, scaled))
        lines.append("| " + " | ".join([r] + cells + [ratio]) + " |")
    per_shape = ", ".join(f"{l} x {h} {author[(l, h)] / ref[(l, h)]:.2f}" for l, h in shapes)
    machine = usage.machine()
    text = "\n".join([
        f"machine: {usage.describe_machine(machine)}; "
        f"torch {torch.__version__}, 1 thread; kind {args.kind}",
        f"load average (1 min): {before['load']} at the start, {after['load']} at the end; "
        f"{after['wall'] - before['wall']:.0f} s wall",
        f"steps per second of process CPU time, fastest of {args.rounds} interleaved rounds of {args.budget} s "
        "(then: vs bmm's fastest; the median; paired: the median over rounds of the rate against bmm's in the "
        "same round); ensembles train 5 seeds per step, the author's loop 1",
        "", *lines, "",
        f"5 seeds of bmm cost this many times the author's 1 seed per step: {per_shape}",
        "one member of the 5 (a seed's share of the ensemble step) costs this many times the author's step: "
        + ", ".join(f"{l} x {h} {author[(l, h)] / ref[(l, h)] / len(SEEDS):.2f}" for l, h in shapes),
        "six settings: SPEC's steps to stop per setting (softmax and ReLU), 5 seeds in one ensemble at the 5-seed rate "
        "(an upper bound: stopped members leave it), against the author's loop one seed per setting",
    ])
    data = {"machine": machine, "torch": torch.__version__, "kind": args.kind, "rounds": args.rounds,
            "budget_s": args.budget, "load_start": before["load"], "load_end": after["load"],
            "steps_per_cpu_second": {r: {f"{l}x{h}": v for (l, h), v in by.items()} for r, by in rates.items()},
            "paired_vs_bmm": {r: {f"{l}x{h}": v for (l, h), v in by.items()} for r, by in paired.items()}}
    return text, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds after a warm-up round")
    parser.add_argument("--budget", type=float, default=0.25, help="CPU seconds per row, shape and round")
    parser.add_argument("--kind", default="softmax", choices=("softmax", "relu"))
    parser.add_argument("--compile", action="store_true", help="add bmm under torch.compile (slow to compile)")
    parser.add_argument("--json", default=None, help="also write the rates to this file")
    parser.add_argument("--only", nargs="+", choices=list(F.FORMULATIONS), default=None,
                        help="only these formulations beside bmm and the author's loop")
    parser.add_argument("--shapes", nargs="+", choices=[f"{l}x{h}" for l, h in SHAPES], default=None,
                        help="only these layers x heads (the six-settings cost needs all three)")
    parser.add_argument("--layer", action="store_true", help="time the compiled kernel on one layer instead")
    args = parser.parse_args(argv)
    shapes = [s for s in SHAPES if not args.shapes or f"{s[0]}x{s[1]}" in args.shapes]
    torch.set_num_threads(1)
    if args.layer:
        heads = [h for _, h in shapes]
        print(f"machine: {usage.describe_machine(usage.machine())}; load average (1 min): {usage.load_average()}")
        print(layer_report(layer_times(heads, args.rounds, args.budget), heads))
        return 0
    before = {"load": usage.load_average(), "wall": time.perf_counter()}
    rates = measure(rows(args.kind, args.compile, shapes, args.only), args.rounds, args.budget)
    after = {"load": usage.load_average(), "wall": time.perf_counter()}
    text, data = report(rates, before, after, args)
    print(text)
    if args.json:
        from constructions.files import write_json

        write_json(args.json, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
