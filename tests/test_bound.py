"""The certified sink bound: the QP solver, the constructed softmax family (bound by hand), random
and trained models (the bound never exceeds the measured BOS mass)."""

import math

import pytest
import torch

from constructions import softmax_head, task
from empirical.training import bound, model as M

SLACK = 1e-9  # float64 rounding; the inequality itself is exact




def test_min_norm_distance_on_hulls_with_known_distance():
    # Segment from (1, -1) to (1, 1): distance 1; one point (3, 4): 5; a hull holding the origin: 0;
    # the three unit vectors e1, e2, e3 in R^3: 1/sqrt(3).
    d = 3
    pts = torch.zeros(4, 3, d, dtype=torch.float64)
    mask = torch.zeros(4, 3, dtype=torch.bool)
    pts[0, 0, :2], pts[0, 1, :2] = torch.tensor([1.0, -1.0]), torch.tensor([1.0, 1.0])
    mask[0, :2] = True
    pts[1, 0, :2] = torch.tensor([3.0, 4.0])
    mask[1, 0] = True
    pts[1, 1:, :] = 100.0  # masked out: must not matter
    pts[2, 0, 0], pts[2, 1, 0] = -1.0, 2.0
    mask[2, :2] = True
    pts[3] = torch.eye(3, dtype=torch.float64)
    mask[3] = True
    lower, upper = bound.min_norm_distance(pts, mask)
    expected = [1.0, 5.0, 0.0, 1 / math.sqrt(3)]
    assert lower.tolist() == pytest.approx(expected, abs=1e-8)
    assert torch.all(lower <= upper + 1e-15)


def test_lower_bound_is_certified_even_when_the_solver_stops_early():
    g = torch.Generator().manual_seed(3)
    pts = torch.randn(500, 7, 5, generator=g, dtype=torch.float64) + 1.5
    mask = torch.rand(500, 7, generator=g) < 0.7
    mask[:, 0] = True
    exact_lo, exact_hi = bound.min_norm_distance(pts, mask)
    rough_lo, rough_hi = bound.min_norm_distance(pts, mask, iters=3)
    # Any unit direction gives a lower bound and any hull point an upper bound.
    assert torch.all(rough_lo <= exact_hi + 1e-12) and torch.all(exact_lo <= rough_hi + 1e-12)
    assert (exact_hi - exact_lo).max().item() < 1e-8
    assert (rough_hi - rough_lo).max().item() > 1e-6  # the early stop really is rough


def test_project_simplex_respects_the_mask():
    v = torch.tensor([[0.3, 2.0, -1.0, 5.0], [0.1, 0.1, 0.1, 0.1]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    p = bound.project_simplex(v, mask)
    assert p.sum(dim=-1).tolist() == pytest.approx([1.0, 1.0])
    assert p[0].tolist() == pytest.approx([0.0, 1.0, 0.0, 0.0])
    assert p[1].tolist() == pytest.approx([0.5, 0.5, 0.0, 0.0])


def _construction(d, beta):
    return M.from_network(softmax_head.build(d, beta), dtype=torch.float64)


@pytest.mark.parametrize("beta", [1, 3, 6])
def test_bound_on_the_constructed_softmax_head_by_hand(beta):
    """Zero content: images are e_content before the trigger and e_trigger at it, BOS's image is 0.
    Query i < j: hull {e_content}, delta 1, ||o_i|| = i / (e^b + i): bound = e^b / (e^b + i) = a_i0 (tight).
    Query i > j: hull [e_content, e_trigger], delta 1/sqrt(2),
    ||o_i|| = sqrt((i-1)^2 + 1) / (e^b + i): bound = 1 - sqrt(2) sqrt((i-1)^2 + 1) / (e^b + i)."""
    d, L, j = 5, 8, 3
    m = _construction(d, beta)
    X = torch.tensor(task.make_sequence([[0.0] * (d - 3)] * (L - 1), j), dtype=torch.float64).unsqueeze(0)
    trig = torch.tensor([j])
    _, cache = m(X)
    images = bound.head_images(m.layers[0], X, 0)
    result = bound.head_bound(images, cache["L0.pattern"][:, 0], trig)
    eb = math.exp(beta)
    queries = [i for i in range(1, L) if i != j]
    by_hand = [eb / (eb + i) if i < j else 1 - math.sqrt(2) * math.sqrt((i - 1) ** 2 + 1) / (eb + i)
               for i in queries]
    measured_by_hand = [softmax_head.bos_mass(beta, i) for i in queries]
    assert result["bound"].tolist() == pytest.approx(by_hand, abs=1e-9)
    assert result["measured"].tolist() == pytest.approx([float(v) for v in measured_by_hand], abs=1e-12)
    assert result["bos_image_norm"].tolist() == [0.0] * len(queries)
    assert torch.all(result["measured"] >= result["bound"] - SLACK)


def test_bound_on_the_construction_with_random_content_tends_to_one():
    d, L = 6, 10
    cfg = task.TaskConfig(d=d, L=L, trigger=5)
    batch = task.sample(cfg, 60, torch.Generator().manual_seed(1), dtype=torch.float64)
    means = []
    for beta in (2, 5, 9):
        s = bound.model_bounds(_construction(d, beta), batch.x, batch.trigger, iters=100)[0][0]
        assert s["violations"].item() == 0 and s["min_slack"].item() >= -SLACK
        means.append(s["bound_mean"].item())
    assert means[0] < means[1] < means[2] and means[2] > 0.99


@pytest.mark.parametrize("layers, heads", [(1, 1), (2, 3)])
def test_bound_never_exceeds_measured_mass_on_random_models(layers, heads):
    # Random weights (std 0.5, so the softmax is far from uniform) and a random ensemble of 3.
    d = 6
    m = M.AttentionModel("softmax", d, layers=layers, heads=heads, residual=layers > 1, ensemble=3,
                         seeds=[0, 1, 2], dtype=torch.float64)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5)
        m.layers[0].W_V[0, 0] *= 0.01  # member 0, head 0: a small BOS-ish image, so the bound bites
    batch = task.sample(task.TaskConfig(d=d, L=7), 25, torch.Generator().manual_seed(2), dtype=torch.float64)
    for layer in bound.model_bounds(m, batch.x, batch.trigger, iters=60):  # fewer steps: still certified
        for s in layer:
            assert s["bound_mean"].shape == (3,)
            assert torch.all(s["min_slack"] >= -SLACK) and torch.all(s["violations"] == 0)


def test_bound_does_not_apply_to_relu():
    assert bound.applies("softmax") and not bound.applies("relu")
    m = M.AttentionModel("relu", 5, dtype=torch.float64)
    batch = task.sample(task.TaskConfig(d=5, L=6), 4, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert bound.model_bounds(m, batch.x, batch.trigger) == [[None]]
