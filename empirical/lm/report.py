"""``probe.json``: the per-head figures, the headline numbers and the provenance of a probe run.

**Dormant and active queries.** A head is dormant at a (text, query) pair when its output there
is small against what the same head writes when it is active: ||o_i|| < ``DORMANT_FRACTION``
times the head's ``ACTIVE_QUANTILE`` quantile of ||o_i|| over every (text, query >= 1) pair of
the probe set. The reference is a high quantile, not the median, so that a head which is
quiet at most queries and writes at a few (the dormant-head picture of Guo et al. 2024) has its
quiet queries called dormant; a head whose output norm hardly varies has none. Both constants
are pinned by ``tests/test_lm_probe.py`` (a factor 2 either way changes the split).

**Certified.** The SPEC bound certifies a pair's first-token mass when it is positive there
(non-vacuous): the theorem then says a_i0 >= bound > 0 from the head's own output norm and its
value images alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from empirical.training import bound

from . import ablate, heads

DORMANT_FRACTION = 0.2
ACTIVE_QUANTILE = 0.95
MASS_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
HISTOGRAM_BINS = 10


def dormant(output_norm: np.ndarray) -> np.ndarray:
    """Boolean like ``output_norm`` [L, H, N, Q]: the head's output below DORMANT_FRACTION of its
    own ACTIVE_QUANTILE over the (text, query) pairs (the last two axes)."""
    flat = output_norm.reshape(*output_norm.shape[:-2], -1)
    level = np.quantile(flat, ACTIVE_QUANTILE, axis=-1)[..., None, None]
    return output_norm < DORMANT_FRACTION * level


def certified(pairs: dict[str, np.ndarray]) -> np.ndarray:
    return pairs["bound"] > 0


def violation(pairs: dict[str, np.ndarray], mass: str = "mass") -> float:
    """max(bound - measured mass) over every pair: the theorem says <= 0 (float64 rounding aside)."""
    return float((pairs["bound"] - pairs[mass]).max())


def head_rows(measured) -> list[dict[str, Any]]:
    p, t = measured.pairs, measured.per_text
    L, H = p["mass"].shape[:2]
    dorm, cert = dormant(p["output_norm"]), certified(p)
    rows = []
    for n in range(L):
        for h in range(H):
            mass = p["mass"][n, h].ravel()
            d, c = dorm[n, h].ravel(), cert[n, h].ravel()
            row = {
                "layer": n, "head": h, "name": f"L{n}H{h}",
                "first_token_mass": {"mean": mass.mean(), "min": mass.min(), "max": mass.max(),
                                     "quantiles": dict(zip(map(str, MASS_QUANTILES), np.quantile(mass, MASS_QUANTILES))),
                                     "histogram": np.histogram(mass, HISTOGRAM_BINS, (0.0, 1.0))[0].tolist()},
                "gu_alpha0_mean": t["gu_alpha0"][n, h].mean(),
                **{f"sink_fraction_eps_{e}": (t["gu_alpha0"][n, h] > e).mean() for e in heads.GU_EPS},
                "output_norm": {"mean": p["output_norm"][n, h].mean(), "median": np.median(p["output_norm"][n, h]),
                                f"q{ACTIVE_QUANTILE}": np.quantile(p["output_norm"][n, h], ACTIVE_QUANTILE)},
                "first_value_image_norm_mean": t["u0_norm"][n, h].mean(),
                "other_value_image_norm_mean": t["value_norm_mean"][n, h].mean(),
                "dormant_fraction": d.mean(),
                "bound": {"non_vacuous_fraction": c.mean(),
                          "non_vacuous_fraction_dormant": c[d].mean() if d.any() else None,
                          "non_vacuous_fraction_active": c[~d].mean() if (~d).any() else None,
                          "mean_where_positive": p["bound"][n, h].ravel()[c].mean() if c.any() else None,
                          "max_minus_mass": (p["bound"][n, h] - p["mass"][n, h]).max(),
                          "delta_lower_mean": p["delta_lower"][n, h].mean(),
                          "delta_gap_max": (p["delta_upper"][n, h] - p["delta_lower"][n, h]).max()},
            }
            if measured.ablation is not None:
                row["ablation"] = _ablation(measured.ablation, n, h)
            rows.append(row)
    return rows


def _ablation(result: dict[str, np.ndarray], n: int, h: int) -> dict[str, Any]:
    out = {}
    for kind in ablate.ABLATIONS:
        change = result[kind][n, h] - result["clean"]  # [A]
        se = change.std(ddof=1) / np.sqrt(len(change)) if len(change) > 1 else None
        out[kind] = {"loss_change": change.mean(), "loss_change_se": se,
                     "functional": ablate.is_functional(float(change.mean()))}
    return out


def summary(measured, rows: list[dict[str, Any]]) -> dict[str, Any]:
    p, t = measured.pairs, measured.per_text
    dorm, cert = dormant(p["output_norm"]), certified(p)
    alpha0 = t["gu_alpha0"]
    out = {
        **{f"sink_percentage_eps_{e}": heads.sink_percentage(alpha0, e) for e in heads.GU_EPS},
        **{f"heads_mean_alpha0_above_{e}": float((alpha0.mean(axis=-1) > e).mean()) for e in heads.GU_EPS},
        "first_token_mass_mean": float(p["mass"].mean()),
        "pairs": int(p["mass"].size),
        "dormant_fraction": float(dorm.mean()),
        "certified_fraction": float(cert.mean()),
        "certified_fraction_of_dormant": float(cert[dorm].mean()) if dorm.any() else None,
        "certified_fraction_of_active": float(cert[~dorm].mean()) if (~dorm).any() else None,
        "max_bound_minus_mass": violation(p),
        "max_bound_minus_model_mass": violation(p, "model_mass"),
        "violations": int((p["bound"] - p["mass"] > bound.VIOLATION_TOL).sum()),
        "checks": measured.checks,
    }
    if measured.ablation is not None:
        out["clean_loss"] = float(measured.ablation["clean"].mean())
        out["ablation_texts"] = int(len(measured.ablation["clean"]))
        for kind in ablate.ABLATIONS:
            out[f"functional_{kind}"] = [r["name"] for r in rows if r["ablation"][kind]["functional"]]
            changes = [r["ablation"][kind]["loss_change"] for r in rows]
            worst = int(np.argmax(changes))
            out[f"largest_loss_change_{kind}"] = {"head": rows[worst]["name"], "loss_change": changes[worst]}
    return out


def grids(rows: list[dict[str, Any]], L: int, H: int) -> dict[str, np.ndarray]:
    """Layers x heads maps for the figure: mean first-token mass and each ablation's loss change."""
    out = {"mass": np.zeros((L, H))}
    for r in rows:
        out["mass"][r["layer"], r["head"]] = r["first_token_mass"]["mean"]
        for kind, a in r.get("ablation", {}).items():
            out.setdefault(kind, np.zeros((L, H)))[r["layer"], r["head"]] = a["loss_change"]
    return out


def headline(s: dict[str, Any]) -> list[str]:
    """The lines the command prints."""
    c = s["checks"]
    lines = [
        f"Sink^eps (Gu et al.): {s['sink_percentage_eps_0.3']:.1f} % of (text, head) at eps 0.3, "
        f"{s['sink_percentage_eps_0.8']:.1f} % at eps 0.8",
        f"first-token mass at queries >= 1: mean {s['first_token_mass_mean']:.3f} over {s['pairs']:,} (head, text, query) pairs",
        f"dormant pairs: {s['dormant_fraction']:.3f}; SPEC bound non-vacuous on {s['certified_fraction']:.3f} of all "
        f"pairs, {_fmt(s['certified_fraction_of_dormant'])} of dormant, {_fmt(s['certified_fraction_of_active'])} of active",
        f"bound - measured mass: max {s['max_bound_minus_mass']:.3g} (float64 recomputation), "
        f"{s['max_bound_minus_model_mass']:.3g} (the model's float32 weights); violations {s['violations']}",
        f"cross-checks: probe vs output_attentions {c['max_probe_vs_output_attentions']:.2g}, recomputed vs probe "
        f"{c['max_recomputed_vs_probe']:.2g}, recomputed vs output_attentions {c['max_recomputed_vs_output_attentions']:.2g}",
    ]
    if "clean_loss" in s:
        for kind in ablate.ABLATIONS:
            big = s[f"largest_loss_change_{kind}"]
            names = s[f"functional_{kind}"]
            lines.append(f"functional sinks ({kind}, loss rise > {ablate.FUNCTIONAL_LOSS_INCREASE} nats on "
                         f"{s['ablation_texts']} texts, clean loss {s['clean_loss']:.3f}): {len(names)} head(s)"
                         f"{': ' + ', '.join(names) if names else ''}; largest {big['head']} {big['loss_change']:+.4f}")
    return lines


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"
