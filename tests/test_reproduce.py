"""``sinks reproduce``: parts run in order, results are resumed, REPORT.md is built from JSON only.

The real parts are long; these tests swap in tiny fake part modules (written to a temporary
folder added to ``empirical.pipeline.parts.__path__``) and a part list naming them. Each fake part appends
a line to a counter file whenever it runs, so the tests see which parts really ran.
"""

import importlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import empirical.pipeline.parts
from empirical.pipeline import cli, reproduce
from empirical.pipeline.reproduce import build_report, load_part, run_part

OK_PART = '''
from pathlib import Path
import numpy as np
def run(results_dir, quick, device):
    with open({counter!r}, "a") as f:
        f.write("{name}\\n")
    (Path(results_dir) / "{name}.png").write_bytes(b"png")
    return {{
        "claims": [
            {{"claim": "T3: a ReLU head solves the task", "verdict": "verified exactly",
              "evidence": "error 0 on 1024 sequences | max 0", "test": "tests/test_x.py::test_relu",
              "command": "sinks construct relu", "figures": ["{name}.png", "absent.png"]}},
            {{"claim": "T1: softmax sinks", "verdict": "observed",
              "evidence": "BOS mass 0.9998 (quick=" + str(quick) + ")"}},
        ],
        "tables": [{{"title": "runs", "columns": ["model", "BOS mass"], "rows": [["1 layer softmax", 0.99981234]]}}],
        "steps": np.arange(1, 4),
    }}
'''

BROKEN_PART = '''
def run(results_dir, quick, device):
    with open({counter!r}, "a") as f:
        f.write("{name}\\n")
    raise RuntimeError("solver exploded")
'''

BAD_VERDICT_PART = '''
def run(results_dir, quick, device):
    return {{"claims": [{{"claim": "x", "verdict": "probably", "evidence": "e"}}]}}
'''

SLOW_UNLESS_PART = '''
import time
from pathlib import Path
def run(results_dir, quick, device):
    if not Path({marker!r}).exists():
        time.sleep(60)
    with open({counter!r}, "a") as f:
        f.write("{name}\\n")
    return {{"claims": [{{"claim": "slow", "verdict": "unknown", "evidence": "timeout after 0 s"}}]}}
'''


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """``make(name=source, ...)`` writes fake parts and makes PARTS exactly those names."""
    folder, counter = tmp_path / "fake_parts", tmp_path / "counter"
    folder.mkdir()
    monkeypatch.setattr(empirical.pipeline.parts, "__path__", [*empirical.pipeline.parts.__path__, str(folder)])
    written = []

    def make(parts: dict[str, str | None]) -> Path:
        for name, source in parts.items():
            # importing a stand-in sets the package's attribute too, which `from ...parts import name`
            # reads before sys.modules: restore (or remove) it after the test like the module itself
            monkeypatch.setattr(empirical.pipeline.parts, name, getattr(empirical.pipeline.parts, name, None),
                                raising=False)
            if source is not None:
                (folder / f"{name}.py").write_text(source.format(name=name, counter=str(counter),
                                                                  marker=str(tmp_path / "marker")))
                written.append(name)
        importlib.invalidate_caches()
        monkeypatch.setattr(reproduce, "PARTS", tuple(parts))
        return counter

    yield make
    for name in written:
        sys.modules.pop(f"empirical.pipeline.parts.{name}", None)


def runs(counter: Path) -> list[str]:
    return counter.read_text().split() if counter.exists() else []


def test_parts_run_in_order_and_the_report_tables_every_claim(tmp_path, fake_parts):
    counter = fake_parts({"zz_ok": OK_PART, "zz_missing": None, "zz_broken": BROKEN_PART})
    out = tmp_path / "results"
    statuses = reproduce.reproduce(out, quick=True, device="cpu")
    assert statuses == {"zz_ok": "ok", "zz_missing": "missing", "zz_broken": "failed"}
    assert runs(counter) == ["zz_ok", "zz_broken"]
    record = load_part(out, "zz_ok")
    assert record["provenance"]["config"] == {"part": "zz_ok", "quick": True, "device": "cpu"}
    assert record["details"] == {"steps": [1, 2, 3]} and "python" in record["provenance"]["versions"]
    broken = load_part(out, "zz_broken")
    assert broken["status"] == "failed" and broken["error"] == "RuntimeError: solver exploded"

    report = (out / "REPORT.md").read_text()
    for needle in ("T3: a ReLU head solves the task", "**verified exactly**", "BOS mass 0.9998 (quick=True)",
                   "error 0 on 1024 sequences \\| max 0", "`tests/test_x.py::test_relu`", "`sinks construct relu`",
                   "[zz_ok.png](zz_ok.png)", "[absent.png](absent.png) (missing)",
                   "missing: module empirical/pipeline/parts/zz_missing.py does not exist",
                   "failed: RuntimeError: solver exploded", "## zz_ok: runs", "| 1 layer softmax | 0.999812 |",
                   "Verdicts: verified exactly 1, observed 1, failed 1."):
        assert needle in report, needle
    assert not list(out.glob(".*.tmp"))


def test_finished_parts_are_reused_and_failed_corrupt_or_changed_ones_rerun(tmp_path, fake_parts):
    counter = fake_parts({"zz_ok": OK_PART, "zz_broken": BROKEN_PART})
    out = tmp_path / "results"
    reproduce.reproduce(out, quick=True, device="cpu")
    assert reproduce.reproduce(out, quick=True, device="cpu") == {"zz_ok": "reused", "zz_broken": "failed"}
    assert runs(counter) == ["zz_ok", "zz_broken", "zz_broken"]  # the failed part is tried again

    text = (out / "zz_ok.json").read_text()
    (out / "zz_ok.json").write_text(text[: len(text) // 2])  # a truncated file is not a result
    assert run_part("zz_ok", out, True, "cpu") == "ok"
    assert run_part("zz_ok", out, False, "cpu") == "ok"  # another config: rerun
    assert run_part("zz_ok", out, False, "cpu") == "reused"
    assert run_part("zz_ok", out, False, "cpu", force=True) == "ok"
    assert runs(counter).count("zz_ok") == 4


def test_part_with_malformed_output_is_recorded_as_failed(tmp_path, fake_parts):
    fake_parts({"zz_bad": BAD_VERDICT_PART})
    assert run_part("zz_bad", tmp_path, True, "cpu") == "failed"
    assert "verdict 'probably'" in load_part(tmp_path, "zz_bad")["error"]


def test_killed_reproduce_resumes_and_keeps_finished_parts(tmp_path, fake_parts):
    counter = fake_parts({"zz_ok": OK_PART, "zz_slow": SLOW_UNLESS_PART})
    out, folder = tmp_path / "results", tmp_path / "fake_parts"
    script = textwrap.dedent(f"""
        import empirical.pipeline.parts
        from empirical.pipeline import reproduce
        empirical.pipeline.parts.__path__.append({str(folder)!r})
        reproduce.PARTS = ("zz_ok", "zz_slow")
        reproduce.reproduce({str(out)!r}, quick=True, device="cpu")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # a net only: the loop ends when the file appears
        while not (out / "zz_ok.json").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        time.sleep(0.2)  # now inside the slow part
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert load_part(out, "zz_ok") is not None and not (out / "zz_slow.json").exists()
    (tmp_path / "marker").touch()
    assert reproduce.reproduce(out, quick=True, device="cpu") == {"zz_ok": "reused", "zz_slow": "ok"}
    assert runs(counter) == ["zz_ok", "zz_slow"]


def test_report_is_rebuilt_from_the_part_files_alone(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "PARTS", ("zz_a", "zz_b", "zz_c"))  # no such modules exist at all
    record = {"part": "zz_a", "status": "ok", "wall_s": 1.5, "tables": [],
              "claims": [{"claim": "sufficiency", "verdict": "proved", "evidence": "sympy closed 3 identities",
                          "test": "", "command": "", "figures": []}],
              "provenance": {"config": {"part": "zz_a", "quick": False, "device": "cpu"}, "device": "cpu"}}
    (tmp_path / "zz_a.json").write_text(json.dumps(record))
    (tmp_path / "zz_b.json").write_text('{"claims": [')  # half-written by something non-atomic
    (tmp_path / "zz_c.json").write_text('{"claims": [{"claim": "c", "verdict": "maybe", "evidence": "e"}]}')
    text = build_report(tmp_path).read_text()
    assert "| zz_a | ok | default | cpu | 1.5 s | not recorded | not recorded | 1 | [zz_a.json](zz_a.json) |" in text
    assert "| zz_a | sufficiency | **proved** | sympy closed 3 identities | — | — | — |" in text
    assert "unreadable results file zz_b.json" in text and "unreadable results file zz_c.json" in text
    (tmp_path / "REPORT.md").unlink()
    assert cli.main(["report", "--results", str(tmp_path)]) == 0
    assert (tmp_path / "REPORT.md").read_text() == text


@pytest.mark.parametrize("argv, needle", [
    (["reproduce", "--only", "proofs", "nonsense"], "unknown part(s) nonsense"),
    (["report", "--results", "/nonexistent/results"], "results folder not found"),
])
def test_bad_input_is_one_line_exit_2(argv, needle, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_results_folder_that_is_a_file_is_exit_2(tmp_path, capsys):
    (tmp_path / "results").write_text("not a folder")
    assert cli.main(["reproduce", "--device", "cpu", "--out", str(tmp_path / "results"), "--only", "proofs"]) == 2
    assert "is a file" in capsys.readouterr().err
    assert (tmp_path / "results").read_text() == "not a folder"


def test_report_on_a_folder_without_results_is_exit_2(tmp_path, capsys):
    assert cli.main(["report", "--results", str(tmp_path)]) == 2
    assert "no part results" in capsys.readouterr().err and not (tmp_path / "REPORT.md").exists()


def test_reproduce_command_runs_the_selected_parts(tmp_path, fake_parts, capsys):
    counter = fake_parts({"zz_ok": OK_PART, "zz_broken": BROKEN_PART})
    out = tmp_path / "results"
    assert cli.main(["reproduce", "--quick", "--device", "cpu", "--out", str(out), "--only", "zz_ok"]) == 0
    assert runs(counter) == ["zz_ok"] and (out / "REPORT.md").exists()
    assert "provenance" in json.loads((out / "claims.json").read_text())  # what the READMEs' tables read
    assert cli.main(["reproduce", "--device", "cpu", "--out", str(out)]) == 1  # a part failed
    assert "parts failed" in capsys.readouterr().err


def test_a_part_records_its_cpu_time_load_and_machine_and_the_report_shows_them(tmp_path, monkeypatch):
    """A part that burns CPU: its record holds wall and CPU time, the load average (start, end,
    mean) and the machine; the report's parts table and totals quote them."""
    import types

    def busy_part(results_dir, quick, device):
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return {"claims": []}

    monkeypatch.setitem(sys.modules, "empirical.pipeline.parts.zz_busy", types.SimpleNamespace(run=busy_part))
    monkeypatch.setattr(reproduce, "part_exists", lambda name: True)
    monkeypatch.setattr(reproduce, "PARTS", ("zz_busy",))
    assert reproduce.reproduce(tmp_path, quick=True, device="cpu") == {"zz_busy": "ok"}
    record = json.loads((tmp_path / "zz_busy.json").read_text())
    usage = record["usage"]
    assert 0.3 <= usage["cpu_s"] and usage["cpu_self_s"] >= 0.3 and usage["cpu_children_s"] >= 0
    assert usage["load_samples"] >= 2 and usage["load_start"] is not None and usage["load_end"] is not None
    assert min(usage["load_start"], usage["load_end"]) <= usage["load_mean"] <= max(usage["load_start"], usage["load_end"])
    assert record["machine"]["logical_cpus"] >= record["machine"]["owned_cores"] >= 1 and record["machine"]["cpu"]
    text = (tmp_path / "REPORT.md").read_text()
    assert f"| {usage['cpu_s']:.1f} s | {usage['load_mean']:.1f} ({usage['load_start']:.1f} → {usage['load_end']:.1f}) |" in text
    assert f"CPU time {usage['cpu_s']:.1f} s" in text and record["machine"]["cpu"] in text


HANDSHAKE_PART = '''
import os, time
from pathlib import Path
def run(results_dir, quick, device):
    """Writes its own marker, then waits for the other's: two of these finish only if they overlap."""
    mine, other = Path({marker!r} + ".{name}"), Path({marker!r} + ".{other}")
    mine.write_text(str(os.getpid()))
    deadline = time.monotonic() + 60  # a net only: the loop ends when the other part has started
    while not other.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("ran alone: the other part never started")
        time.sleep(0.02)
    with open({counter!r}, "a") as f:
        f.write("{name}\\n")
    return {{"claims": [{{"claim": "{name} ran", "verdict": "observed", "evidence": "pid " + str(os.getpid())}}]}}
'''

READER_PART = '''
from pathlib import Path
def run(results_dir, quick, device):
    with open({counter!r}, "a") as f:
        f.write("{name}:" + str((Path(results_dir) / "zz_side.json").exists()) + "\\n")
    return {{"claims": []}}
'''


def test_a_part_alongside_runs_in_its_own_process_beside_the_others_and_its_reader_waits(tmp_path, fake_parts,
                                                                                          monkeypatch):
    """ALONGSIDE: the handshake finishes only if zz_side and zz_serial overlap; zz_side runs in
    another process; zz_reader (AFTER zz_side) starts only once zz_side's result is written; a
    rerun reuses it, and a side part that fails is reported failed without stopping the others."""
    counter = fake_parts({"zz_serial": HANDSHAKE_PART.replace("{other}", "zz_side"),
                          "zz_side": HANDSHAKE_PART.replace("{other}", "zz_serial"), "zz_reader": READER_PART})
    monkeypatch.setattr(reproduce, "ALONGSIDE", ("zz_side",))
    monkeypatch.setattr(reproduce, "AFTER", {"zz_reader": ("zz_side",)})
    out, lines = tmp_path / "results", []
    assert reproduce.reproduce(out, quick=True, device="cpu", log=lines.append) == \
        {"zz_serial": "ok", "zz_side": "ok", "zz_reader": "ok"}
    assert sorted(runs(counter)[:2]) == ["zz_serial", "zz_side"] and runs(counter)[2] == "zz_reader:True"
    pids = {name: load_part(out, name)["claims"][0]["evidence"] for name in ("zz_serial", "zz_side")}
    assert pids["zz_serial"] == f"pid {os.getpid()}" and pids["zz_side"] != pids["zz_serial"]
    spans = {name: load_part(out, name)["span"] for name in ("zz_serial", "zz_side")}
    assert spans["zz_side"][0] < spans["zz_serial"][1] and spans["zz_serial"][0] < spans["zz_side"][1]
    assert any(line.startswith("[zz_side] ok, ran alongside the other parts (its own time: ") and " s wall, " in line
               and " s CPU" in line for line in lines)

    assert reproduce.reproduce(out, quick=True, device="cpu")["zz_side"] == "reused"
    (tmp_path / "fake_parts" / "zz_side.py").write_text(BROKEN_PART.format(name="zz_side", counter=str(counter)))
    statuses = reproduce.reproduce(out, quick=True, device="cpu", force=True)
    assert statuses["zz_side"] == "failed" and load_part(out, "zz_side")["error"] == "RuntimeError: solver exploded"


def test_the_total_wall_time_counts_overlaps_once_and_not_the_idle_time_between_sessions():
    """smt (0-100 s) beside proofs and constructions (0-50, 50-200), then a resume 1000 s later
    (training 1200-1300): 300 s of work, not the 1300 s from the first start to the last end."""
    records = [{"span": [0.0, 100.0], "wall_s": 100.0}, {"span": [0.0, 50.0], "wall_s": 50.0},
               {"span": [50.0, 200.0], "wall_s": 150.0}, {"span": [1200.0, 1300.0], "wall_s": 100.0}]
    assert reproduce.total_wall(records) == 300.0
    assert reproduce.total_wall([{"wall_s": 5.0}, {"wall_s": 7.0}]) == 12.0  # records without spans: the sum


def test_the_report_names_the_machine_once_when_a_torch_free_part_says_less_of_it(tmp_path, fake_parts):
    """The smt part never imports torch, so its record lacks torch's dispatch: the same machine,
    named once; a different machine is still named."""
    fake_parts({"zz_a": OK_PART, "zz_b": OK_PART})
    out = tmp_path / "results"
    reproduce.reproduce(out, quick=True, device="cpu")
    base = {"cpu": "AMD EPYC", "logical_cpus": 2, "owned_cores": 2, "vector": {"cpu_vector": "AVX2 (256 bit)"}}
    for name, vector in (("zz_a", {}), ("zz_b", {"torch_cpu_capability": "AVX2"})):
        record = json.loads((out / f"{name}.json").read_text())
        record["machine"] = {**base, "vector": {**base["vector"], **vector}}
        (out / f"{name}.json").write_text(json.dumps(record))
    machine = next(line for line in build_report(out).read_text().splitlines() if line.startswith("Machine: "))
    assert machine.startswith("Machine: AMD EPYC, 2 logical CPUs (2 owned), AVX2 (256 bit) (torch: AVX2). Load")
    record = json.loads((out / "zz_a.json").read_text())
    record["machine"]["cpu"] = "Intel Xeon"
    (out / "zz_a.json").write_text(json.dumps(record))
    machine = next(line for line in build_report(out).read_text().splitlines() if line.startswith("Machine: "))
    assert "AMD EPYC" in machine and "Intel Xeon" in machine

SLOW_SMT_PART = '''
import time
from pathlib import Path
def run(results_dir, quick, device):
    """Still running well after training has finished: it waits for training's marker, then 1.5 s."""
    deadline = time.monotonic() + 60  # a net only: training runs beside it
    while not Path({marker!r} + ".training").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("training never ran beside smt")
        time.sleep(0.02)
    time.sleep(1.5)
    with open({counter!r}, "a") as f:
        f.write("{name}\\n")
    return {{"claims": []}}
'''

TRAINING_PART = '''
from pathlib import Path
def run(results_dir, quick, device):
    Path({marker!r} + ".training").write_text("done")
    with open({counter!r}, "a") as f:
        f.write("{name}\\n")
    return {{"claims": []}}
'''

BEYOND_PART = READER_PART.replace("zz_side.json", "smt.json")


def test_beyond_starts_only_after_smt_has_written_its_result(tmp_path, fake_parts, monkeypatch):
    """The real PARTS, ALONGSIDE and AFTER with stand-in parts: smt runs beside the others and ends
    long after training, and beyond (its SMT column reads smt.json) starts only once smt.json exists."""
    parts = reproduce.PARTS
    assert {"smt", "training", "beyond"} <= set(parts) and "smt" in reproduce.ALONGSIDE
    sources = {"smt": SLOW_SMT_PART, "training": TRAINING_PART, "beyond": BEYOND_PART}
    counter = fake_parts({name: sources.get(name, OK_PART) for name in parts})
    monkeypatch.setattr(empirical.pipeline.parts, "__path__", [str(tmp_path / "fake_parts")])  # the stand-ins only
    for name in parts:
        monkeypatch.delitem(sys.modules, f"empirical.pipeline.parts.{name}", raising=False)
    out = tmp_path / "results"
    assert reproduce.reproduce(out, quick=True, device="cpu") == {name: "ok" for name in parts}
    order = runs(counter)
    assert "beyond:True" in order and order.index("training") < order.index("smt") < order.index("beyond:True")
    assert load_part(out, "smt")["span"][1] <= load_part(out, "beyond")["span"][0]
