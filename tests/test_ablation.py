"""Functional sinks (``empirical.analysis.ablation``): the two BOS ablations on hand-checkable patterns, on
the explicit constructions (whose answers are known: the softmax sink is relied on, its BOS value
is already 0, the ReLU head has no sink to remove), on a stored training run, and the pinned
threshold."""

import pytest
import torch

from constructions import relu_head, softmax_head, task
from empirical.analysis import ablation
from empirical.training import bos_edits
from empirical.training.model import from_network
from empirical.training.train import TrainConfig, train


def _softmax(scores, mask):
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)


def test_removing_bos_is_the_softmax_over_the_other_keys_and_keeps_relu_row_totals():
    g = torch.Generator().manual_seed(0)
    L = 6
    scores = torch.randn(2, 3, 2, L, L, generator=g, dtype=torch.float64)  # [E, B, H, L, L]
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    out = bos_edits.remove_bos(_softmax(scores, mask), head=1)
    no_bos = mask.clone()
    no_bos[1:, 0] = False
    want = _softmax(scores[:, :, 1], no_bos)
    assert torch.allclose(out[:, :, 1, 1:], want[:, :, 1:], atol=1e-15)
    assert torch.equal(out[:, :, 1, 0], _softmax(scores, mask)[:, :, 1, 0])  # query 0 untouched
    assert torch.equal(out[:, :, 0], _softmax(scores, mask)[:, :, 0])  # other head untouched
    only = torch.zeros(3, L, dtype=torch.bool)
    only[:, 2] = True  # one query per sequence
    part = bos_edits.remove_bos(_softmax(scores, mask), head=1, queries=only)
    assert torch.equal(part[:, :, 1, 2], out[:, :, 1, 2])
    assert torch.equal(part[:, :, 1, 3:], _softmax(scores, mask)[:, :, 1, 3:])
    relu = torch.relu(scores) * mask
    cut = bos_edits.remove_bos(relu, head=0)
    rest = relu[..., 0, 1:, 1:].sum(-1)
    keeps = rest > 0
    assert torch.allclose(cut[..., 0, 1:, :].sum(-1)[keeps], relu[..., 0, 1:, :].sum(-1)[keeps], atol=1e-14)
    assert torch.all(cut[..., 0, 1:, 0] == 0) and torch.all(cut[..., 0, 1:, :].sum(-1)[~keeps] == 0)


def test_removing_a_sink_whose_bos_weight_rounds_to_one_keeps_the_other_keys_in_float32():
    """A sinking head of a real LM in float32: scores 18-25 above the other keys give a_i0 = 1.0
    exactly (or within an ulp of it) while the other keys hold 1e-11..1e-8. Renormalised onto
    keys 1..i the row must be the softmax over those keys, as float64 computes it, to float32's
    relative precision; from total - a_i0 it was 0 or off by up to 100 %."""
    L = 8
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(1, 4, 1, L, L, generator=g, dtype=torch.float64)
    scores[..., 0] += 18 + 7 * torch.rand(1, 4, 1, L, generator=g, dtype=torch.float64)  # the sink
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    pattern = _softmax(scores, mask)
    assert (pattern.float()[..., 1:, 0] == 1).any()  # the case that cancelled
    out = bos_edits.remove_bos(pattern.float(), head=0)[..., 0, 1:, :].double()
    want = bos_edits.remove_bos(pattern, head=0)[..., 0, 1:, :]
    assert torch.allclose(out, want, rtol=1e-6, atol=0)


def test_zeroing_bos_value_touches_only_that_head_and_position():
    v = torch.randn(2, 4, 5, 3, 7, dtype=torch.float64)  # [E, B, L, H, d]
    out = bos_edits.zero_bos_value(v, head=2)
    assert torch.all(out[..., 0, 2, :] == 0)
    mask = torch.ones_like(v, dtype=torch.bool)
    mask[..., 0, 2, :] = False
    assert torch.equal(out[mask], v[mask])


def _batch(d, L, n=64):
    return task.sample(task.TaskConfig(d=d, L=L, trigger=7), n, torch.Generator().manual_seed(1), dtype=torch.float64)


def test_softmax_construction_relies_on_its_sink_and_reads_nothing_from_it():
    """BOS-gap head (beta = 10): without BOS, a row before the trigger is the mean of its content
    tokens, whose content flag is 1, so the error rises to >= 1; its BOS value W_V x_0 is already
    0, so zeroing it changes nothing."""
    model = from_network(softmax_head.build(16, 10))
    b = _batch(16, 16)
    r = ablation.head_ablations(model, b.x, b.y, b.trigger)
    kept = r["kept"]["max_abs"][0]
    head = r["heads"][0][0]
    assert kept < 1e-3 and head["bos_mass"][0] > 0.99
    assert head["removed"]["max_abs"][0] >= 1.0 and ablation.is_functional(kept, head["removed"]["max_abs"][0])
    assert head["value_zeroed"]["max_abs"][0] == kept  # exactly: the value was 0 already
    assert not ablation.is_functional(kept, head["value_zeroed"]["max_abs"][0])


def test_relu_construction_has_no_sink_to_remove():
    model = from_network(relu_head.build(16))
    b = _batch(16, 16)
    r = ablation.head_ablations(model, b.x, b.y, b.trigger)
    head = r["heads"][0][0]
    assert head["bos_mass"][0] == 0
    assert head["removed"]["max_abs"][0] == r["kept"]["max_abs"][0] < 1e-12  # nothing changed
    assert head["value_zeroed"]["max_abs"][0] == r["kept"]["max_abs"][0]


def test_threshold_is_pinned():
    """0.75 x and 1.5 x the threshold fall on either side: doubling or halving it flips one."""
    t = ablation.FUNCTIONAL_INCREASE
    assert t == pytest.approx(10 * TrainConfig().tol)  # ten times the stop tolerance
    assert not ablation.is_functional(0.004, 0.004 + 0.75 * t)
    assert ablation.is_functional(0.004, 0.004 + 1.5 * t)


def test_stored_run_ablation_starts_from_the_recorded_error():
    """The kept error of a stored run, recomputed from its record's weights on its own
    evaluation set, is the error training recorded: same weights, same sequences."""
    summary = train(TrainConfig(kind="softmax", layers=2, heads=2, max_steps=20, seeds=(0, 1), eval_sequences=50,
                                log_every=20), quiet=True)
    r = ablation.of_summary(summary)
    for s, member in enumerate(summary["members"]):
        assert r["kept"]["max_abs"][s] == pytest.approx(member["eval_max_abs_error"], rel=1e-12)
        masses = [h["bos_mass"][s] for layer in r["heads"] for h in layer]
        recorded = [h["bos_nontrigger_mean"] for layer in member["layers"] for h in layer]
        assert masses == pytest.approx(recorded, rel=1e-12)
    rows = ablation.rows(r, [0, 1])
    assert len(rows) == 2 * 2 * 2 and all(row["removed_increase"] == row["removed"] - row["kept"] for row in rows)
