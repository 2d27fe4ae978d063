"""The probe's figures, drawn from its results only.

- ``head_maps``: layers x heads heat maps, mean first-token mass beside the loss change of each
  ablation (each with its colourbar);
- ``mass_vs_output``: first-token mass against the head's output norm, one point per (head,
  text, query) (a fixed-seed random subset when there are more than ``SCATTER_POINTS``),
  coloured by whether the SPEC bound certifies the mass there.

Each returns PNG bytes, so the command writes files only once everything has rendered.
"""

from __future__ import annotations

import numpy as np

from empirical.training.figures import _plt, png_bytes

SCATTER_POINTS = 200_000
SCATTER_SEED = 0


LOSS_LINEAR_WITHIN = 0.01  # nats: the loss-change colour scale is linear inside +-this, logarithmic outside


def head_maps(grids: dict[str, np.ndarray], title: str) -> bytes:
    from matplotlib.colors import Normalize, SymLogNorm

    plt = _plt()
    panels = [("mass", "mean first-token mass (queries >= 1)", "viridis", Normalize(0.0, 1.0))]
    for kind in ("removed", "value_zeroed"):
        if kind in grids:
            lim = max(float(np.abs(grids[kind]).max()), 2 * LOSS_LINEAR_WITHIN)
            panels.append((kind, f"loss change, first token {kind.replace('_', ' ')}\n(nats/token, symmetric log "
                                 f"scale, linear within +-{LOSS_LINEAR_WITHIN})", "RdBu_r",
                           SymLogNorm(LOSS_LINEAR_WITHIN, vmin=-lim, vmax=lim)))
    L, H = grids["mass"].shape
    fig, axes = plt.subplots(1, len(panels), figsize=(3.1 * len(panels) + 0.6, 0.22 * L + 1.6), squeeze=False)
    for ax, (key, label, cmap, norm) in zip(axes[0], panels):
        im = ax.imshow(grids[key], cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        ax.set_xticks(range(H))
        ax.tick_params(labelsize=6)
        bar = fig.colorbar(im, ax=ax, fraction=0.08)
        bar.ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return png_bytes(fig)


def mass_vs_output(mass: np.ndarray, output_norm: np.ndarray, certified: np.ndarray, title: str) -> bytes:
    plt = _plt()
    mass, output_norm, certified = mass.ravel(), output_norm.ravel(), certified.ravel()
    n = len(mass)
    pick = np.arange(n)
    if n > SCATTER_POINTS:
        pick = np.sort(np.random.default_rng(SCATTER_SEED).choice(n, SCATTER_POINTS, replace=False))
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for flag, colour, label in ((False, "#b0b0b0", "bound vacuous"), (True, "#d62728", "bound certifies a_i0 > 0")):
        sel = pick[certified[pick] == flag]
        share = certified.mean() if flag else 1 - certified.mean()
        ax.scatter(np.maximum(output_norm[sel], 1e-6), mass[sel], s=1, alpha=0.25, color=colour, rasterized=True,
                   label=f"{label} ({share:.1%} of all pairs)")
    ax.set_xscale("log")
    ax.set_xlabel("head output norm ||o_i|| (log scale)", fontsize=8)
    ax.set_ylabel("first-token mass a_i0", fontsize=8)
    shown = f"{len(pick):,} of {n:,} (head, text, query) pairs" + (" (random subset)" if len(pick) < n else "")
    ax.set_title(f"{title}\n{shown}", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, markerscale=8, loc="lower left")
    fig.tight_layout()
    return png_bytes(fig)
