"""The reproduce budget benchmark (``python -m tests.benchmarks.bench_reproduce_budget``) reads a
run's part records; here on two hand-written records, so CI checks the sums and the table."""

import json

from empirical.host import usage
from empirical.pipeline import reproduce as R
from tests.benchmarks import bench_reproduce_budget as bench


def _record(wall, cpu, quick=False):
    return {"status": "ok", "claims": [], "tables": [], "details": {}, "wall_s": wall,
            "usage": {"cpu_s": cpu, "load_mean": 1.5}, "machine": usage.machine(),
            "provenance": {"config": {"quick": quick}}}


def test_the_budget_sums_the_stored_parts_and_names_the_missing_ones(tmp_path, capsys):
    (tmp_path / "proofs.json").write_text(json.dumps(_record(20.0, 19.5)))
    (tmp_path / "smt.json").write_text(json.dumps(_record(1190.0, 1500.25)))
    data = bench.budget(tmp_path)
    assert list(data["parts"]) == ["proofs", "smt"] and data["missing"] == ["constructions", "training", "beyond"]
    assert data["wall_s"] == 1210.0 and data["cpu_s"] == 1519.8
    text = bench.table(data)
    assert "| smt | default | ok | 1190.0 | 1500.2 | 1.5 |" in text
    assert "over the 20-minute wall budget" in text and usage.describe_machine(usage.machine()) in text
    assert bench.main([str(tmp_path)]) == 0 and "parts not in this folder: constructions" in capsys.readouterr().out


def test_a_run_within_the_budget_says_so(tmp_path):
    for name in R.PARTS:
        (tmp_path / f"{name}.json").write_text(json.dumps(_record(bench.BUDGET_WALL_S / len(R.PARTS), 1.0)))
    assert "within the 20-minute wall budget" in bench.table(bench.budget(tmp_path))
