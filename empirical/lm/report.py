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

from . import ablate, families, functional, heads, repeated, zeroing

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
            rows.append(row)
    if measured.families is not None:
        for row in rows:
            n, h = row["layer"], row["head"]
            row["families"] = {name: {"gu_alpha0_mean": f["gu_alpha0"][n, h].mean(),
                                      "sink_fraction_eps_0.3": (f["gu_alpha0"][n, h] > 0.3).mean(),
                                      "first_token_mass_mean": f["mass_mean"][n, h].mean()}
                               for name, f in measured.families.items()}
    if measured.repeated is not None:
        per_head = repeated.head_summary(measured.repeated)
        for row in rows:
            row["repeated_bound"] = {k: per_head[k][row["layer"], row["head"]] for k in per_head if k != "input_spread_max"}
    if measured.ablation is not None:
        for kind in ablate.ABLATIONS:
            v = ablation_verdicts(measured.ablation, kind)
            for k, row in enumerate(rows):
                row.setdefault("ablation", {})[kind] = {
                    "loss_change": v["mean"][k], "interval_95": [v["lower"][k], v["upper"][k]],
                    "texts": int(v["texts"][k]), "screened_out": bool(v["screened_out"][k]),
                    "functional": bool(v["functional"][k])}
        if ablate.ZEROED in measured.ablation:
            Z = int(measured.ablation["zeroing_texts"])
            z = zeroing.verdicts(ablation_changes(measured.ablation, ablate.ZEROED)[:, :Z])
            for k, row in enumerate(rows):
                row["ablation"][ablate.ZEROED] = {
                    "loss_change": z["mean"][k], "interval_95": [z["lower"][k], z["upper"][k]],
                    "texts": int(z["texts"][k]), "screened_out": bool(z["screened_out"][k]),
                    "zeroable": bool(z["zeroable"][k])}
    return rows


def ablation_changes(result: dict[str, np.ndarray], kind: str) -> np.ndarray:
    """Loss change per head and text [L * H, A] (NaN where screened out), heads in row order."""
    change = result[kind] - result["clean"]
    return change.reshape(-1, change.shape[-1])


def ablation_verdicts(result: dict[str, np.ndarray], kind: str) -> dict[str, np.ndarray]:
    return functional.verdicts(ablation_changes(result, kind))


def summary(measured, rows: list[dict[str, Any]]) -> dict[str, Any]:
    p, t = measured.pairs, measured.per_text
    dorm, cert = dormant(p["output_norm"]), certified(p)
    alpha0 = t["gu_alpha0"]
    out = {
        **{f"sink_percentage_eps_{e}": heads.sink_percentage(alpha0, e) for e in heads.GU_EPS},
        **{f"heads_mean_alpha0_above_{e}": float((alpha0.mean(axis=-1) > e).mean()) for e in heads.GU_EPS},
        "first_token_mass_mean": float(p["mass"].mean()),
        "pairs": int(p["mass"].size),
        "bound_texts": int(p["mass"].shape[2]),
        "dormant_fraction": float(dorm.mean()),
        "certified_fraction": float(cert.mean()),
        "certified_fraction_of_dormant": float(cert[dorm].mean()) if dorm.any() else None,
        "certified_fraction_of_active": float(cert[~dorm].mean()) if (~dorm).any() else None,
        "max_bound_minus_mass": violation(p),
        "max_bound_minus_model_mass": violation(p, "model_mass"),
        "violations": int((p["bound"] - p["mass"] > bound.VIOLATION_TOL).sum()),
        "checks": measured.checks,
    }
    out["sinks_and_dormancy"] = sinks_and_dormancy(rows)
    if measured.families is not None:
        out["families"] = {name: families.summary(f) for name, f in measured.families.items()}
        out["families_published"] = {"source": families.PUBLISHED_SOURCE, "figures": families.PUBLISHED}
    if measured.repeated is not None:
        out["repeated_bound"] = repeated_summary(measured.repeated)
    if measured.ablation is not None:
        names = [r["name"] for r in rows]
        out["clean_loss"] = float(measured.ablation["clean"].mean())
        out["ablation_texts"] = int(len(measured.ablation["clean"]))
        out["ablation_screen_texts"] = int(measured.ablation["screen_texts"])
        for kind in ablate.ABLATIONS:
            out[f"functional_{kind}"] = [r["name"] for r in rows if r["ablation"][kind]["functional"]]
            out[f"screened_out_{kind}"] = sum(r["ablation"][kind]["screened_out"] for r in rows)
            out[f"functional_by_texts_{kind}"] = functional.evolution(ablation_changes(measured.ablation, kind), names)
            changes = [r["ablation"][kind]["loss_change"] for r in rows]
            worst = int(np.argmax(changes))
            out[f"largest_loss_change_{kind}"] = {"head": rows[worst]["name"], "loss_change": changes[worst],
                                                  "interval_95": rows[worst]["ablation"][kind]["interval_95"]}
        if ablate.ZEROED in measured.ablation:
            out["zeroing"] = {**zeroing.summary(rows), "texts": int(measured.ablation["zeroing_texts"])}
    return out


def sinks_and_dormancy(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """T1's question across heads: do the heads that sink abstain (small output) at most queries?
    Over heads (bound texts): the Spearman rank correlation of mean first-token mass with mean
    output norm and with the dormant fraction; of the heads whose mean alpha_0 exceeds 0.3, the
    fraction dormant at most of their pairs (dormant fraction > 0.5), and the SPEC bound's
    coverage (non-vacuous fraction) on them."""
    mass = np.array([r["first_token_mass"]["mean"] for r in rows])
    norm = np.array([r["output_norm"]["mean"] for r in rows])
    dorm = np.array([r["dormant_fraction"] for r in rows])
    cover = np.array([r["bound"]["non_vacuous_fraction"] for r in rows])
    sinking = np.array([r["gu_alpha0_mean"] > 0.3 for r in rows])
    return {"spearman_mass_vs_output_norm": _spearman(mass, norm), "spearman_mass_vs_dormant_fraction":
            _spearman(mass, dorm), "sinking_heads": int(sinking.sum()), "heads": len(rows),
            "sinking_heads_mostly_dormant": float((dorm[sinking] > 0.5).mean()) if sinking.any() else None,
            "bound_coverage_on_sinking_heads": float(cover[sinking].mean()) if sinking.any() else None,
            "bound_coverage_on_other_heads": float(cover[~sinking].mean()) if (~sinking).any() else None}


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))  # ranks (ties broken by order)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def repeated_summary(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The repeated-token bound over every head and text: violations, how often it is below the
    sink threshold (alpha_0 <= 0.3 proven), and the measured Sink^0.3 beside the one it allows."""
    alpha0_bound = repeated.alpha0_bound(arrays["bound"])  # [L, H, N]
    return {"max_mass_minus_bound": float((arrays["mass"] - arrays["bound"]).max()),
            "violations": int((arrays["mass"] - arrays["bound"] > bound.VIOLATION_TOL).sum()),
            "xi_median": float(np.median(arrays["xi"])), "xi_max": float(arrays["xi"].max()),
            "heads_bound_at_T_below_0.3": float((arrays["bound"][..., -1].max(axis=-1) < 0.3).mean()),
            "sink_percentage_eps_0.3_allowed_by_bound": 100.0 * float((alpha0_bound > 0.3).mean()),
            "input_spread_max": float(arrays["input_spread"].max())}


def grids(rows: list[dict[str, Any]], L: int, H: int) -> dict[str, np.ndarray]:
    """Layers x heads maps for the figure: mean first-token mass and each ablation's loss change."""
    out = {"mass": np.zeros((L, H))}
    for r in rows:
        out["mass"][r["layer"], r["head"]] = r["first_token_mass"]["mean"]
        for kind, a in r.get("ablation", {}).items():
            out.setdefault(kind, np.zeros((L, H)))[r["layer"], r["head"]] = a["loss_change"]
        for name, f in r.get("families", {}).items():  # Gu's score per family: the family heat maps
            out.setdefault(f"family_{name}", np.zeros((L, H)))[r["layer"], r["head"]] = f["gu_alpha0_mean"]
    return out


def headline(s: dict[str, Any]) -> list[str]:
    """The lines the command prints."""
    c = s["checks"]
    lines = [
        f"Sink^eps (Gu et al.) on the {s['bound_texts']} texts of the bound: {s['sink_percentage_eps_0.3']:.1f} % of "
        f"(text, head) at eps 0.3, {s['sink_percentage_eps_0.8']:.1f} % at eps 0.8",
        f"first-token mass at queries >= 1: mean {s['first_token_mass_mean']:.3f} over {s['pairs']:,} (head, text, query) pairs",
        f"dormant pairs: {s['dormant_fraction']:.3f}; SPEC bound non-vacuous on {s['certified_fraction']:.3f} of all "
        f"pairs, {_fmt(s['certified_fraction_of_dormant'])} of dormant, {_fmt(s['certified_fraction_of_active'])} of active",
        f"bound - measured mass: max {s['max_bound_minus_mass']:.3g} (float64 recomputation), "
        f"{s['max_bound_minus_model_mass']:.3g} (the model's float32 weights); violations {s['violations']}",
        f"cross-checks: probe vs output_attentions {c['max_probe_vs_output_attentions']:.2g}, recomputed vs probe "
        f"{c['max_recomputed_vs_probe']:.2g}, recomputed vs output_attentions {c['max_recomputed_vs_output_attentions']:.2g}",
    ]
    d = s.get("sinks_and_dormancy")
    if d:
        lines.append(f"sinking heads (mean alpha_0 > 0.3): {d['sinking_heads']} of {d['heads']}; mostly dormant "
                     f"(> half their pairs): {_fmt(d['sinking_heads_mostly_dormant'])}; SPEC bound coverage on them "
                     f"{_fmt(d['bound_coverage_on_sinking_heads'])}, on the others {_fmt(d['bound_coverage_on_other_heads'])}; "
                     f"Spearman(mass, output norm) over heads {_fmt(d['spearman_mass_vs_output_norm'])}")
    if "families" in s:
        f, pub = s["families"], families.PUBLISHED
        lines.append("Sink_1^0.3 by input family (model's float32 weights): " + ", ".join(
            f"{name} {f[name]['sink_percentage_eps_0.3']:.1f} % ({f[name]['sequences']} seq.)" for name in f)
            + "; Gu et al. Table 1: " + "; ".join(
            f"{model} " + " / ".join(_published(v[name]) for name in families.FAMILIES) for model, v in pub.items()))
    if "repeated_bound" in s:
        r = s["repeated_bound"]
        lines.append(f"repeated-token bound e^(2xi)/(e^(2xi)+t-1): max(mass - bound) {r['max_mass_minus_bound']:.3g}, "
                     f"violations {r['violations']}; below 0.3 at t=T for {r['heads_bound_at_T_below_0.3']:.1%} of heads; "
                     f"Sink^0.3 it allows {r['sink_percentage_eps_0.3_allowed_by_bound']:.1f} %; xi median "
                     f"{r['xi_median']:.3g}, max {r['xi_max']:.3g}; input spread {r['input_spread_max']:.2g}")
    if "clean_loss" in s:
        for kind in ablate.ABLATIONS:
            big = s[f"largest_loss_change_{kind}"]
            names = s[f"functional_{kind}"]
            lo, hi = big["interval_95"]
            lines.append(f"functional sinks ({kind}: 95 % interval above {ablate.FUNCTIONAL_LOSS_INCREASE} nats, "
                         f"{s['ablation_texts']} texts, screen {s['ablation_screen_texts']}, clean loss "
                         f"{s['clean_loss']:.3f}): {len(names)} head(s){': ' + ', '.join(names) if names else ''}; "
                         f"largest {big['head']} {big['loss_change']:+.4f} [{lo:+.4f}, {hi:+.4f}]; screened out "
                         f"{s[f'screened_out_{kind}']}; count by texts " + ", ".join(
                             f"{e['texts']}: {len(e['functional'])}" for e in s[f"functional_by_texts_{kind}"]))
    if "zeroing" in s:
        z = s["zeroing"]
        lines.append(f"head zeroing (95 % interval below {z['no_loss_threshold_nats']} nats over {z['texts']} texts, "
                     "one head at a time): "
                     f"{len(z['zeroable'])} of {z['heads']} heads zeroable ({z['zeroable_fraction']:.1%}); "
                     f"{z['not_shown_zeroable_screened_out']} screened out (not shown zeroable); of the "
                     f"{z['mostly_dormant_heads']} mostly dormant heads {z['zeroable_and_mostly_dormant']} zeroable, of the "
                     f"{z['sinking_heads']} sinking heads {z['zeroable_and_sinking']}; published: more than 4 % "
                     "zeroed together at no accuracy loss (Sandoval-Segura et al. 2025)")
    return lines


def _published(v) -> str:
    return f"{v[0]:.1f}-{v[1]:.1f}" if isinstance(v, tuple) else f"{v:.1f}"


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"
