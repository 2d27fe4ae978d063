"""Sink metrics on hand-built attention patterns, with values worked out by hand."""

import pytest
import torch

from empirical.training import metrics


def uniform_causal(B, H, L):
    """a_ik = 1/(i+1) for k <= i: every query spreads evenly over the keys it sees."""
    i = torch.arange(L, dtype=torch.float64).unsqueeze(-1)
    k = torch.arange(L).unsqueeze(0)
    row = (k <= i).to(torch.float64) / (i + 1)
    return row.expand(B, H, L, L).clone()


def all_on_bos(B, H, L):
    p = torch.zeros(B, H, L, L, dtype=torch.float64)
    p[..., 0] = 1
    return p


def test_bos_mass_on_a_hand_built_pattern():
    # Head 0 puts everything on BOS, head 1 spreads uniformly; sequence triggers at 2 and 3.
    L = 5
    p = torch.cat([all_on_bos(2, 1, L), uniform_causal(2, 1, L)], dim=1)  # [B=2, H=2, L, L]
    p[0, 0, 2] = torch.tensor([0.0, 0.5, 0.5, 0, 0], dtype=torch.float64)  # trigger row of sequence 0
    trigger = torch.tensor([2, 3])
    m = metrics.bos_mass(p, trigger)
    assert m["nontrigger_mean"].tolist() == pytest.approx([1.0, _uniform_nontrigger_mean(L, [2, 3])])
    assert m["nontrigger_min"].tolist() == pytest.approx([1.0, 1 / L])  # query L-1 sees L keys
    # Trigger query: head 0 has 0 (sequence 0, rebuilt row) and 1 (sequence 1); head 1 has 1/3 and 1/4.
    assert m["trigger_mean"].tolist() == pytest.approx([0.5, (1 / 3 + 1 / 4) / 2])
    assert m["trigger_max"].tolist() == pytest.approx([1.0, 1 / 3])
    # Before the trigger: queries 1 (seq 0) and 1, 2 (seq 1) under the uniform head.
    assert m["pre_trigger_mean"][1].item() == pytest.approx((1 / 2 + 1 / 2 + 1 / 3) / 3)
    # After the trigger: queries 3, 4 (seq 0) and 4 (seq 1).
    assert m["post_trigger_mean"][1].item() == pytest.approx((1 / 4 + 1 / 5 + 1 / 5) / 3)


def _uniform_nontrigger_mean(L, triggers):
    values = [1 / (i + 1) for j in triggers for i in range(1, L) if i != j]
    return sum(values) / len(values)


def test_query_zero_is_not_a_non_trigger_query():
    # A pattern that is 0 on BOS everywhere except the BOS query itself: the non-trigger mass is 0.
    p = torch.zeros(1, 1, 4, 4, dtype=torch.float64)
    p[0, 0, 0, 0] = 1
    p[0, 0, 1:, 1] = 1
    m = metrics.bos_mass(p, torch.tensor([2]))
    assert m["nontrigger_mean"].item() == 0 and m["nontrigger_min"].item() == 0
    assert metrics.row_mass(p, torch.tensor([2]))["bos_query_row_mass"].item() == 1


def test_row_mass_of_rows_that_need_not_sum_to_one():
    L = 4
    p = torch.zeros(1, 2, L, L, dtype=torch.float64)
    p[0, 1, 2, :3] = torch.tensor([0.0, 1.5, 2.5], dtype=torch.float64)  # head 1: trigger row mass 4
    p[0, 1, 3, 1] = 0.25  # one non-trigger row with mass 0.25
    r = metrics.row_mass(p, torch.tensor([2]))
    assert r["nontrigger_max"].tolist() == [0.0, 0.25]
    assert r["nontrigger_mean"].tolist() == pytest.approx([0.0, 0.25 / 2])  # queries 1 and 3
    assert r["trigger_mean"].tolist() == [0.0, 4.0]


def test_gu_head_score_by_hand():
    L = 4
    p = uniform_causal(3, 1, L)
    alpha = metrics.head_scores(p)  # [H, L]
    # alpha_0 = mean over all 4 queries of 1/(i+1); alpha_3 = a_33 = 1/4 (only query 3 sees key 3).
    assert alpha[0, 0].item() == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    assert alpha[0, 3].item() == pytest.approx(1 / 4)
    assert alpha[0, 1].item() == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    # 25/48 = 0.52: a sink at eps = 0.3, not at the strict 0.8.
    assert metrics.sinking_heads(p).tolist() == [True]
    assert metrics.sinking_heads(p, metrics.GU_EPS_STRICT).tolist() == [False]
    on_bos = all_on_bos(2, 1, L)
    assert metrics.head_scores(on_bos)[0].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_sinking_fraction_over_layers_and_heads():
    sinking = torch.tensor([[True, False, False, False], [True, True, False, False]])  # [layers, heads]
    assert metrics.sinking_fraction(sinking, dims=2).item() == pytest.approx(3 / 8)
    assert metrics.sinking_fraction(sinking).tolist() == pytest.approx([0.25, 0.5])


def test_trigger_spread_error_is_zero_for_the_exact_mean():
    L, j = 6, 3
    p = torch.zeros(1, 1, L, L, dtype=torch.float64)
    p[0, 0, j, 1:j + 1] = 1 / j
    assert metrics.trigger_spread_error(p, torch.tensor([j])).item() == 0
    p[0, 0, j, 0], p[0, 0, j, 1] = 0.1, 1 / j - 0.1
    assert metrics.trigger_spread_error(p, torch.tensor([j])).item() == pytest.approx(0.1)


def test_leading_dimensions_are_kept():
    # [S=3 members, B=2, H=2, L, L]: member s puts mass s/4 on BOS at every query >= 1.
    L = 5
    p = torch.zeros(3, 2, 2, L, L, dtype=torch.float64)
    for s in range(3):
        p[s, :, :, 1:, 0] = s / 4
        p[s, :, :, 1:, 1] = 1 - s / 4
    p[..., 0, 0] = 1
    report = metrics.head_report(p, torch.tensor([2, 4]))
    assert report["bos_nontrigger_mean"].shape == (3, 2)
    assert report["bos_nontrigger_mean"][:, 0].tolist() == pytest.approx([0, 0.25, 0.5])
    assert report["row_nontrigger_mean"].flatten().tolist() == pytest.approx([1.0] * 6)
