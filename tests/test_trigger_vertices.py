"""The bound over every trigger content (proofs.certify.trigger_vertices) against brute force on
small heads: never below an enumerated input (every trigger content on a grid, every multiset of
key contents on a grid), the curvature remainder covering the box between the points, and the
bound tighter than the box relaxation on heads that attend almost uniformly."""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from constructions import reference, task
from proofs.certify import error, heads, trigger_vertices as tv
from tests.test_trigger_dual import _grid, head_net, signed_errors


def brute_rows(h, j, qgrid, kgrid) -> np.ndarray:
    """[2, d]: the largest s * error_r over the grids (s = +1, -1)."""
    combos = np.array(list(itertools.combinations_with_replacement(range(len(kgrid)), j - 1)))
    best = np.full((2, h.d), -np.inf)
    for q in qgrid:
        e = signed_errors(h, j, q, kgrid[combos])
        best = np.maximum(best, np.stack([e.max(axis=0), (-e).max(axis=0)]))
    return best


FAST = dict(cells=16, rounds=1, active=4, steps=12)


@pytest.mark.parametrize("d,j,seed,scale", [(5, 3, 0, 0.02), (4, 4, 2, 0.3)])
def test_row_bounds_hold_over_every_trigger_content(d, j, seed, scale):
    h = heads.head_maps(head_net(d, seed, scale, scale / 10))
    n = d - 3
    brute = brute_rows(h, j, _grid(n, 9 if n == 2 else 41), _grid(n, 9 if n == 2 else 41))
    P = tv._Position(h, j)
    for r in range(task.CONTENT_START, d - 1):
        for i, s in enumerate((1, -1)):
            assert tv.row_bound(P, r, s, np.zeros(n), **FAST)["bound"] >= brute[i, r]
    assert tv.position_bound(h, j, np.zeros(n), **FAST)["bound"] >= brute.max()


def _phi(row: tv._Row, lam: np.ndarray, q: np.ndarray, cgrid: np.ndarray) -> np.ndarray:
    """Phi at trigger contents q [Q, n] per cell, the larger over the cell's two ends, with the key
    maximum K* taken over a fine grid of key contents (brute force): [cells, Q]."""
    row.pts, row.beta, row.w = q, row.P.b + q @ row.P.N, row.P.weights(q)
    out = np.full((len(lam), len(q)), -np.inf)
    for D in row.ends:
        rho, alpha, g, hh, Lt = row.pieces(lam, D)
        u = row.beta @ cgrid.T  # [Q, C]
        F = np.exp(u)[None] * (alpha[:, None, None] + (g @ cgrid.T)[:, None, :]) + (hh @ cgrid.T)[:, None, :]
        K = F.max(axis=2)
        out = np.maximum(out, row.own(lam, rho, np.arange(len(q))) + Lt[:, None] + (row.j - 1) * (K - row.s * row.tf / row.j))
    return out


def test_curvature_remainder_covers_the_box_between_the_points(monkeypatch):
    # own-key exponent E_o(q) = q^2 (M[2, 2] = 1, nothing else but the trigger's BOS score -6):
    # at lambda > 0 the own term e^{E_o(q)} (rho q - lambda) is concave near q = 0, so Phi's
    # maximum lies inside the box, above both vertices, and only the remainder covers it
    monkeypatch.setattr(tv, "GRID", 1)
    d = 4
    M = np.zeros((d, d))
    M[task.TRIGGER_FLAG, task.BOS_FLAG], M[task.CONTENT_START, task.CONTENT_START] = -6.0, 1.0
    eye = reference.as_matrix([[Fraction(int(i == k)) for k in range(d)] for i in range(d)])
    net = reference.single_head("softmax", eye, reference.as_matrix([[Fraction(v) for v in r] for r in M]), eye, eye)
    row = tv._Row(tv._Position(heads.head_maps(net), 3), task.CONTENT_START, 1, cells=4)
    lam = np.array([-0.5, 0.2, 0.5, 1.0])
    cgrid = _grid(1, 401)
    at_points = _phi(row, lam, row.pts.copy(), cgrid).max(axis=1)
    rem = row.curvature(lam)
    inside = _phi(row, lam, _grid(1, 801), cgrid).max(axis=1)
    assert (inside <= at_points + rem).all()
    assert (inside > at_points + 0.1).any()  # measured 0.26 and 0.81 above the vertices at lambda 0.5, 1


def test_tighter_than_the_box_relaxation_on_a_near_uniform_head():
    d, j = 5, 4
    h = heads.head_maps(head_net(d, 4, 0.02, 0.02))  # measured: box 1.128, this bound 1.084 x brute force
    whole = error.whole_box_ranges(h)
    box = error.trigger_bound_rows(h, j, -np.ones(2), np.ones(2), whole)
    P = tv._Position(h, j)
    r, s = max(box, key=box.get)
    vertex = tv.row_bound(P, r, s, np.zeros(2), **FAST)["bound"]
    brute = brute_rows(h, j, _grid(2, 9), _grid(2, 5))[(1, -1).index(s), r]
    assert brute <= vertex < box[(r, s)]


def test_refuses_other_kinds_and_large_n():
    net = head_net(4, 0, 0.1, 0.0)
    h = heads.head_maps(reference.Network("sigmoid_norm", net.layers))
    with pytest.raises(ValueError, match="softmax"):
        tv._Position(h, 3)
    big = heads.head_maps(head_net(tv.MAX_N + 4, 0, 0.01, 0.0))
    with pytest.raises(ValueError, match="2\\^n"):
        tv._Position(big, 3)


def test_tightened_eta_takes_the_smaller_part_per_position():
    parts = {"bos query": 0.1, "query 3 before": 0.2, "trigger 2": 0.5, "trigger 3": 0.4}
    out = tv.tightened_eta(parts, {2: 0.3, 3: 0.45})
    assert out["by_part"]["trigger 2"] == 0.3 and out["by_part"]["trigger 3"] == 0.4
    assert (out["eta_up"], out["attained_by"]) == (0.4, "trigger 3")


def _bench_head(tmp_path):
    import json

    from empirical.construction_check import network_to_json

    weights = tmp_path / "head.json"
    weights.write_text(json.dumps(network_to_json(head_net(4, 5, 0.3, 0.03))))
    return weights


def test_benchmark_resumes_without_recomputing(tmp_path, monkeypatch):
    import json

    from tests.benchmarks import bench_eta_vertices as bench

    weights, out = _bench_head(tmp_path), tmp_path / "vertices.json"
    args = [str(weights), "--L", "5", "--cells", "8", "--rounds", "0", "--out", str(out)]
    assert bench.main(args) == 0
    first = json.loads(out.read_text())["weights"]
    assert sorted(first["positions"]) == ["2", "3", "4"]
    assert all(p["vertex"] > 0 and p["settings"]["rounds"] == 0 for p in first["positions"].values())

    def never(job):
        raise AssertionError("a finished position was computed again")

    monkeypatch.setattr(bench, "_position", never)
    assert bench.main(args) == 0
    assert json.loads(out.read_text())["weights"] == first


def test_benchmark_workers_give_the_serial_figures(tmp_path, monkeypatch):
    import json

    from tests.benchmarks import bench_eta_vertices as bench

    weights = _bench_head(tmp_path)
    seen, pool = [], bench._map

    def spy(f, jobs, workers):
        seen.append(workers)
        yield from pool(f, jobs, workers)

    monkeypatch.setattr(bench, "_map", spy)
    figures = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.json"
        assert bench.main([str(weights), "--L", "5", "--cells", "8", "--rounds", "0", "--workers", workers, "--out", str(out)]) == 0
        positions = json.loads(out.read_text())["weights"]["positions"]
        figures.append({j: (p["vertex"], p["settings"]["rounds"]) for j, p in positions.items()})
    assert seen == [1, 2] and figures[0] == figures[1] and len(figures[0]) == 3
