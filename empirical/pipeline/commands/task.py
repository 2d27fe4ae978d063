"""``sinks task``: show one sequence of the task and its exact target."""

from __future__ import annotations

import argparse
from fractions import Fraction


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("task", help="print one exact example sequence of the task and its target")
    p.add_argument("--d", type=int, default=6, help="features (>= 4; reference 16)")
    p.add_argument("--L", type=int, default=8, help="positions including BOS (>= 4; reference 16)")
    p.add_argument("--trigger", type=int, default=None, help="trigger position j in 2..L-1 (default L//2)")
    p.add_argument("--residual", action="store_true", help="show the multi-layer (residual) target")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import random

    from constructions import task

    j = args.trigger if args.trigger is not None else args.L // 2
    cfg = task.TaskConfig(d=args.d, L=args.L, trigger=j, residual=args.residual)
    rng = random.Random(0)
    contents = [[Fraction(rng.randint(-4, 4), 4) for _ in range(cfg.n_content)] for _ in range(cfg.L - 1)]
    X = task.make_sequence(contents, j)
    Y = task.target(X, j, cfg.residual)
    names = task.feature_names(cfg.d)
    width = 8
    header = "pos  " + "".join(f"{n:>{width}}" for n in names)
    for title, rows in (("input x", X), ("target y", Y)):
        print(f"{title} (d={cfg.d}, L={cfg.L}, trigger at {j}{', residual' if cfg.residual else ''})")
        print(header)
        for i, row in enumerate(rows):
            print(f"{i:>3}  " + "".join(f"{str(v):>{width}}" for v in row))
        print()
    return 0
