"""Functional sinks over many texts: each head's mean loss change under an ablation, with a
seeded bootstrap 95 % interval over texts, and the verdict.

- **Interval.** The percentile bootstrap of the mean over the ablation texts:
  ``BOOTSTRAP_RESAMPLES`` resamples of the texts with replacement
  (``numpy.random.default_rng(BOOTSTRAP_SEED)``, the same resamples for every head, so that
  heads are compared on the same draws), and the (1 - ``CONFIDENCE``) / 2 and (1 + ``CONFIDENCE``)
  / 2 quantiles of the resampled means. On one text there is no interval: both ends are the one value.
- **Functional.** A head's sink is functional under an ablation only when the whole interval
  lies above ``ablate.FUNCTIONAL_LOSS_INCREASE`` (0.05 nats per token): its lower end does.
- **Screen.** Ablating every head on 32 texts costs about 90 TFLOP per ablation on SmolLM2 (270
  heads x 32 texts x 64 tokens x ~160 MFLOP per token for the replay from the head's layer and
  the 49,152-word output layer), half an hour of two cores. So every (head, ablation) runs on the
  first ``screen`` texts, and continues over the rest only when its largest loss change there
  exceeds ``SCREEN_FRACTION`` of the threshold. A head that stops is reported as screened out with
  its screen values and is never called functional; ``--screen-texts 0`` runs every head on every text.
- **Evolution.** The functional set computed from the first n texts, for n in ``EVOLUTION_COUNTS``
  up to the number of ablation texts: how the verdict moves as texts are added (heads screened out
  have no values past the screen and are not functional at those n).
"""

from __future__ import annotations

import numpy as np

from . import ablate

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
SCREEN_FRACTION = 0.5  # continue past the screen when the largest change there exceeds 0.025 nats
EVOLUTION_COUNTS = (1, 2, 4, 8, 16, 32)


def interval(changes: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES,
             seed: int = BOOTSTRAP_SEED) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) [K] of the bootstrap interval of the mean of ``changes`` [K, n] (n texts, no NaN)."""
    changes = np.asarray(changes, dtype=np.float64)
    n = changes.shape[-1]
    if n == 1:
        return changes[:, 0].copy(), changes[:, 0].copy()
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    weights = np.zeros((resamples, n))
    np.add.at(weights, (np.arange(resamples)[:, None], picks), 1.0 / n)  # each resample's mean as weights
    means = changes @ weights.T  # [K, resamples]
    tail = (1 - CONFIDENCE) / 2
    return np.quantile(means, tail, axis=-1), np.quantile(means, 1 - tail, axis=-1)


def is_functional(lower: np.ndarray) -> np.ndarray:
    """The interval lies above the threshold: its lower end does."""
    return np.asarray(lower) > ablate.FUNCTIONAL_LOSS_INCREASE


def continues(screen_changes: np.ndarray) -> np.ndarray:
    """Boolean [K] for ``screen_changes`` [K, s]: run past the screen texts."""
    return np.asarray(screen_changes).max(axis=-1) > SCREEN_FRACTION * ablate.FUNCTIONAL_LOSS_INCREASE


def verdicts(changes: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of ``changes`` [K, n] (NaN where a screened-out head did not run): texts run, mean,
    interval and verdict, all over the texts the head ran on; a head that did not run on every
    text is ``screened_out`` and not functional."""
    changes = np.asarray(changes, dtype=np.float64)
    ran = (~np.isnan(changes)).sum(axis=-1)
    full = ran == changes.shape[-1]
    mean = np.array([row[~np.isnan(row)].mean() for row in changes])
    lower, upper = np.full(len(changes), np.nan), np.full(len(changes), np.nan)
    for count in np.unique(ran):  # the bootstrap of each group of heads that ran on as many texts
        rows = ran == count
        sub = changes[rows][:, :count]
        lower[rows], upper[rows] = interval(sub)
    return {"texts": ran, "mean": mean, "lower": lower, "upper": upper,
            "functional": is_functional(lower) & full, "screened_out": ~full}


def evolution(changes: np.ndarray, names: list[str]) -> list[dict]:
    """The functional set from the first n texts, for each n of ``EVOLUTION_COUNTS`` (and the
    full count) up to the number of texts: [{"texts": n, "functional": [names]}]."""
    changes = np.asarray(changes, dtype=np.float64)
    total = changes.shape[-1]
    counts = sorted({c for c in EVOLUTION_COUNTS if c <= total} | {total})
    out = []
    for n in counts:
        head = changes[:, :n]
        ran = ~np.isnan(head).any(axis=-1)
        lower = np.full(len(changes), -np.inf)
        if ran.any():
            lower[ran] = interval(head[ran])[0]
        out.append({"texts": n, "functional": [names[k] for k in np.flatnonzero(is_functional(lower) & ran)]})
    return out
