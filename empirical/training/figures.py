"""Figures of the training runs, drawn from saved JSON summaries only (``empirical.training.train.train``
output, as stored by ``sinks train --out`` or a sweep record's ``"result"``). Nothing here trains
or evaluates a model.

- ``pattern_maps``: the paper-style heat maps, mean and standard deviation of the attention
  pattern over the evaluation sequences (trigger at position 7), softmax beside ReLU;
- ``head_grid``: per-head grid (layers x heads) of a multi-layer run;
- ``sink_vs_step``: BOS mass at non-trigger queries and the certified bound against the step, on
  a linear scale and as 1 - mass on a log scale (where the sink's 0.99-1 is visible);
- ``error_vs_bos``: task error against 1 - BOS mass across seeds and training.

Every heat map has a colour bar saying what its colours are. Each function writes one PNG
atomically and returns its path.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Sequence

from constructions.files import write_atomic

FLOOR = 1e-6  # log scales of 1 - mass draw anything at or below this (exact 1 included) here


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png_bytes(fig) -> bytes:
    """Render ``fig`` to PNG bytes in memory and close it (so a caller can write several
    files only once every figure has rendered)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def save_png(fig, path: str | Path) -> Path:
    """Write ``fig`` as a PNG atomically: a reader never sees a half-written figure."""
    data = png_bytes(fig)
    return write_atomic(path, lambda f: f.write(data), mode="wb")


def _title(summary: dict[str, Any]) -> str:
    c = summary["config"]
    return f"{c['kind']} {c['layers']}x{c['heads']}"


def _imshow(ax, matrix, title: str, vmax: float | None = None):
    im = ax.imshow(matrix, cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
    ax.set_title(title, fontsize=8)
    ax.set_xlabel("key", fontsize=7)
    ax.set_ylabel("query", fontsize=7)
    ax.tick_params(labelsize=6)
    return im


def pattern_maps(summaries: Sequence[dict[str, Any]], path: str | Path, member: int = 0,
                 layer: int = 0, head: int = 0) -> Path:
    """Mean (top) and standard deviation (bottom) of one head's pattern, one column per summary
    (softmax beside ReLU), for ensemble member ``member``."""
    plt = _plt()
    fig, axes = plt.subplots(2, len(summaries), figsize=(5.2 * len(summaries), 8.4), squeeze=False,
                             layout="constrained")
    fig.get_layout_engine().set(wspace=0.08)
    for col, s in enumerate(summaries):
        ev = s["eval"]
        for row, stat in enumerate(("mean", "std")):
            matrix = s["patterns"][stat][member][layer][head]
            title = (f"{_title(s)} L{layer}H{head} seed {s['members'][member]['seed']}\n{stat} over "
                     f"{ev['sequences']} sequences, trigger {ev['trigger']}")
            im = _imshow(axes[row][col], matrix, title)
            _colorbar(fig, im, axes[row][col], f"attention weight a_ik ({stat})")
    return save_png(fig, path)


def _colorbar(fig, im, ax, label: str):
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    bar.ax.tick_params(labelsize=6)
    bar.formatter.set_powerlimits((-2, 3))  # 1.5e-4 as 1.5 with a x1e-4 offset: narrow tick labels
    bar.ax.yaxis.get_offset_text().set_fontsize(6)
    bar.set_label(label, fontsize=7)
    return bar


SHARED_RANGE = 3.0  # heads share one colour scale when their largest weights are within this factor


def colour_scales(matrices: Sequence[Any]) -> list[float] | float:
    """One colour scale's top for every map when their largest values share a range (within
    ``SHARED_RANGE`` of each other), fitted to the largest; else each map's own top. A fixed 0-1
    scale made ReLU weights of ~0.1 look empty."""
    import numpy as np

    tops = [float(np.max(m)) if np.size(m) else 0.0 for m in matrices]
    tops = [t if t > 0 else 1e-12 for t in tops]
    return max(tops) if max(tops) <= SHARED_RANGE * min(tops) else tops


def head_grid(summary: dict[str, Any], path: str | Path, member: int = 0, stat: str = "mean") -> Path:
    """Every head of a multi-layer run: rows are layers, columns heads; one colour scale fitted
    to the heads' values where they share a range, else one per head (``colour_scales``)."""
    plt = _plt()
    c = summary["config"]
    fig, axes = plt.subplots(c["layers"], c["heads"], figsize=(2.9 * c["heads"] + 0.8, 2.7 * c["layers"] + 0.4),
                             squeeze=False, layout="constrained")
    heads = summary["members"][member]["layers"]
    maps = summary["patterns"][stat][member]
    scales = colour_scales([maps[n][h] for n in range(c["layers"]) for h in range(c["heads"])])
    label = f"attention weight a_ik ({stat} over {summary['eval']['sequences']} sequences)"
    for n in range(c["layers"]):
        for h in range(c["heads"]):
            mass = heads[n][h]["bos_nontrigger_mean"]
            top = scales[n * c["heads"] + h] if isinstance(scales, list) else scales
            im = _imshow(axes[n][h], maps[n][h], f"L{n}H{h}: non-trigger BOS {mass:.3f}", vmax=top)
            if isinstance(scales, list):  # each head its own scale, its own bar
                _colorbar(fig, im, axes[n][h], "a_ik")
    if not isinstance(scales, list):
        _colorbar(fig, im, axes.ravel().tolist(), label + " (one scale)")
    fig.suptitle(f"{_title(summary)} seed {summary['members'][member]['seed']}: {stat} pattern "
                 f"(trigger {summary['eval']['trigger']})", fontsize=9)
    return save_png(fig, path)


def sink_vs_step(summary: dict[str, Any], path: str | Path) -> Path:
    """Per seed: BOS mass at non-trigger queries (layer 0, head 0) and, where it applies, the mean
    certified bound, against the training step; the loss below on a log scale."""
    plt = _plt()
    fig, (top, gap, bottom) = plt.subplots(3, 1, figsize=(6, 8), sharex=True, layout="constrained",
                                           height_ratios=(1, 1.3, 0.9))
    steps = [h["step"] for h in summary["history"]]
    for s, member in enumerate(summary["members"]):
        # a seed that stopped ends at its stop step, marked: drawn on, it would look like a plateau
        rows = [h for h in summary["history"] if h["step"] <= member.get("steps", steps[-1])]
        x = [h["step"] for h in rows]
        mass = [h["bos_nontrigger_mean"][0][s][0] for h in rows]
        line, = top.plot(x, mass, label=f"seed {member['seed']} BOS mass (measured)")
        col = line.get_color()
        gap.semilogy(x, [max(1 - m, FLOOR) for m in mass], color=col)
        if "bound_mean" in summary["history"][0]:
            bound = [max(h["bound_mean"][s], 0.0) for h in rows]
            top.plot(x, bound, "--", color=col, label=f"seed {member['seed']} certified bound")
            gap.semilogy(x, [max(1 - b, FLOOR) for b in bound], "--", color=col)
        loss = [h["loss"][s] for h in rows]
        bottom.semilogy(x, loss, color=col)
        if member.get("converged") and x:
            for ax, y in ((top, mass[-1]), (gap, max(1 - mass[-1], FLOOR)), (bottom, loss[-1])):
                ax.plot(x[-1], y, "|", color=col, ms=12, mew=2)
    top.set_ylabel("non-trigger BOS mass\n(L0H0, linear)")
    top.set_ylim(-0.02, 1.02)
    top.legend(fontsize=6)
    gap.set_ylabel("1 - BOS mass (log):\nsolid measured, dashed\n1 - certified bound")
    gap.axhline(0.01, color="grey", lw=0.8, ls=":")
    gap.text(steps[0], 0.012, "mass 0.99", fontsize=6, color="grey", va="bottom")
    bottom.set_ylabel("batch MSE")
    bottom.set_xlabel("training step")
    fig.suptitle(f"{_title(summary)}: sink mass and certified bound (negative bounds drawn at 0);\n"
                 "each seed ends at its stop step (|)", fontsize=9)
    return save_png(fig, path)


def error_vs_bos(summaries: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Batch max-abs error against 1 - BOS mass (layer 0, head 0) at every history point of every
    seed: T1 says the mass can approach 1 only as the error approaches 0 and vice versa."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for summary in summaries:
        xs, ys = [], []
        for h in summary["history"]:
            for s in range(len(summary["members"])):
                xs.append(h["batch_max_abs_error"][s])
                ys.append(max(1 - h["bos_nontrigger_mean"][0][s][0], 1e-12))
        ax.loglog(xs, ys, ".", alpha=0.6, label=_title(summary))
        finals = [(m["eval_max_abs_error"], max(1 - m["layers"][0][0]["bos_nontrigger_mean"], 1e-12))
                  for m in summary["members"]]
        ax.loglog(*zip(*finals), "k*", markersize=9)
    ax.set_xlabel("max-abs error over all queries (history: training batch; stars: evaluation set)")
    ax.set_ylabel("1 - BOS mass at non-trigger queries (L0H0)")
    ax.set_title("error against sink mass over seeds and training (stars: final evaluation)", fontsize=8)
    ax.legend(fontsize=7)
    return save_png(fig, path)
