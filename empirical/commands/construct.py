"""``sinks construct``: print (and draw) an explicit construction's weights and attention.

    sinks construct relu|softmax|cancelling|interpolating [--d D] [--beta B] [--layers N --heads H]
                    [--L L --trigger J] [--format table|json|npz] [--out DIR]

``table`` prints W_Q, W_K, W_V, W_O with rows and columns labelled by feature, one example
sequence and the attention pattern on it. ``json`` keeps every weight exact ("1/3") and loads
back with ``empirical.construction_check.load_model``; ``npz`` holds float arrays. With
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

CONSTRUCTIONS = ("relu", "softmax", "cancelling", "interpolating", "tight-t1a", "tight-t1b")
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


def build(construction: str, d: int, beta: Fraction, layers: int, heads: int, L: int = 8):
    """The requested construction as an exact ``reference.Network`` and a one-line title."""
    from constructions import cancelling_heads, relu_head, softmax_head
    from constructions.errors import BadInput

    if construction not in CONSTRUCTIONS:
        raise BadInput(f"unknown construction {construction!r}; valid: {', '.join(CONSTRUCTIONS)}")
    if construction.startswith("tight-"):
        if layers != 1 or heads != 1:
            raise BadInput(f"the {construction} construction is a single head: --layers and --heads must be 1")
        from constructions import tight_heads

        net = tight_heads.build_t1a(d) if construction == "tight-t1a" else tight_heads.build_t1b(d)
        return net, (f"{construction} (d={d}): attains T1({construction[-1]})'s bound on the equal-content sequences "
                     "of content 0 (try --L 4 / --L 5 with content 0)")
    if construction in ("cancelling", "interpolating") and (heads != 1 or (construction == "interpolating" and layers != 1)):
        raise BadInput(f"the {construction} construction fixes its heads: leave --heads (and --layers) at 1"
                       + (" (--layers 2 gives the cancelling residual stack)" if construction == "cancelling" else ""))
    if construction == "cancelling":
        if layers == 1:
            return cancelling_heads.build(d, beta), (f"cancelling pair (d={d}, beta={beta}): heads cancel off the trigger, "
                                                     "no head sinks at a non-trigger query")
        if layers == 2:
            return cancelling_heads.build_stack(d, beta), (f"cancelling pair in a residual stack (d={d}, beta={beta}); "
                                                           "layer 1 has W_O = 0")
        raise BadInput("the cancelling construction has --layers 1 or 2")
    if construction == "interpolating":
        net = cancelling_heads.build_interpolating(d, L)
        return net, (f"interpolating heads (d={d}, L={L}, {net.layers[0].heads} heads): error 0 at length {L}, "
                     "no head sinks at any query")
    if construction == "relu":
        if layers == 1 and heads == 1:
            return relu_head.build(d), f"ReLU head (d={d}): single layer, single head, no sink"
        return (relu_head.build_stack(d, layers, heads),
                f"ReLU residual stack (d={d}, {layers} layers x {heads} heads): layer 0 head 0 is the head")
    if layers != 1 or heads != 1:
        raise BadInput("the softmax construction is a single head: --layers and --heads must be 1")
    return softmax_head.build(d, beta), f"softmax head (d={d}, beta={beta}): BOS logit gap, sink at non-trigger queries"


def example(net, L: int, trigger: int | None):
    """One exact example sequence (seeded) with the network's pattern and output on it."""
    import random

    from constructions import reference, task

    j = trigger if trigger is not None else L // 2
    cfg = task.TaskConfig(d=net.d, L=L, trigger=j, residual=net.residual)
    rng = random.Random(0)
    contents = [[Fraction(rng.randint(-4, 4), 4) for _ in range(cfg.n_content)] for _ in range(cfg.L - 1)]
    X = task.make_sequence(contents, j)
    backend = "fraction" if net.kind == "relu" else "float"  # softmax weights are not rational
    Y, patterns = reference.forward(net, X, backend)
    T = task.target(X, j, net.residual)
    error = max(abs(float(y) - float(t)) for yr, tr in zip(Y, T) for y, t in zip(yr, tr))
    return X, j, patterns, error


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


def weight_blocks(net):
    """(title, d x d matrix) for every head's W_Q, W_K, W_V and W_O block."""
    d = net.d
    for n, layer in enumerate(net.layers):
        for h in range(layer.heads):
            where = f"layer {n}, head {h}"
            yield f"W_Q ({where})", layer.W_Q[h]
            yield f"W_K ({where})", layer.W_K[h]
            yield f"W_V ({where})", layer.W_V[h]
            yield f"W_O ({where}: columns {h * d}..{h * d + d - 1})", tuple(row[h * d:(h + 1) * d] for row in layer.W_O)


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
# Heat maps (rendered in memory, written only once everything has worked).


def _png(fig) -> bytes:
    from empirical.figures import png_bytes

    return png_bytes(fig)


def _panel(fig, ax, M, title, row_names, col_names, labels: tuple[str, str], bar_label: str, cmap="RdBu_r",
           symmetric: bool = True) -> None:
    """One heat map with its colour bar; ``labels`` = (x axis, y axis). Cells are annotated with
    their value (2 significant digits) when the matrix is small enough to read them."""
    import numpy as np

    A = np.array([[float(v) for v in row] for row in M])
    limit = max(float(np.abs(A).max()), 1e-12)
    im = ax.imshow(A, cmap=cmap, vmin=-limit if symmetric else 0, vmax=limit)
    ax.set_title(title, fontsize=8)
    ax.set_xticks(range(len(col_names)), col_names, rotation=90, fontsize=6)
    ax.set_yticks(range(len(row_names)), row_names, fontsize=6)
    ax.set_xlabel(labels[0], fontsize=7)
    ax.set_ylabel(labels[1], fontsize=7)
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    bar.ax.tick_params(labelsize=5)
    bar.set_label(bar_label, fontsize=6)
    if A.shape[0] <= 10 and A.shape[1] <= 10:
        for (r, c), v in np.ndenumerate(A):
            if v:
                dark = abs(v) > 0.6 * limit if symmetric else v < 0.5 * limit  # RdBu is dark at the ends, viridis low
                ax.text(c, r, f"{v:.2g}", ha="center", va="center", fontsize=5, color="white" if dark else "black")


def weights_png(net, title: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from constructions import task

    names = task.feature_names(net.d)
    blocks = list(weight_blocks(net))
    rows = len(blocks) // 4
    fig, axes = plt.subplots(rows, 4, figsize=(13, 3.3 * rows), squeeze=False, layout="constrained")
    for ax, (t, M) in zip(axes.flat, blocks):
        _panel(fig, ax, M, t, names, names, ("input coordinate (column j of W)", "output coordinate (row i of W)"),
               "weight W[i, j]")
    fig.suptitle(f"{title}\neach map is W in y = W x: rows are output coordinates, columns input coordinates", fontsize=9)
    return _png(fig)


def pattern_png(patterns, j: int, title: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(n, h, p) for n, layer in enumerate(patterns) for h, p in enumerate(layer)]
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    size = max(3.4, 0.55 * len(panels[0][2]) + 1.2)  # about 0.55 inch per cell, so the values fit
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (n, h, p) in zip(axes.flat, panels):
        L = len(p)
        _panel(fig, ax, p, f"layer {n} head {h}", [f"q{i}" for i in range(L)], [f"k{i}" for i in range(L)],
               ("key k", "query i"), "attention weight a_ik", cmap="viridis", symmetric=False)
    fig.suptitle(f"{title}\nattention on one example (trigger at {j})", fontsize=9)
    return _png(fig)


# ----------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from constructions import task
    from constructions.files import write_atomic

    from .. import construction_check

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
            print(json.dumps(construction_check.network_to_json(net, meta), indent=1))
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
        written.append(construction_check.write_network_json(out / "construction.json", net, meta))
    elif args.format == "npz":
        written.append(construction_check.write_network_npz(out / "construction.npz", net))
    else:
        print(table(net, title, X, j, patterns, error))
    for name, data in images.items():
        written.append(write_atomic(out / name, lambda f, data=data: f.write(data), mode="wb"))
    for path in written:
        print(f"wrote {path}")
    return 0
