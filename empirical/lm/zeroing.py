"""Head zeroing: which heads of a real LM can be removed at no loss, against the published
dormant-head figure.

**What is zeroed.** ``ablate.ZEROED``: head h's whole output W_O^h a V_h is removed at every
query (query 0 included), through the same hooks and the same batched replay as the first-token
ablations (``ablate.head_change`` with a' = 0). One head at a time, every other head intact.

**No loss.** A head is *zeroable* when it ran on every ablation text and the upper end of the
bootstrap 95 % interval of its mean loss change (``functional.interval``, the same resamples as
the functional verdict) lies below ``NO_LOSS_INCREASE`` = 0.005 nats per token. Why 0.005: it
is a 0.5 % rise in perplexity, a tenth of the rise ``ablate.FUNCTIONAL_LOSS_INCREASE`` calls a
functional sink (so a head that is zeroable is an order of magnitude away from one that matters
by that rule), and thousands of times the float32 rounding of the loss (~1e-6), so it measures
the model and not the arithmetic. Ten heads at the threshold, if their changes added, would cost
what one functional head does. A change can also be negative (the head hurt these texts); that
is below the threshold too and counts as no loss. Pinned by ``tests/test_lm_zeroing.py``.

**Screen.** Every head is zeroed on the screen texts (the same first ``--screen-texts`` texts
the first-token ablations screen on, in the same replays); it continues over the other texts
only when its smallest change there is at most ``SCREEN_FACTOR`` x the threshold (0.02 nats).
A head stopped by the screen is *not shown to be zeroable*: it is never called zeroable, and
nothing else is claimed for it (its screen value is reported). The screen can only shrink the
zeroable set, never grow it.

**Texts.** The zeroing runs on the first ``--zeroing-texts`` (default ``ZEROING_TEXTS`` = 8) of
the ablation texts, not all 32: on SmolLM2, 196 of the 270 heads pass its screen (on one text
the zeroing changes are spread over -0.05..+0.05 nats for most heads, so a 1-text screen cannot
stop them), and 196 heads x 31 texts would cost more than twice the first-token ablations'
continuation (83 variants x 31 texts), far past the probe's 10-minute budget. Eight texts give an
interval (bootstrap over 8) at a quarter of that cost; ``--zeroing-texts 32`` runs the full set.

**The published figure.** Sandoval-Segura et al. 2025 ("Using Attention Sinks to Identify and
Evaluate Dormant Heads in Pretrained LLMs", arXiv 2504.03889 v1) zero *together* the heads their
score flags dormant (a head's average output norm against its layer's mean, below a threshold),
and measure the average accuracy over five benchmarks on six models: on most models more than
4 % of the heads can be zeroed while keeping the average accuracy, and more than 14 % within 1 %
of it. The figure here is another measurement: one head at a time, next-token loss on the probe
texts. A head zeroable alone need not be zeroable with the others; the fraction here is the
per-head one.

**Overlaps.** The zeroable heads against the heads that are dormant at most of their pairs by
the probe's 0.2 x p95 rule (``report.dormant``: dormant fraction > 0.5) and against the sinking
heads (mean Gu alpha_0 > 0.3), both read from the probe's per-head rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import functional

NO_LOSS_INCREASE = 0.005  # nats per token; see the module docstring
ZEROING_TEXTS = 8  # the first 8 ablation texts; see "Texts" in the module docstring
SCREEN_FACTOR = 4.0  # continue past the screen while the change there is at most 4 x the threshold
MOSTLY = 0.5  # a head "mostly dormant": dormant at more than half its pairs (report.sinks_and_dormancy's rule)
SINKING_ALPHA0 = 0.3  # a sinking head: mean Gu alpha_0 above Gu et al.'s eps


def continues(screen_changes: np.ndarray) -> np.ndarray:
    """Boolean [K] for ``screen_changes`` [K, s]: zero the head on the other texts too."""
    return np.asarray(screen_changes).min(axis=-1) <= SCREEN_FACTOR * NO_LOSS_INCREASE


def is_zeroable(upper: np.ndarray) -> np.ndarray:
    """The interval lies below the no-loss threshold: its upper end does."""
    return np.asarray(upper) < NO_LOSS_INCREASE


def verdicts(changes: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of ``changes`` [K, n] (NaN past the screen): ``functional.verdicts``' texts, mean
    and interval, and ``zeroable`` (every text run, upper end below the threshold)."""
    v = functional.verdicts(changes)
    return {"texts": v["texts"], "mean": v["mean"], "lower": v["lower"], "upper": v["upper"],
            "zeroable": is_zeroable(v["upper"]) & ~v["screened_out"], "screened_out": v["screened_out"]}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over the probe's per-head rows (each with ``ablation.zeroed``): the zeroable fraction, and
    its overlap with the mostly dormant and the sinking heads."""
    zeroable = np.array([r["ablation"]["zeroed"]["zeroable"] for r in rows])
    screened = np.array([r["ablation"]["zeroed"]["screened_out"] for r in rows])
    dormant = np.array([r["dormant_fraction"] > MOSTLY for r in rows])
    sinking = np.array([r["gu_alpha0_mean"] > SINKING_ALPHA0 for r in rows])
    names = [r["name"] for r in rows]
    return {"heads": len(rows), "zeroable": [names[k] for k in np.flatnonzero(zeroable)],
            "zeroable_fraction": float(zeroable.mean()),
            "not_shown_zeroable_screened_out": int(screened.sum()),
            "mostly_dormant_heads": int(dormant.sum()), "zeroable_and_mostly_dormant": int((zeroable & dormant).sum()),
            "sinking_heads": int(sinking.sum()), "zeroable_and_sinking": int((zeroable & sinking).sum()),
            "zeroable_fraction_of_sinking": float(zeroable[sinking].mean()) if sinking.any() else None,
            "zeroable_fraction_of_mostly_dormant": float(zeroable[dormant].mean()) if dormant.any() else None,
            "no_loss_threshold_nats": NO_LOSS_INCREASE, "published": PUBLISHED}


PUBLISHED = ("Sandoval-Segura et al. 2025 (arXiv 2504.03889 v1): on most of six models more than 4 % of the "
             "heads, zeroed together (their dormant set), keep the average accuracy over five benchmarks; "
             "more than 14 % keep it within 1 %")
