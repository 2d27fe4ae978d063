"""Gu et al.'s input families and the repeated-token bound (``empirical.lm.families``,
``empirical.lm.repeated``) on tiny random Llamas built in the test."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from empirical.lm import families, load, repeated

from tests.test_lm_probe import ids, tiny_llama

needs_lm = pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")


class FakeTokenizer:
    all_special_ids = [0, 5]

    def __len__(self):
        return 48


def test_drawn_families_are_seeded_ordinary_and_shaped():
    tok = FakeTokenizer()
    a, b = families.drawn(tok, 10, None, count=6), families.drawn(tok, 10, None, count=6)
    assert all(torch.equal(a[k], b[k]) for k in a)  # the seed fixes both
    assert a["random"].shape == a["repeated"].shape == (6, 10)
    assert not np.isin(a["random"].numpy(), [0, 5]).any() and not np.isin(a["repeated"].numpy(), [0, 5]).any()
    assert (a["repeated"] == a["repeated"][:, :1]).all()  # one token per sequence
    assert len(set(a["random"][0].tolist())) > 3  # and the random family is not repeated
    with_bos = families.drawn(tok, 10, 0, count=2)
    assert with_bos["repeated"].shape == (2, 10) and (with_bos["repeated"][:, 0] == 0).all()


def test_first_token_bound_is_attained_by_the_extreme_scores():
    """Score xi on key 0 and -xi on the i others: the softmax weight of key 0 is the bound, exactly."""
    for xi, i in ((0.0, 3), (0.7, 1), (2.5, 63), (9.0, 10)):
        scores = torch.tensor([xi] + [-xi] * i, dtype=torch.float64)
        got = repeated.first_token_bound(torch.tensor(xi, dtype=torch.float64), torch.tensor(float(i)))
        assert abs(torch.softmax(scores, 0)[0].item() - got.item()) <= 1e-15
    assert repeated.first_token_bound(torch.tensor(800.0), torch.tensor(63.0)).item() == 1.0  # no overflow


@needs_lm
def test_sink_scores_match_gu_score_of_each_layer():
    from empirical.lm import extract, heads

    model = tiny_llama()
    rec = extract.record(model, ids())
    got = families.sink_scores(rec.weights)
    want = heads.gu_scores(rec.weights[1].double())[:, 2, 0]  # layer 1, head 2, per text
    assert torch.allclose(got["gu_alpha0"][1, 2], want)
    assert torch.allclose(got["mass_mean"][1, 2], rec.weights[1][:, 2, 1:, 0].double().mean(dim=-1))


@needs_lm
@pytest.mark.parametrize("seed,sharpen", [(0, 1.0), (1, 4.0), (2, 12.0)])
def test_repeated_tokens_stay_below_the_bound_with_identical_inputs(seed, sharpen):
    from empirical.lm import extract

    model = tiny_llama(seed=seed, sharpen=sharpen, layers=3)
    x_ids = families.drawn(FakeTokenizer(), 16, None, count=4, seed=seed)["repeated"]
    rec = extract.record(model, x_ids)
    per_layer = [repeated.layer_bound(model, n, rec.inputs[n]) for n in range(3)]
    s = repeated.head_summary(repeated.stack(per_layer))
    assert s["input_spread_max"].max() < 1e-5  # the proposition's hypothesis, in every layer
    assert s["mass_minus_bound_max"].max() <= 1e-12
    from empirical.lm import heads

    alpha0 = heads.gu_scores(torch.stack(rec.weights).double())[..., 0].permute(0, 2, 1).numpy()  # [L, H, N]
    assert (alpha0 <= repeated.alpha0_bound(repeated.stack(per_layer)["bound"]) + 1e-6).all()
    # Negative control: with xi a quarter of the computed one the bound claims too much somewhere,
    # so the comparison above can fail (the bound is within a factor 4 of xi of the worst case).
    i = torch.arange(1, 16).double()
    quarter = [repeated.first_token_bound(p["xi"].unsqueeze(-1) / 4, i) for p in per_layer]
    if sharpen > 1:  # at sharpen 1 the scores hardly vary and every bound is near 1 / (i + 1)
        assert max((p["mass"] - q).max().item() for p, q in zip(per_layer, quarter)) > 1e-3


@needs_lm
def test_on_random_tokens_the_inputs_differ_and_the_bound_still_holds():
    from empirical.lm import extract

    model = tiny_llama(seed=3, sharpen=6.0, layers=2)
    x_ids = families.drawn(FakeTokenizer(), 12, None, count=3)["random"]
    rec = extract.record(model, x_ids)
    per_layer = [repeated.layer_bound(model, n, rec.inputs[n]) for n in range(2)]
    s = repeated.head_summary(repeated.stack(per_layer))
    assert s["input_spread_max"].min() > 1e-2
    assert s["mass_minus_bound_max"].max() <= 1e-12


@needs_lm
def test_with_bos_first_xi_is_the_largest_query_norm_and_bounds_every_score():
    """BOS then one token repeated (as the Gemma probe runs): the positions' query norms differ, so
    xi must take the largest over them (and over the keys): scaling * max_i ||q_i|| * max_j ||k_j||,
    computed here position by position, bounds every score s_ij, and the bound holds at every query."""
    from empirical.lm import extract

    model = tiny_llama(seed=1, sharpen=6.0, layers=2)
    x_ids = families.drawn(FakeTokenizer(), 12, 0, count=3, seed=4)["repeated"]
    rec = extract.record(model, x_ids)
    geo = extract.geometry(model)
    below_largest = 0
    for n in range(2):
        got = repeated.layer_bound(model, n, rec.inputs[n], geo)
        q, k, _ = extract.projections(model, n, rec.inputs[n], geo)
        for h in range(geo.heads):
            kh = k[:, geo.kv_head(h)]  # [B, T, dh]
            q_norms = [q[:, h, i].norm(dim=-1) for i in range(q.shape[2])]  # per position, [B] each
            k_largest = torch.stack([kh[:, j].norm(dim=-1) for j in range(kh.shape[1])]).amax(dim=0)
            want = abs(geo.scaling) * torch.stack(q_norms).amax(dim=0) * k_largest
            assert torch.allclose(got["xi"][h], want, rtol=1e-12, atol=0), (n, h)
            scores = geo.scaling * q[:, h] @ kh.transpose(-1, -2)  # [B, T, T], every pair
            assert (scores.abs() <= got["xi"][h][:, None, None] * (1 + 1e-12)).all(), (n, h)
            below_largest += int((abs(geo.scaling) * q_norms[0] * k_largest < 0.9 * want).sum())
        assert (got["mass"] - got["bound"]).max().item() <= 1e-12  # at every (head, text, query)
    assert below_largest > 0  # query 0's norm is not the largest here: a bound reading it alone is wrong
