"""The formulation benchmark (``python -m tests.benchmarks.bench_formulations``) runs and prints
its table; here at 1 x 1 with one step per row, so CI only checks that it works. Its figures go
to empirical/training/README.md with the command, the machine and the load."""

import torch

from empirical.training import formulations as F
from tests.benchmarks import bench_formulations as bench


def test_benchmark_prints_a_row_per_formulation_and_the_authors_loop(monkeypatch):
    saved = list(F._CURRENT), list(F._HOW)
    try:
        table = bench.rows("softmax", compile_too=False, shapes=((1, 1),))
        rates = bench.measure(table, rounds=1, budget=0.0)
    finally:
        F._CURRENT[:], F._HOW[:] = saved
    args = type("Args", (), {"rounds": 1, "budget": 0.0, "kind": "softmax"})()
    text, data = bench.report(rates, {"load": 1.0, "wall": 0.0}, {"load": 1.0, "wall": 1.0}, args)
    for name in F.FORMULATIONS:
        assert f"| {name} float32 |" in text
    assert "| bmm float64 |" in text and "| author's loop, 1 seed |" in text
    assert "5 seeds of bmm cost this many times the author's 1 seed per step: 1 x 1" in text
    assert all(r["1x1"][0] > 0 for r in data["steps_per_cpu_second"].values())
    assert data["paired_vs_bmm"]["bmm float32"]["1x1"] == 1.0  # each round against itself
    assert all(r["1x1"] > 0 for r in data["paired_vs_bmm"].values())
    assert torch.get_num_threads() == 1


def test_a_subset_of_rows_and_shapes():
    saved = list(F._CURRENT), list(F._HOW)
    try:
        table = bench.rows("softmax", compile_too=False, shapes=((1, 1),), only=["fused"])
    finally:
        F._CURRENT[:], F._HOW[:] = saved
    assert list(table) == ["bmm float32", "fused float32", bench.AUTHOR] and list(table["bmm float32"]) == [(1, 1)]


def test_the_layer_timing_prints_a_forward_and_backward_per_kind_and_heads(capsys):
    """``--layer``: the compiled kernel alone, at the ensemble's shape (or the reason it is not built)."""
    from empirical.training.compiled import build

    assert bench.main(["--layer", "--rounds", "1", "--budget", "0", "--shapes", "1x1"]) == 0
    text = capsys.readouterr().out
    if build.compiler() is None:
        assert "no compiled kernel here" in text
        return
    assert "| kind | H = 1: forward, backward (ms) |" in text
    for kind in build.KINDS:
        forward, backward = (float(v) for v in text.split(f"| {kind} | ")[1].split(" |")[0].split(", "))
        assert forward > 0 and backward > 0
