"""``sinks beyond``: train attention kinds on task variants, by name, and print the
predicted-against-measured tables (the ``beyond`` part of ``sinks reproduce`` on any selection).

    sinks beyond --kinds softmax,softmax1 --variants reference,no_bos --seeds 3
    sinks beyond --config plan.json      (fields of ``empirical.pipeline.parts.beyond.Plan``)

Unknown kinds, variants or config fields are bad input naming the valid ones. Finished runs
are kept under ``--out``/runs/beyond and reused, so an interrupted command resumes.
"""

from __future__ import annotations

import argparse


def _names(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.split(",") if n.strip())


def _shapes(text: str) -> tuple[tuple[int, int], ...]:
    from constructions.errors import BadInput

    out = []
    for item in _names(text):
        layers, _, heads = item.partition("x")
        if not (layers.isdigit() and heads.isdigit()):
            raise BadInput(f"shape {item!r} must look like LAYERSxHEADS, e.g. 1x1 or 2x2")
        out.append((int(layers), int(heads)))
    return tuple(out)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("beyond", help="train attention kinds on task variants by name; print predicted vs measured")
    p.add_argument("--kinds", default=None, help="comma-separated attention kinds (default: all registered)")
    p.add_argument("--variants", default="reference",
                   help="comma-separated task variants: reference, no_bos, triggers3, gaussian, retrieval, "
                        "length64, length256 (default: reference)")
    p.add_argument("--shapes", default="1x1", help="comma-separated LAYERSxHEADS (default 1x1)")
    p.add_argument("--seeds", type=int, default=5, help="seeds per run, trained together (default 5)")
    p.add_argument("--max-steps", type=int, default=3000, help="step cap (default 3000)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default: 1e-3 one layer, 1e-4 several)")
    p.add_argument("--config", default=None, help="JSON file with the Plan fields instead of the options above")
    p.add_argument("--out", default="results", help="results folder (runs kept under OUT/runs/beyond)")
    p.add_argument("--device", default="auto", help="auto (default: CUDA if torch sees a GPU, else the CPU), cpu, cuda[:N]")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from constructions import attention, files
    from empirical.pipeline.parts import beyond as part

    if args.config is not None:
        plan = files.config_from_dict(part.Plan, files.read_json(args.config), "beyond plan")
    else:
        kinds = _names(args.kinds) if args.kinds else attention.names()
        plan = part.Plan(kinds, _names(args.variants), _shapes(args.shapes), args.seeds, args.max_steps, args.lr)
    from empirical.host.device import resolve_device

    device = resolve_device(args.device)
    runs = part.train_all(Path(args.out), [plan], device)
    k_rows, _ = part.kind_rows(runs, {}, plan.kinds)
    v_rows, _ = part.variant_rows(runs)
    for title, columns, rows in (("kinds", part.KIND_COLUMNS, k_rows), ("variants", part.VARIANT_COLUMNS, v_rows)):
        if rows:
            print(f"## {title}\n")
            print("| " + " | ".join(columns) + " |")
            print("|" + "---|" * len(columns))
            for row in rows:
                print("| " + " | ".join(str(c) for c in row) + " |")
            print()
    files.write_json(Path(args.out) / "beyond_cli.json", {
        "plan": plan, "runs": [{"kind": k, "variant": v, "layers": l, "heads": h, **s}
                               for (k, v, l, h), s in runs.items()],
        "provenance": files.provenance(plan, list(range(plan.seeds)), device)})
    return 0
