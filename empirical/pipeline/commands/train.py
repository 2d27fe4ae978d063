"""``sinks train``: train one setting on several seeds (one batched ensemble), write its summary JSON
(metrics per head, certified bounds, patterns, history, provenance) and print one line per seed."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a model on the task (several seeds batched) and report its sinks")
    p.add_argument("--kind", default="softmax", help="attention kind (softmax, relu, ...; see constructions.attention)")
    p.add_argument("--layers", type=int, default=1, help="layers (several layers use the residual stream)")
    p.add_argument("--heads", type=int, default=1, help="heads per layer")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds, trained together in one ensemble")
    p.add_argument("--max-steps", type=int, default=50_000, help="step cap (SPEC: 50,000)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 1e-3 for one layer, 1e-4 for several)")
    p.add_argument("--d", type=int, default=16, help="features (reference 16)")
    p.add_argument("--L", type=int, default=16, help="positions including BOS (reference 16)")
    p.add_argument("--batch", type=int, default=128, help="fresh sequences per step")
    p.add_argument("--tol", type=float, default=5e-3, help="stop when the batch's max-abs error is below this")
    p.add_argument("--eval-sequences", type=int, default=1000, help="evaluation sequences (trigger fixed)")
    p.add_argument("--eval-trigger", type=int, default=7, help="trigger position of the evaluation sequences")
    p.add_argument("--bound-sequences", type=int, default=None,
                   help="evaluation sequences the certified bound is computed on (default: all of them for one "
                        "head; the first 200 with several heads or layers, where a head's bound is mostly vacuous)")
    p.add_argument("--log-every", type=int, default=100, help="steps between history points")
    p.add_argument("--device", default="auto", help="auto (CUDA if available, else CPU), cpu, cuda, cuda:N")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", default=None, help="summary JSON (default results/train/<kind>-<layers>x<heads>.json)")
    p.add_argument("--figures", default=None, help="also draw this run's figures into this folder")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from constructions import files
    from empirical.host import device as devices
    from empirical.training.train import TrainConfig, train

    config = TrainConfig(kind=args.kind, d=args.d, L=args.L, layers=args.layers, heads=args.heads, lr=args.lr,
                         batch=args.batch, tol=args.tol, max_steps=args.max_steps, seeds=tuple(args.seeds),
                         eval_sequences=args.eval_sequences, eval_trigger=args.eval_trigger,
                         bound_sequences=args.bound_sequences,
                         log_every=args.log_every)
    device = devices.resolve_device(args.device)
    out = Path(args.out or f"results/train/{config.kind}-{config.layers}x{config.heads}.json")
    if out.exists() and out.is_dir():
        from constructions.errors import BadInput

        raise BadInput(f"--out {out} is a folder, not a file")
    summary = train(config, device=device, quiet=args.quiet)
    files.write_json(out, summary)
    _print(summary)
    print(f"summary: {out}")
    if args.figures:
        for path in _figures(files.read_json(out), Path(args.figures)):
            print(f"figure: {path}")
    return 0


def _print(summary: dict) -> None:
    from constructions.numbers import format_down

    c, t = summary["config"], summary["timing"]
    print(f"{c['kind']} {c['layers']}x{c['heads']}: {len(c['seeds'])} seed(s), {t['ensemble_steps']} ensemble steps "
          f"in {t['seconds']:.1f} s ({t['steps_per_second']:.1f} steps/s)")
    print(f"  time: {_split_line(t)}")
    for m in summary["members"]:
        masses = " ".join(f"{e['bos_nontrigger_mean']:.4f}" for layer in m["layers"] for e in layer)
        state = f"stopped at step {m['steps']}" if m["converged"] else f"NOT converged (cap {m['steps']})"
        line = (f"  seed {m['seed']}: {state}; eval max-abs error {m['eval_max_abs_error']:.2e}; "
                f"non-trigger BOS mass per head {masses}")
        head = m["layers"][0][0]
        if c["layers"] == 1 and "bound" in head:
            # the per-example bound's minimum is a lower bound (rounded down); its mean a statistic (nearest)
            line += (f"; certified bound mean {head['bound']['bound_mean']:.6f} "
                     f"(min {format_down(head['bound']['bound_min'], 6)})")
        print(line)


def _split_line(timing: dict) -> str:
    """Where the run's time went (wall / CPU seconds per phase) and the machine's load."""
    from empirical.host.usage import describe

    split = timing.get("split", {})
    phases = ", ".join(f"{name} {v['wall_s']:.1f} / {v['cpu_s']:.1f} s" for name, v in split.items())
    total = timing.get("total")
    return f"{phases} (wall / CPU); in all {describe(total)}" if total else phases


def _figures(summary: dict, folder: Path) -> list[Path]:
    from empirical.training import figures

    name = f"{summary['config']['kind']}-{summary['config']['layers']}x{summary['config']['heads']}"
    paths = [figures.sink_vs_step(summary, folder / f"{name}_sink_vs_step.png")]
    if summary["config"]["layers"] * summary["config"]["heads"] > 1:
        paths.append(figures.head_grid(summary, folder / f"{name}_heads.png"))
    else:
        paths.append(figures.pattern_maps([summary], folder / f"{name}_patterns.png"))
        paths.append(figures.error_vs_bos([summary], folder / f"{name}_error_vs_bos.png"))
    return paths
