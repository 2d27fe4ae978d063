"""Sweeps: stable run ids, atomic records, resume after a killed sweep or a dead worker, bad input.

Every job here is the test-only ``empirical.sweep._echo_job``; each completed execution appends
its value to a log file, so the tests count how often each job really ran.
"""

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from constructions.errors import BadInput
from empirical.pipeline import cli, sweep
from empirical.pipeline.sweep import EchoConfig, Job, load_record, run_sweep

ECHO = "empirical.sweep._echo_job"


def echo_jobs(n, log="", sleep_s=0.0, **extra):
    return [Job(ECHO, EchoConfig(value=v, sleep_s=sleep_s, log=str(log), **extra), (0, 1)) for v in range(n)]


def executions(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def finished_ids(jobs, out):
    return {job.run_id for job in jobs if load_record(out, job) is not None}


# ----------------------------------------------------------------------------------------
# Run ids.


def test_run_id_is_the_hash_of_the_canonical_job_json():
    job = Job(ECHO, EchoConfig(value=1), (0,))
    canonical = ('{"config":{"die_unless":"","fail":false,"log":"","sleep_s":0.0,"value":1},'
                 '"fn":"empirical.sweep:_echo_job","seeds":[0]}')
    assert job.run_id == "echo_job-" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_run_ids_are_stable_across_spellings_and_processes_and_distinct():
    job = Job(ECHO, EchoConfig(value=3, sleep_s=0.5), [4, 5])
    assert Job("empirical.sweep:_echo_job", EchoConfig(value=3, sleep_s=0.5), (4, 5)).run_id == job.run_id
    code = ("from empirical.pipeline.sweep import Job, EchoConfig; "
            "print(Job('empirical.sweep._echo_job', EchoConfig(value=3, sleep_s=0.5), (4, 5)).run_id)")
    other_process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert other_process.stdout.strip() == job.run_id  # no dependence on hash randomisation
    variants = [Job(ECHO, EchoConfig(value=v, sleep_s=s), seeds)
                for v in range(10) for s in (0.0, 0.5) for seeds in ((0,), (1,), (0, 1), (1, 0))]
    assert len({j.run_id for j in variants}) == len(variants)


# ----------------------------------------------------------------------------------------
# Records and resume.


def test_serial_sweep_writes_complete_records_and_skips_them_on_rerun(tmp_path):
    log, out = tmp_path / "log", tmp_path / "out"
    jobs = echo_jobs(4, log)
    first = run_sweep(jobs, out, backend="serial", device="cpu")
    assert sorted(first.ran) == sorted(j.run_id for j in jobs) and first.ok
    record = json.loads((out / f"{jobs[2].run_id}.json").read_text())
    assert record["result"] == {"value": 2, "seeds": [0, 1], "device": "cpu", "total": 3}
    assert record["job"] == jobs[2].to_dict()
    assert record["provenance"]["config"] == dataclasses.asdict(jobs[2].config)
    assert record["provenance"]["seed"] == [0, 1] and "python" in record["provenance"]["versions"]
    second = run_sweep(jobs + jobs[:1], out, backend="serial")  # a duplicate job runs once at most
    assert second.ran == [] and sorted(second.skipped) == sorted(first.ran)
    assert second.records == first.records
    assert sorted(executions(log)) == [0, 1, 2, 3]


def test_failing_job_leaves_no_record_and_is_retried(tmp_path):
    out = tmp_path / "out"
    good, bad = echo_jobs(1, tmp_path / "log")[0], Job(ECHO, EchoConfig(value=9, fail=True))
    outcome = run_sweep([bad, good], out, backend="serial")
    assert list(outcome.failed) == [bad.run_id] and "asked to fail" in outcome.failed[bad.run_id]
    assert outcome.ran == [good.run_id] and not (out / f"{bad.run_id}.json").exists()
    assert list(run_sweep([bad, good], out, backend="serial").failed) == [bad.run_id]  # tried again


def test_crash_in_the_middle_of_a_write_leaves_no_result(tmp_path, monkeypatch):
    log, out = tmp_path / "log", tmp_path / "out"
    job = echo_jobs(1, log)[0]

    def crash(fd):  # the data is in the temporary file, the rename has not happened
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        run_sweep([job], out, backend="serial")
    monkeypatch.undo()
    assert list(out.iterdir()) == []  # neither the record nor a temporary file
    # What a SIGKILL mid-write could leave behind: a stale temporary file and, from a writer that
    # was not atomic, a truncated record. Neither counts as a result.
    text = json.dumps({"run_id": job.run_id, "job": job.to_dict(), "result": {"value": 0}})
    (out / f".{job.run_id}.json.x1.tmp").write_text(text[: len(text) // 2])
    (out / f"{job.run_id}.json").write_text(text[: len(text) // 2])
    assert load_record(out, job) is None
    outcome = run_sweep([job], out, backend="serial")
    assert outcome.ran == [job.run_id] and load_record(out, job)["result"]["total"] == 1
    assert executions(log) == [0, 0]  # once before the crash, once on the rerun


def test_killed_sweep_resumes_without_losing_or_repeating_finished_jobs(tmp_path):
    log, out, spec = tmp_path / "log", tmp_path / "out", tmp_path / "jobs.json"
    jobs = echo_jobs(8, log, sleep_s=0.3)
    spec.write_text(json.dumps([j.to_dict() for j in jobs]))
    argv = [sys.executable, "-m", "empirical.pipeline.cli", "sweep", str(spec), "--workers", "2", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600  # a net only: the loop ends when two jobs are done
        while len(list(out.glob("*.json"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its workers, mid-sweep
        proc.communicate()
    before = finished_ids(jobs, out)
    assert 2 <= len(before) < len(jobs), "the sweep was not killed mid-way"
    runs_before = len(executions(log))

    rerun = subprocess.run(argv, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(jobs) - len(before)} ran, {len(before)} already done, 0 failed" in rerun.stdout
    assert finished_ids(jobs, out) == {j.run_id for j in jobs}  # nothing lost
    rerun_values = executions(log)[runs_before:]
    missing_values = sorted(j.config.value for j in jobs if j.run_id not in before)
    assert sorted(rerun_values) == missing_values  # exactly the unfinished jobs, each once
    for job in jobs:
        assert load_record(out, job)["result"]["value"] == job.config.value


def test_dead_worker_loses_only_its_jobs_and_the_rerun_finishes(tmp_path):
    log, out, alive = tmp_path / "log", tmp_path / "out", tmp_path / "alive"
    jobs = echo_jobs(3, log)
    dying = Job(ECHO, EchoConfig(value=7, sleep_s=0.5, log=str(log), die_unless=str(alive)))
    outcome = run_sweep(jobs + [dying], out, backend="process", workers=2)
    assert dying.run_id in outcome.failed and "worker process died" in outcome.failed[dying.run_id]
    before = finished_ids(jobs + [dying], out)
    assert dying.run_id not in before and set(outcome.ran) == before
    alive.touch()
    runs_before = len(executions(log))
    rerun = run_sweep(jobs + [dying], out, backend="serial")
    assert rerun.ok and finished_ids(jobs + [dying], out) == {j.run_id for j in jobs + [dying]}
    assert sorted(executions(log)[runs_before:]) == sorted(
        j.config.value for j in jobs + [dying] if j.run_id not in before)


def test_ray_backend_joins_the_address_in_ray_address(tmp_path, monkeypatch):
    """Against a stand-in for the ``ray`` module (the real one is an optional extra): the sweep
    calls ``ray.init(address=$RAY_ADDRESS)`` and collects results through ``ray.wait``/``ray.get``."""
    calls = {}

    class Ref:
        def __init__(self, fn, args):
            self.fn, self.args = fn, args

    fake = types.SimpleNamespace(
        is_initialized=lambda: False,
        init=lambda address=None, **kw: calls.setdefault("address", address),
        remote=lambda **opts: (lambda fn: types.SimpleNamespace(remote=lambda *args: Ref(fn, args))),
        wait=lambda refs, num_returns=1: (refs[:num_returns], refs[num_returns:]),
        get=lambda ref: ref.fn(*ref.args),
        shutdown=lambda: calls.setdefault("shutdown", True),
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    jobs = echo_jobs(3) + [Job(ECHO, EchoConfig(value=5, fail=True))]
    outcome = run_sweep(jobs, tmp_path, backend="ray", workers=2)
    assert calls == {"address": "ray://head:10001", "shutdown": True}
    assert sorted(outcome.ran) == sorted(j.run_id for j in jobs[:3]) and list(outcome.failed) == [jobs[3].run_id]


# ----------------------------------------------------------------------------------------
# Configs from JSON and bad input.


@dataclasses.dataclass(frozen=True)
class Inner:
    a: int = 1


@dataclasses.dataclass(frozen=True)
class Outer:
    inner: Inner = Inner()
    sizes: tuple[int, ...] = (1,)
    maybe: Inner | None = None


def test_nested_configs_are_built_from_json():
    built = sweep.build_config(Outer, {"inner": {"a": 2}, "sizes": [3, 4], "maybe": {"a": 5}})
    assert built == Outer(Inner(2), (3, 4), Inner(5))
    with pytest.raises(BadInput, match="config.inner has unknown field"):
        sweep.build_config(Outer, {"inner": {"b": 2}})


def sweep_cli(tmp_path, capsys, content, *extra):
    spec = tmp_path / "jobs.json"
    spec.write_text(content if isinstance(content, str) else json.dumps(content))
    rc = cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--backend", "serial", *extra])
    return rc, capsys.readouterr()


@pytest.mark.parametrize("content, needle", [
    ("[{", "malformed JSON"),
    ([], "non-empty JSON list"),
    ([{"fn": ECHO, "config": {}, "sedes": [0]}], "unknown field(s) sedes"),
    ([{"fn": ECHO, "config": {"valeu": 1}}], "unknown field(s) valeu"),
    ([{"fn": "empirical.nothing.here", "config": {}}], "not a registered job"),
    ([{"fn": "empirical.training.train.train", "config": {}}], "not a registered job"),  # importable, dataclass config
    ([{"fn": "os:system", "config": {}}], "not a registered job"),
    ([{"fn": ECHO, "config": {}, "seeds": ["a"]}], "'seeds'"),
    ([{"fn": ECHO, "config": {}}, {"config": {}}], "job 1 is missing the field 'fn'"),
])
def test_bad_sweep_file_is_one_line_exit_2_and_no_output(tmp_path, capsys, content, needle):
    rc, io = sweep_cli(tmp_path, capsys, content)
    assert rc == 2 and io.err.count("\n") == 1 and needle in io.err, io.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fn", ["empirical.pipeline.sweep.spy_job", "empirical.pipeline.sweep:spy_job",
                                "empirical.sweep:spy_job", "empirical.sweep.spy_job"])
def test_an_unregistered_function_of_a_registered_module_is_never_called(tmp_path, capsys, monkeypatch, fn):
    """The module of the registered _echo_job (by its place and by its registered name) holds another
    job-shaped function, one that would pass every later check: naming it is the one-line error and
    exit 2, not a traceback, and it is never called (the allowlist is of functions, not modules)."""
    calls = []

    def spy_job(config: EchoConfig, seeds: tuple[int, ...], device: str) -> dict:
        calls.append(config)
        return {"value": config.value}

    monkeypatch.setattr(sweep, "spy_job", spy_job, raising=False)
    rc, io = sweep_cli(tmp_path, capsys, [{"fn": fn, "config": {"value": 1}}])
    assert rc == 2 and io.err.count("\n") == 1 and "not a registered job" in io.err and "Traceback" not in io.err, io.err
    assert calls == [] and not (tmp_path / "out").exists()


def test_missing_sweep_file_and_bad_workers_are_exit_2(tmp_path, capsys):
    assert cli.main(["sweep", str(tmp_path / "none.json")]) == 2
    assert "file not found" in capsys.readouterr().err
    rc, io = sweep_cli(tmp_path, capsys, [{"fn": ECHO, "config": {}}], "--workers", "0")
    assert rc == 2 and "workers" in io.err and not (tmp_path / "out").exists()
    (tmp_path / "out").write_text("a file")
    rc, io = sweep_cli(tmp_path, capsys, [{"fn": ECHO, "config": {}}])
    assert rc == 2 and "is a file" in io.err and (tmp_path / "out").read_text() == "a file"


def test_sweep_cli_runs_and_resumes(tmp_path, capsys):
    jobs = [{"fn": ECHO, "config": {"value": v}, "seeds": [v]} for v in range(3)]
    first = sweep_cli(tmp_path, capsys, jobs)[1]
    assert first.out.startswith("3 ran, 0 already done, 0 failed")
    # stderr is not a terminal: one line per job with the count, the elapsed time and an ETA
    lines = first.err.splitlines()
    assert len(lines) == 3 and all(line.lstrip().startswith("done ") for line in lines)
    assert "[1/3, " in lines[0] and " elapsed, ETA ~" in lines[0] and lines[2].endswith("ETA ~0 s at the rate so far]")
    assert sweep_cli(tmp_path, capsys, jobs)[1].out.startswith("0 ran, 3 already done, 0 failed")


def test_ray_backend_without_ray_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, whether installed or not
    rc, io = sweep_cli(tmp_path, capsys, [{"fn": ECHO, "config": {}}], "--backend", "ray")
    assert rc == 2 and io.err.count("\n") == 1 and "pip install -e '.[ray]'" in io.err
    assert not (tmp_path / "out").exists()


def test_every_registered_job_imports_and_declares_its_config():
    for name in sweep.JOB_FUNCTIONS:
        fn = sweep.resolve_fn(name)
        assert dataclasses.is_dataclass(sweep.config_class(fn)), name
    with pytest.raises(BadInput, match="not a registered job"):
        sweep.resolve_fn("empirical.training.train:train")  # importable, not registered


def test_a_record_holds_the_jobs_wall_and_cpu_time_and_the_load(tmp_path):
    """The worker measures its own job: a sleeping job costs wall time and (almost) no CPU time."""
    jobs = echo_jobs(2, sleep_s=0.3)
    outcome = run_sweep(jobs, tmp_path, backend="process", workers=2)
    assert outcome.ok
    for job in jobs:
        record = load_record(tmp_path, job)
        usage = record["usage"]
        assert usage["wall_s"] >= 0.3 and 0 <= usage["cpu_s"] < usage["wall_s"]
        assert usage["load_start"] is not None and usage["load_end"] is not None


def test_a_registered_job_keeps_its_name_and_run_id_wherever_its_function_lives():
    """Sweep files and results folders written before empirical/ was grouped into rooms still
    mean the same jobs: a job named by its function's current place stores the registered name,
    and the run id is the one the code before the move computed (commit 8907a92, where
    ``empirical.train`` and ``empirical.sweep`` were flat modules)."""
    from empirical.training.train import TrainConfig

    by_place = Job("empirical.training.train.train_job", TrainConfig(), (0,))
    assert by_place.fn == "empirical.train:train_job"
    assert by_place.run_id == Job("empirical.train:train_job", TrainConfig(), (0,)).run_id == "train_job-9760398880c2382d"
    assert Job("empirical.pipeline.sweep:_echo_job", EchoConfig(value=3), (4, 5)).run_id == "echo_job-76bec1b06841e40f"
    for name, place in sweep.JOB_FUNCTIONS.items():
        assert sweep.resolve_fn(place) is sweep.resolve_fn(name), name
