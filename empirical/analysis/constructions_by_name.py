"""The explicit constructions by name, as ``sinks construct`` and the ``constructions`` part show
them: ``build`` one as an exact ``reference.Network``, run it on one exact ``example`` sequence, and
draw its weights and its attention pattern as PNG bytes (``weights_png``, ``pattern_png``).
"""

from __future__ import annotations

from fractions import Fraction

from empirical.training.figures import png_bytes

CONSTRUCTIONS = ("relu", "softmax", "cancelling", "interpolating", "tight-t1a", "tight-t1b")


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
    return png_bytes(fig)


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
    return png_bytes(fig)
