"""Task variants (no BOS, several triggers, key-query retrieval): sampler against the exact
oracle, hand-computed targets, statistics, validation; the reference task stays as it was."""

from fractions import Fraction

import pytest
import torch

from constructions import files, task
from constructions.errors import BadInput

VARIANTS = [
    dict(bos=False),
    dict(triggers=3),
    dict(retrieval=True),
    dict(bos=False, triggers=2, retrieval=True, residual=True),
    dict(bos=False, trigger=5, content="gaussian"),
    dict(triggers=4, residual=True),
]


@pytest.mark.parametrize("fields", VARIANTS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()))
def test_variant_sampler_matches_exact_oracle(fields):
    cfg = task.TaskConfig(d=6, L=9, **fields)
    b = task.sample(cfg, 48, torch.Generator().manual_seed(1), dtype=torch.float64)
    for x, y, first in zip(b.x, b.y, b.trigger):
        X = [[Fraction(v) for v in row] for row in x.tolist()]  # exact copies of the floats
        triggers = task.trigger_positions_in(X)
        assert len(triggers) == cfg.triggers and triggers[0] == int(first)
        Y = torch.tensor([[float(v) for v in r] for r in task.target_for(cfg, X)], dtype=torch.float64)
        assert torch.allclose(Y, y, atol=1e-14, rtol=0)


def test_general_torch_target_equals_reference_target_on_the_reference_task():
    cfg = task.TaskConfig(d=6, L=9)
    b = task.sample(cfg, 64, torch.Generator().manual_seed(0), dtype=torch.float64)
    general = task.target_variant_torch(cfg, b.x, task.trigger_mask(b.x))
    assert torch.allclose(general, b.y, atol=1e-15)
    assert task.TaskConfig().is_reference and task.TaskConfig(triggers=2).is_reference is False


def test_defaults_are_the_reference_task():
    cfg = task.TaskConfig()
    assert (cfg.bos, cfg.triggers, cfg.retrieval) == (True, 1, False) and cfg.is_reference
    assert cfg.first == 1 and task.TaskConfig(bos=False).first == 0
    # a config read back from its JSON form is the same task
    assert files.config_from_dict(task.TaskConfig, files.to_jsonable(cfg)) == cfg


def test_exact_targets_by_hand():
    one, half, q = Fraction(1), Fraction(1, 2), Fraction(1, 4)
    # no BOS: positions 0, 1 content, trigger at 2; the mean runs over positions 0..2 (3 tokens)
    X = task.make_sequence([[one], [-half], [q], [one]], j=2, bos=False)
    assert X[0] == [0, 0, 1, 1] and len(X) == 4
    Y = task.target(X, bos=False)
    assert Y[2] == [0, Fraction(1, 3), Fraction(1 - Fraction(1, 2) + Fraction(1, 4), 3), Fraction(2, 3)]
    assert Y[0] == Y[1] == Y[3] == [0, 0, 0, 0]
    # retrieval: keys (first content coordinate) +1, -1, +1(trigger, query +1), -1 at positions 1..4
    X = task.make_sequence([[one, half], [-one, q], [one, -q], [-one, one]], j=3)
    Y = task.target(X, retrieval=True)
    # tokens 1 and 3 match the query: mean of (0,0,1,1/2,1) and (0,1,1,-1/4,0)
    assert Y[3] == [0, half, one, Fraction(1, 8), half]
    assert all(Y[i] == [0] * 5 for i in (0, 1, 2, 4))
    # several triggers: each gets the inclusive mean up to itself, earlier triggers included
    X = task.make_sequence([[one], [half], [q], [-one]], j=(2, 4))
    Y = task.target(X)
    assert Y[2] == [0, half, Fraction(3, 4), half]
    assert Y[4] == [0, half, Fraction(1 + Fraction(1, 2) + Fraction(1, 4) - 1, 4), half]


def test_variant_statistics():
    n = 4000
    cfg = task.TaskConfig(L=10, bos=False, triggers=3, retrieval=True)
    b = task.sample(cfg, n, torch.Generator().manual_seed(0))
    x = b.x
    assert torch.all(x[..., 0] == 0)  # no BOS flag anywhere
    mask = task.trigger_mask(x)
    assert torch.all(mask.sum(-1) == 3) and torch.all(~mask[:, :2])
    assert torch.all(x[..., -1] == (~mask).float())  # position 0 is an ordinary content token
    assert torch.equal(b.trigger, mask.float().argmax(-1))
    freq = mask[:, 2:].float().mean(0)  # each of the 8 positions holds a trigger w.p. 3/8
    assert torch.all((freq - 3 / 8).abs() < 5 * (3 / 8 * 5 / 8 / n) ** 0.5)
    keys = x[..., 2]
    assert set(keys.unique().tolist()) == {-1.0, 1.0}
    assert abs(keys.mean().item()) < 5 / (n * 10) ** 0.5


@pytest.mark.parametrize("fields, name", [
    (dict(bos=1), "'bos'"), (dict(retrieval="yes"), "'retrieval'"), (dict(triggers=0), "'triggers'"),
    (dict(L=6, triggers=5), "'triggers'"), (dict(triggers=2.0), "'triggers'"), (dict(triggers=True), "'triggers'"),
    (dict(triggers=2, trigger=7), "'trigger'"),
])
def test_bad_variant_values_name_the_field(fields, name):
    with pytest.raises(BadInput, match=name):
        task.TaskConfig(**fields)


def test_variants_from_config_files_and_unknown_fields():
    cfg = files.config_from_dict(task.TaskConfig, {"bos": False, "triggers": 2, "retrieval": True}, "task")
    assert not cfg.is_reference and cfg.first == 0
    with pytest.raises(BadInput, match="unknown field.*bos"):
        files.config_from_dict(task.TaskConfig, {"no_bos": True}, "task")
    with pytest.raises(BadInput, match="reference task only"):
        next(task.enumerate_sequences(task.TaskConfig(d=4, L=4, bos=False), [Fraction(1)]))
