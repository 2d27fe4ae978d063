"""The task of constructions/SPEC.md section 1: sampler against the exact oracle, statistics, validation."""

import math
from fractions import Fraction

import pytest
import torch

from constructions import task
from constructions.errors import BadInput


def test_sampler_matches_exact_oracle_on_every_sequence():
    cfg = task.TaskConfig(d=6, L=9)
    for residual in (False, True):
        cfg = task.TaskConfig(d=6, L=9, residual=residual)
        b = task.sample(cfg, 64, torch.Generator().manual_seed(1), dtype=torch.float64)
        for x, y, j in zip(b.x, b.y, b.trigger):
            X = [[Fraction(v) for v in row] for row in x.tolist()]  # exact copies of the floats
            assert task.trigger_position(X) == int(j)
            Y = task.target(X, int(j), residual)
            assert torch.equal(torch.tensor([[float(v) for v in r] for r in Y], dtype=torch.float64), y) or \
                torch.allclose(torch.tensor([[float(v) for v in r] for r in Y], dtype=torch.float64), y, atol=1e-15)


def test_exact_target_by_hand():
    X = task.make_sequence([[Fraction(1)], [Fraction(-1, 2)], [Fraction(1, 4)]], j=2)
    # positions 1 and 2 averaged: content (1 - 1/2)/2, flags: content 1/2, trigger 1/2
    assert task.target(X) == [[0] * 4, [0] * 4, [0, Fraction(1, 2), Fraction(1, 4), Fraction(1, 2)], [0] * 4]
    R = task.target(X, residual=True)
    assert R[2] == [0, Fraction(3, 2), Fraction(-1, 4), Fraction(1, 2)]
    assert R[3] == X[3] and R[0] == X[0]


def test_flags_exact_and_content_uniform():
    cfg = task.TaskConfig()
    n = 4000
    b = task.sample(cfg, n, torch.Generator().manual_seed(0))
    x, t = b.x, b.trigger
    L, d = cfg.L, cfg.d
    assert torch.all(x[:, 0] == torch.eye(d)[0])
    assert torch.all(x[:, 1:, 0] == 0)
    pos = torch.arange(L)
    assert torch.all(x[:, :, 1] == (pos == t[:, None]).float())
    assert torch.all(x[:, 1:, d - 1] == (pos[1:] != t[:, None]).float())
    content = x[:, 1:, 2:d - 1].flatten()
    m = content.numel()
    assert content.min() >= -1 and content.max() < 1
    # Uniform(-1, 1): mean 0, var 1/3; allow 5 standard errors.
    assert abs(content.mean().item()) < 5 * math.sqrt(1 / 3 / m)
    assert abs(content.var().item() - 1 / 3) < 5 * math.sqrt(4 / 45 / m)  # var of U^2 is 4/45
    # each decile holds 1/10 of the mass
    hist = torch.histc(content, bins=10, min=-1, max=1) / m
    assert torch.all((hist - 0.1).abs() < 5 * math.sqrt(0.09 / m))


def test_trigger_position_uniform():
    cfg = task.TaskConfig(L=8)
    n = 14000
    t = task.sample(cfg, n, torch.Generator().manual_seed(3)).trigger
    counts = torch.bincount(t, minlength=8).float()
    assert counts[:2].sum() == 0
    p = 1 / 6
    assert torch.all((counts[2:] / n - p).abs() < 5 * math.sqrt(p * (1 - p) / n))


def test_fixed_trigger_and_gaussian_variant():
    b = task.sample(task.TaskConfig(trigger=7, content="gaussian"), 2000, torch.Generator().manual_seed(0))
    assert torch.all(b.trigger == 7)
    content = b.x[:, 1:, 2:-1]
    assert content.abs().max() > 1  # not Uniform(-1, 1)
    assert abs(content.std().item() - 1) < 0.02


def test_same_seed_same_batch_and_different_seed_differs():
    cfg = task.TaskConfig()
    a = task.sample(cfg, 32, torch.Generator().manual_seed(5))
    b = task.sample(cfg, 32, torch.Generator().manual_seed(5))
    c = task.sample(cfg, 32, torch.Generator().manual_seed(6))
    assert all(torch.equal(p, q) for p, q in zip(a, b))
    assert not torch.equal(a.x, c.x)


@pytest.mark.parametrize("fields, name", [
    (dict(d=3), "'d'"), (dict(L=3), "'L'"), (dict(trigger=1), "'trigger'"), (dict(L=6, trigger=6), "'trigger'"),
    (dict(content="cauchy"), "'content'"), (dict(d=4.0), "'d'"), (dict(residual="yes"), "'residual'"),
])
def test_bad_configs_name_the_field(fields, name):
    with pytest.raises(BadInput, match=name):
        task.TaskConfig(**fields)
    assert issubclass(BadInput, ValueError)


def test_enumerator_covers_the_finite_instance():
    cfg = task.TaskConfig(d=4, L=4)
    values = (Fraction(-1), Fraction(1))
    seqs = list(task.enumerate_sequences(cfg, values))
    assert len(seqs) == task.count_sequences(cfg, 2) == 2 * 2 ** 3
    assert len({tuple(map(tuple, X)) for X, _ in seqs}) == len(seqs)
    assert {j for _, j in seqs} == {2, 3}
    for X, j in seqs:
        assert task.trigger_position(X) == j and X[0] == [1, 0, 0, 0]


def test_target_works_on_sympy():
    import sympy

    a, b = sympy.symbols("a b")
    X = task.make_sequence([[a], [b], [a]], j=3)
    Y = task.target(X)
    assert sympy.simplify(Y[3][2] - (2 * a + b) / 3) == 0


@pytest.mark.parametrize("fields", [{}, {"residual": True}, {"trigger": 5}, {"content": "gaussian"},
                                    {"bos": False}, {"triggers": 3}])
def test_sample_members_is_each_generator_s_own_batch(fields):
    cfg = task.TaskConfig(d=6, L=9, **fields)
    together = task.sample_members(cfg, 7, [torch.Generator().manual_seed(s) for s in (3, 1, 4)])
    for m, s in enumerate((3, 1, 4)):
        alone = task.sample(cfg, 7, torch.Generator().manual_seed(s))
        for name in task.Batch._fields:
            assert torch.equal(getattr(together, name)[m], getattr(alone, name)), (fields, name)
