"""``sinks construct``: print (and draw) an explicit construction's weights and attention.

    sinks construct relu|softmax|cancelling|interpolating [--d D] [--beta B] [--layers N --heads H]
                    [--L L --trigger J] [--format table|json|npz] [--out DIR]

``table`` prints W_Q, W_K, W_V, W_O with rows and columns labelled by feature, one example
sequence and the attention pattern on it. ``json`` keeps every weight exact ("1/3") and loads
back with ``empirical.weights.load_model``; ``npz`` holds float arrays. With
``--out DIR`` the weight file (json / npz) and two heat maps, ``weights.png`` and
``pattern.png``, are written there (atomically, after every input has been checked).
"""

from __future__ import annotations

import argparse
import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

from empirical.analysis.constructions_by_name import build, example, pattern_png, weight_blocks, weights_png

FORMATS = ("table", "json", "npz")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("construct", help="print an explicit construction's labelled weights and attention pattern")
    p.add_argument("construction", help="relu (sink-free ReLU head), softmax (BOS logit gap beta), cancelling "
                                        "(two heads, T2 refuted; --layers 2 for the residual stack) or "
                                        "interpolating (heads with error 0 at length --L, no sink), "
                                        "tight-t1a / tight-t1b (heads attaining T1's bounds on content 0)")
    p.add_argument("--d", type=int, default=6, help="features (>= 4; reference 16)")
    p.add_argument("--beta", default="10", help="softmax BOS logit gap, a rational > 0 such as 10 or 5/2")
    p.add_argument("--layers", type=int, default=1, help="relu, cancelling: layers of the residual stack (1 = single layer)")
    p.add_argument("--heads", type=int, default=1, help="relu: heads per layer of the residual stack")
    p.add_argument("--L", type=int, default=8, help="length of the example sequence (>= 4)")
    p.add_argument("--trigger", type=int, default=None, help="trigger position of the example (default L//2)")
    p.add_argument("--format", default="table", help="table, json or npz")
    p.add_argument("--out", default=None, help="directory for the weight file and the heat maps")
    p.set_defaults(run=run)


# ----------------------------------------------------------------------------------------
# Building and checking the request.


def parse_beta(text: str) -> Fraction:
    from constructions.errors import BadInput

    try:
        beta = Fraction(str(text))
    except (ValueError, ZeroDivisionError):
        raise BadInput(f"--beta must be a rational number such as 10 or 5/2, got {text!r}") from None
    if beta <= 0:
        raise BadInput(f"--beta must be > 0 (the BOS logit gap), got {text}")
    return beta


def check_out(out: str | None, fmt: str) -> Path | None:
    """The output directory, checked before anything is written."""
    from constructions.errors import BadInput

    if fmt not in FORMATS:
        raise BadInput(f"unknown --format {fmt!r}; valid: {', '.join(FORMATS)}")
    if out is None:
        if fmt == "npz":
            raise BadInput("--format npz writes a file: give --out DIR")
        return None
    path = Path(out)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise BadInput(f"--out {out}: {existing} exists and is not a directory")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise BadInput(f"--out {out}: {existing} is not writable")
    return path


# ----------------------------------------------------------------------------------------
# Text.


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def format_matrix(title: str, M, row_names, col_names) -> str:
    if all(v == 0 for row in M for v in row):
        return f"{title}: all zero ({len(M)} x {len(M[0])})"
    width = max(6, *(len(_cell(v)) + 1 for row in M for v in row), *(len(n) + 1 for n in col_names))
    label = max(len(n) for n in row_names) + 1
    lines = [title, " " * label + "".join(f"{n:>{width}}" for n in col_names)]
    lines += [f"{r:<{label}}" + "".join(f"{_cell(v):>{width}}" for v in row) for r, row in zip(row_names, M)]
    return "\n".join(lines)


def table(net, title: str, X, j, patterns, error) -> str:
    from constructions import task

    names = task.feature_names(net.d)
    parts = [title, "rows of W_Q/W_K/W_V: output coordinate; columns: input feature (W_O: stream <- head output)", ""]
    parts += [format_matrix(t, M, names, names) + "\n" for t, M in weight_blocks(net)]
    positions = [f"{i}" for i in range(len(X))]
    parts.append(format_matrix(f"example input (L={len(X)}, trigger at {j}; rows: positions)", X, positions, names))
    for n, layer in enumerate(patterns):
        for h, pattern in enumerate(layer):
            parts.append("")
            parts.append(format_matrix(f"attention pattern (layer {n}, head {h}; rows: queries, columns: keys)",
                                       pattern, [f"q{i}" for i in range(len(X))], [f"k{i}" for i in range(len(X))]))
    parts += ["", f"max |output - target| on this example: {error:.3g}"]
    return "\n".join(parts)


# ----------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from constructions import task
    from constructions.files import write_atomic

    from empirical import weights

    beta = parse_beta(args.beta)
    out = check_out(args.out, args.format)
    net, title = build(args.construction, args.d, beta, args.layers, args.heads, args.L)
    task.TaskConfig(d=net.d, L=args.L, trigger=args.trigger)  # bad --L / --trigger: one line, exit 2
    X, j, patterns, error = example(net, args.L, args.trigger)
    meta = {"construction": args.construction, "d": net.d, "layers": args.layers, "heads": args.heads,
            "beta": str(beta) if args.construction in ("softmax", "cancelling") else None,
            "feature_names": task.feature_names(net.d)}
    if out is None:
        if args.format == "json":
            print(json.dumps(weights.network_to_json(net, meta), indent=1))
        else:
            print(table(net, title, X, j, patterns, error))
        return 0
    images = {"weights.png": weights_png(net, title), "pattern.png": pattern_png(patterns, j, title)}
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        from constructions.errors import BadInput

        raise BadInput(f"--out {args.out}: cannot create the directory ({e.strerror})") from None
    written = []
    if args.format == "json":
        written.append(weights.write_network_json(out / "construction.json", net, meta))
    elif args.format == "npz":
        written.append(weights.write_network_npz(out / "construction.npz", net))
    else:
        print(table(net, title, X, j, patterns, error))
    for name, data in images.items():
        written.append(write_atomic(out / name, lambda f, data=data: f.write(data), mode="wb"))
    for path in written:
        print(f"wrote {path}")
    return 0
