"""Bootstrap intervals, the screen and the functional verdict of ``empirical.lm.functional``."""

from __future__ import annotations

import numpy as np

from empirical.lm import ablate, functional


def test_interval_is_the_percentile_bootstrap_of_the_mean():
    rng = np.random.default_rng(4)
    changes = rng.normal(0.1, 0.05, size=(3, 32))
    lo, hi = functional.interval(changes)
    # independent: resample each row with its own generator, take the quantiles of the means
    means = changes[:, rng.integers(0, 32, size=(20_000, 32))].mean(axis=-1)
    want_lo, want_hi = np.quantile(means, 0.025, axis=-1), np.quantile(means, 0.975, axis=-1)
    se = changes.std(axis=-1, ddof=1) / np.sqrt(32)
    assert np.all(np.abs(lo - want_lo) < 0.1 * se) and np.all(np.abs(hi - want_hi) < 0.1 * se)
    assert np.all((lo < changes.mean(axis=-1)) & (changes.mean(axis=-1) < hi))
    assert np.array_equal(lo, functional.interval(changes)[0])  # seeded


def test_confidence_is_pinned():
    """95 %: the normal-theory half width is 1.96 se; at 90 % or 97.5 % (tail halved or doubled)
    it would be 1.64 or 2.24 se."""
    assert functional.CONFIDENCE == 0.95
    changes = np.random.default_rng(1).normal(0.0, 1.0, size=(1, 400))
    lo, hi = functional.interval(changes)
    half = (hi - lo)[0] / 2 / (changes.std(ddof=1) / np.sqrt(400))
    assert 1.85 < half < 2.07


def test_functional_only_when_the_interval_lies_above_the_threshold():
    t = ablate.FUNCTIONAL_LOSS_INCREASE
    steady = np.full((1, 8), 0.07)  # mean and interval 0.07: functional
    noisy = np.array([[0.0, 0.14] * 4])  # mean 0.07, interval reaching below 0.05: not functional
    v = functional.verdicts(np.concatenate([steady, noisy]))
    assert v["mean"][1] > t and v["lower"][1] < t
    assert v["functional"].tolist() == [True, False]
    one = functional.verdicts(np.array([[0.07], [0.03]]))  # one text: the value itself, no interval
    assert one["functional"].tolist() == [True, False] and one["lower"][0] == one["upper"][0] == 0.07


def test_screen_fraction_is_pinned():
    """0.5 of 0.05 nats: 0.03 continues, 0.02 does not (at 1.0 or 0.25 one of them would flip)."""
    assert functional.SCREEN_FRACTION == 0.5
    assert functional.continues(np.array([[0.03, -0.1], [0.02, 0.01]])).tolist() == [True, False]


def test_screened_out_heads_are_never_functional_and_evolution_counts_texts():
    changes = np.array([[0.2] * 4, [0.2, np.nan, np.nan, np.nan], [0.01] * 4])
    v = functional.verdicts(changes)
    assert v["screened_out"].tolist() == [False, True, False]
    assert v["functional"].tolist() == [True, False, False] and v["texts"].tolist() == [4, 1, 4]
    ev = functional.evolution(changes, ["a", "b", "c"])
    assert [e["texts"] for e in ev] == [1, 2, 4]
    assert ev[0]["functional"] == ["a", "b"] and ev[1]["functional"] == ["a"] and ev[2]["functional"] == ["a"]


def test_sinks_and_dormancy_over_heads():
    from empirical.lm import report

    def row(mass, norm, dormant, cover, alpha0):
        return {"first_token_mass": {"mean": mass}, "output_norm": {"mean": norm}, "dormant_fraction": dormant,
                "bound": {"non_vacuous_fraction": cover}, "gu_alpha0_mean": alpha0}

    rows = [row(0.9, 0.1, 0.8, 0.9, 0.9), row(0.8, 0.2, 0.3, 0.5, 0.8), row(0.1, 2.0, 0.0, 0.1, 0.1)]
    d = report.sinks_and_dormancy(rows)
    assert d["sinking_heads"] == 2 and d["sinking_heads_mostly_dormant"] == 0.5
    assert d["spearman_mass_vs_output_norm"] == -1.0 and d["bound_coverage_on_sinking_heads"] == 0.7
