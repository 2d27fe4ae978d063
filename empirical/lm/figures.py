"""The probe's figures, drawn from its results only.

- ``head_maps``: layers x heads heat maps, mean first-token mass beside the loss change of each
  ablation (each with its colourbar);
- ``mass_vs_output``: first-token mass against the head's output norm, one point per (head,
  text, query) (a fixed-seed random subset when there are more than ``SCATTER_POINTS``),
  coloured by whether the SPEC bound certifies the mass there.

- ``family_maps``: Gu's score alpha_0 per head for each input family, on one colour scale, with
  the eps = 0.3 threshold marked on the colour bar;
- ``repeated_vs_bound``: per head on the repeated family, the measured first-token mass at the
  last query against the proposition's bound there (the diagonal: a point above it would
  contradict the proposition);
- ``ablation_intervals``: each head's mean loss change with its bootstrap 95 % interval, sorted,
  with the functional threshold (the zeroing: the no-loss threshold); screened-out heads in grey
  at their screen value.

Each returns PNG bytes, so the command writes files only once everything has rendered.
"""

from __future__ import annotations

import numpy as np

from empirical.training.figures import _plt, png_bytes

from . import ablate, zeroing

SCATTER_POINTS = 200_000
SCATTER_SEED = 0


LOSS_LINEAR_WITHIN = 0.01  # nats: the loss-change colour scale is linear inside +-this, logarithmic outside


def head_maps(grids: dict[str, np.ndarray], title: str) -> bytes:
    from matplotlib.colors import Normalize, SymLogNorm

    plt = _plt()
    panels = [("mass", "mean first-token mass (queries >= 1)", "viridis", Normalize(0.0, 1.0))]
    for kind in ablate.KINDS:
        if kind in grids:
            lim = max(float(np.abs(grids[kind]).max()), 2 * LOSS_LINEAR_WITHIN)
            what = "head zeroed" if kind == ablate.ZEROED else f"first token {kind.replace('_', ' ')}"
            panels.append((kind, f"loss change, {what}\n(nats/token, symmetric log "
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


def family_maps(grids: dict[str, np.ndarray], title: str) -> bytes:
    from matplotlib.colors import Normalize

    plt = _plt()
    names = [k for k in grids if k.startswith("family_")]
    L, H = grids[names[0]].shape
    fig, axes = plt.subplots(1, len(names), figsize=(2.8 * len(names) + 0.8, 0.22 * L + 1.6), squeeze=False)
    for ax, key in zip(axes[0], names):
        im = ax.imshow(grids[key], cmap="magma", norm=Normalize(0.0, 1.0), aspect="auto", interpolation="nearest")
        ax.set_title(f"{key.removeprefix('family_')}: mean alpha_0", fontsize=8)
        ax.set_xlabel("head", fontsize=8)
        ax.set_ylabel("layer", fontsize=8)
        ax.tick_params(labelsize=6)
        bar = fig.colorbar(im, ax=ax, fraction=0.08)
        bar.ax.axhline(0.3, color="cyan", lw=1)  # Gu's eps: a head above it sinks
        bar.ax.tick_params(labelsize=6)
    fig.suptitle(f"{title}\nGu et al.'s score of the first token per head (cyan line on the bar: eps = 0.3)", fontsize=8)
    fig.tight_layout()
    return png_bytes(fig)


def repeated_vs_bound(rows: list[dict], T: int, title: str) -> bytes:
    plt = _plt()
    bound = np.array([r["repeated_bound"]["bound_at_T_max"] for r in rows])
    mass = np.array([r["repeated_bound"]["mass_at_T_mean"] for r in rows])
    layer = np.array([r["layer"] for r in rows])
    fig, ax = plt.subplots(figsize=(5.6, 4.8))
    sc = ax.scatter(bound, mass, c=layer, cmap="viridis", s=12)
    ax.plot([0, 1], [0, 1], color="black", lw=0.8, label="mass = bound (above: a contradiction)")
    ax.axvline(1.0 / T, color="grey", lw=0.6, ls=":", label=f"1/T = uniform attention")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"bound e^(2 xi)/(e^(2 xi)+T-1) at t = T = {T} (largest over sequences)", fontsize=8)
    ax.set_ylabel("measured first-token mass at t = T (mean over sequences)", fontsize=8)
    ax.set_title(f"{title}\none token repeated: one point per head", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="upper left")
    fig.colorbar(sc, ax=ax, label="layer").ax.tick_params(labelsize=6)
    fig.tight_layout()
    return png_bytes(fig)


def ablation_intervals(rows: list[dict], kind: str, threshold: float, title: str) -> bytes:
    """For a first-token ablation the verdict is ``functional`` (interval above ``threshold``),
    for the zeroing ``zeroable`` (interval below it)."""
    plt = _plt()
    a = [r["ablation"][kind] for r in rows]
    verdict = "zeroable" if kind == ablate.ZEROED else "functional"
    order = np.argsort([x["loss_change"] for x in a])[::-1]
    fig, ax = plt.subplots(figsize=(max(6.4, 0.03 * len(rows)), 4.2))
    for pos, k in enumerate(order):
        x = a[k]
        colour = "#d62728" if x[verdict] else ("#b0b0b0" if x["screened_out"] else "#1f77b4")
        lo, hi = x["interval_95"]
        ax.plot([pos, pos], [lo, hi], color=colour, lw=1.2)
        ax.plot(pos, x["loss_change"], "o", ms=2, color=colour)
    side = "below" if verdict == "zeroable" else "above"
    ax.axhline(threshold, color="black", lw=0.8, ls="--", label=f"threshold {threshold} nats ({verdict}: whole interval {side})")
    ax.set_yscale("symlog", linthresh=LOSS_LINEAR_WITHIN)
    ax.set_xlabel(f"heads, by mean loss change (red: {verdict}; blue: ran on every text; grey: screened out)", fontsize=8)
    what = "head zeroed" if kind == ablate.ZEROED else f"first token {kind.replace('_', ' ')}"
    ax.set_ylabel(f"loss change, {what} (nats/token)", fontsize=8)
    ax.set_title(f"{title}\nmean over texts with bootstrap 95 % interval", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return png_bytes(fig)


def result_figures(rows: list[dict], grids: dict[str, np.ndarray], T: int, name: str) -> dict[str, bytes]:
    """The figures of the families, the repeated-token bound and the ablation intervals that the
    rows carry: file name -> PNG bytes (also drawable afterwards from a ``probe.json``'s rows)."""
    out = {}
    if any(k.startswith("family_") for k in grids):
        out["probe_families.png"] = family_maps(grids, f"{name}: input families, T = {T}")
    if rows and "repeated_bound" in rows[0]:
        out["probe_repeated_bound.png"] = repeated_vs_bound(rows, T, f"{name}: Gu et al.'s repeated-token bound")
    for kind in (rows[0].get("ablation", {}) if rows else {}):
        zeroed = kind == ablate.ZEROED
        out[f"probe_ablation_{kind}.png"] = ablation_intervals(
            rows, kind, zeroing.NO_LOSS_INCREASE if zeroed else ablate.FUNCTIONAL_LOSS_INCREASE,
            f"{name}: {'head zeroed' if zeroed else 'first token ' + kind}")
    return out
