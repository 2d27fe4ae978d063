"""How far an independent figure may sit from the probe's, from float32 rounding measured
against float64 on the same inputs.

Each check computes its quantity twice here: in float32, as the probe does (the figure), and in
float64 (the reference: the same model's weights, exactly widened, with this package's own
attention function, whose softmax then runs in float64). The rounding gap is the largest
|float32 - float64| over the entries. Two float32 computations of one exact value (the probe's
and this one, by different code paths) each sit within about that gap of the reference, so they
may differ by up to twice it: ``SAFETY`` = 2.

- **A threshold count** (Sink^eps, dormant pairs): an entry can land on either side of its
  threshold in float32 only where the reference lies within SAFETY x gap of it. The count is then
  known to an interval: [entries surely above, entries possibly above]. The figures agree when
  both lie in it; with no entry near the threshold the interval is one point and they must be equal.
- **A loss change** (ablations): the change is a difference of two losses, each off by up to its
  gap; the tolerance is SAFETY x (gap of the clean loss + gap of the ablated loss), and never
  below the float32 spacing of the loss (a float32 figure cannot be known closer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAFETY = 2.0  # two float32 computations, each within the measured gap of float64: see the docstring


@dataclass(frozen=True)
class Pair:
    """One cross-checked figure: the probe's, the independent one, and the interval both must lie in."""

    name: str
    probe: float
    independent: float
    low: float
    high: float

    @property
    def difference(self) -> float:
        return self.independent - self.probe

    @property
    def agrees(self) -> bool:
        return self.low <= self.probe <= self.high and self.low <= self.independent <= self.high

    def line(self) -> str:
        verdict = "agrees" if self.agrees else "DISAGREES"
        return (f"{self.name}: probe {self.probe:.9g}, independent {self.independent:.9g}, difference "
                f"{self.difference:+.3g}, tolerance [{self.low:.9g}, {self.high:.9g}] "
                f"(half-width {(self.high - self.low) / 2:.3g}): {verdict}")


def gap(float32: np.ndarray, float64: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(float32, np.float64) - np.asarray(float64, np.float64)), initial=0.0))


def margin(rounding_gap: float) -> float:
    return SAFETY * rounding_gap


def above(reference: np.ndarray, threshold, rounding_gap: float) -> tuple[np.ndarray, np.ndarray]:
    """(surely above, possibly above) the threshold, elementwise, from the float64 reference."""
    m = margin(rounding_gap)
    reference = np.asarray(reference, np.float64)
    return reference > threshold + m, reference >= threshold - m


def percentage_interval(reference: np.ndarray, threshold, rounding_gap: float) -> tuple[float, float]:
    """The percentage of entries above ``threshold``, as an interval (see the docstring)."""
    sure, possible = above(reference, threshold, rounding_gap)
    return 100.0 * float(sure.mean()), 100.0 * float(possible.mean())


def loss_tolerance(clean_gap: float, ablated_gap: float, loss: float) -> float:
    return max(SAFETY * (clean_gap + ablated_gap), float(np.spacing(np.float32(abs(loss)))))


def within(name: str, probe: float, independent: float, tolerance: float) -> Pair:
    return Pair(name, probe, independent, independent - tolerance, independent + tolerance)


def ratio_interval(sure_in: np.ndarray, maybe_in: np.ndarray, sure_yes: np.ndarray,
                   maybe_yes: np.ndarray) -> tuple[float, float]:
    """The fraction of the members of a set that have a property, when membership and property
    are each known only as (surely, possibly) per item: the smallest and largest it can be. The
    smallest counts only sure members with the property surely and adds every possible member
    that may lack it; the largest the reverse. (nan, nan) if the set may be empty."""
    low_yes = sure_in & sure_yes
    low_no = maybe_in & ~sure_yes
    high_yes = maybe_in & maybe_yes
    high_no = sure_in & ~maybe_yes
    lo_n, hi_n = low_yes.sum() + low_no.sum(), high_yes.sum() + high_no.sum()
    if not lo_n or not hi_n:
        return float("nan"), float("nan")
    return float(low_yes.sum() / lo_n), float(high_yes.sum() / hi_n)
