"""SIGTERM (what ``kill``, ``timeout`` and a scheduler send) stops ``sinks reproduce`` as cleanly as
Ctrl-C: exit status 143, one line saying it was stopped and that a rerun resumes, no process left
(spawn workers, the multiprocessing resource tracker, the part run alongside, coqc in its own
session), no temporary folder left, and the finished parts reused by the rerun.

Each run is a real ``sinks reproduce --quick`` in a session of its own, with ``TMPDIR`` pointed at
a fresh folder; the signal goes to the parent process only, as ``kill <pid>`` sends it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPAWNED = "multiprocessing.spawn"  # a ProcessPoolExecutor worker (spawn context)
TRACKER = "multiprocessing.resource_tracker"
PROC = Path("/proc")

pytestmark = pytest.mark.skipif(not (PROC / "self" / "stat").exists(), reason="reads processes from /proc (Linux)")


def _env(tmp: Path) -> dict[str, str]:
    """TMPDIR at ``tmp``; torch's compile cache (a cache meant to stay, kept under the temporary
    folder by default) beside it, so that ``tmp`` holds only what a run should remove."""
    return dict(os.environ, TMPDIR=str(tmp), TORCHINDUCTOR_CACHE_DIR=str(tmp.parent / "inductor"),
                PYTHONPATH=str(ROOT))


def _start(tmp_path: Path, out: Path, *parts: str) -> tuple[subprocess.Popen, Path, Path]:
    tmp, err = tmp_path / "tmp", tmp_path / f"stderr-{'-'.join(parts)}.txt"
    tmp.mkdir(exist_ok=True)
    env = _env(tmp)
    with open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "empirical.pipeline.cli", "reproduce", "--quick", "--only",
                                 *parts, "--out", str(out)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=stderr, start_new_session=True)
    return proc, tmp, err


class Proc(NamedTuple):
    """A process as /proc shows it; (pid, start) names it even after its pid is reused."""

    pid: int
    start: int
    ppid: int
    sid: int
    name: str
    cmdline: str


def _read(pid: int) -> Proc | None:
    """The live (not zombie) process ``pid``, or None."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        cmdline = (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    name, fields = stat[stat.index("(") + 1: stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return None
    return Proc(pid, int(fields[19]), int(fields[1]), int(fields[3]), name, cmdline.strip())


def _processes() -> list[Proc]:
    return [p for p in map(_read, (int(d.name) for d in PROC.iterdir() if d.name.isdigit())) if p]


def _descendants(pid: int) -> list[Proc]:
    every, found, todo = _processes(), [], [pid]
    while todo:
        parent = todo.pop()
        children = [p for p in every if p.ppid == parent]
        found += children
        todo += [p.pid for p in children]
    return found


def _alive(p: Proc) -> bool:
    now = _read(p.pid)
    return now is not None and now.start == p.start


def _in_session(sid: int) -> list[Proc]:
    return [p for p in _processes() if p.sid == sid]


def _wait_for(condition, proc: subprocess.Popen, err: Path, what: str, limit_s: float = 240.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        if proc.poll() is not None:
            pytest.fail(f"sinks ended ({proc.returncode}) before {what}:\n{err.read_text()[-2000:]}")
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"no {what} within {limit_s:.0f} s:\n{err.read_text()[-2000:]}")


def _left(sid: int, watched: list[Proc], limit_s: float, which) -> dict[int, str]:
    """The processes of the session ``sid`` or of ``watched`` that ``which`` picks and that are
    still running ``limit_s`` seconds from now (or as soon as none is)."""
    deadline = time.monotonic() + limit_s
    while True:
        running = [p for p in _in_session(sid) + [p for p in watched if _alive(p)] if which(p)]
        if not running or time.monotonic() > deadline:
            return {p.pid: p.cmdline[:120] for p in running}
        time.sleep(0.1)


def _kill_left(sid: int, watched: list[Proc]) -> None:
    """Leave nothing running, whatever the verdict: the resource tracker last, so that it can say
    what leaked once the workers holding its pipe are gone."""
    for last in (False, True):
        for p in _in_session(sid) + [p for p in watched if _alive(p)]:
            if last or TRACKER not in p.cmdline:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (_in_session(sid) or any(map(_alive, watched))):
            time.sleep(0.2)


def _terminate_and_check(proc: subprocess.Popen, tmp: Path, err: Path, out: Path) -> str:
    """SIGTERM to the parent only; every check of a clean stop; returns its stderr."""
    watched = _descendants(proc.pid)  # coqc runs in a session of its own: watched by pid
    os.kill(proc.pid, signal.SIGTERM)
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"sinks did not stop within 120 s of SIGTERM:\n{err.read_text()[-2000:]}")
    # When sinks has ended, its workers and coqc have ended too; the resource tracker ends by
    # itself once the last process holding its pipe has (a moment later).
    left = _left(proc.pid, watched, 2.0, lambda p: TRACKER not in p.cmdline)
    left |= _left(proc.pid, watched, 20.0, lambda p: True)
    _kill_left(proc.pid, watched)
    text = err.read_text()
    stopped = [line for line in text.splitlines() if line.startswith("sinks: ")]
    problems = [f"exit status {code}, not 143"] if code != 143 else []
    problems += [f"processes left: {left}"] if left else []
    problems += [f"left in TMPDIR: {sorted(p.name for p in tmp.iterdir())}"] if any(tmp.iterdir()) else []
    problems += ["a leaked semaphore warning"] if "leaked semaphore" in text else []
    problems += ["a traceback"] if "Traceback" in text else []
    if not (len(stopped) == 1 and "stopped" in stopped[0] and "rerun" in stopped[0] and str(out) in stopped[0]):
        problems.append(f"not one line saying it stopped and a rerun resumes: {stopped}")
    assert not problems, "; ".join(problems) + f"\nstderr:\n{text[-3000:]}"
    return text


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("coqc") is None or os.environ.get("SINKS_COQ", "auto").lower() in ("off", "0", "no"),
                    reason="needs coqc, and the Coq check on (SINKS_COQ)")
def test_sigterm_stops_coqc_and_removes_its_build_folder(tmp_path):
    """The proofs part compiles the Coq development in the parent process (coqc in its own
    session, under a ``sinks-coq-*`` folder); SIGTERM while coqc runs."""
    out = tmp_path / "results"
    proc, tmp, err = _start(tmp_path, out, "proofs", "smt")
    # coqc compiling in a session of its own (``proofs.coq.coqc.run_session``): no signal to the
    # run's session reaches it, only an explicit kill
    _wait_for(lambda: [p for p in _descendants(proc.pid) if p.name in ("coqc", "coqchk") and p.sid != proc.pid],
              proc, err, "coqc running in its own session")
    _terminate_and_check(proc, tmp, err, out)


@pytest.mark.slow
def test_sigterm_stops_workers_and_a_rerun_resumes(tmp_path):
    """The training part's spawn workers and the resource tracker, beside the smt part's finished
    result: SIGTERM once the workers run and smt.json is written; the rerun reuses smt."""
    out = tmp_path / "results"
    proc, tmp, err = _start(tmp_path, out, "smt", "training")

    def workers_running():
        spawned = [p for p in _descendants(proc.pid) if SPAWNED in p.cmdline]
        return spawned if spawned and (out / "smt.json").exists() else None

    _wait_for(workers_running, proc, err, "spawn worker running beside a finished smt part")
    assert any(TRACKER in p.cmdline for p in _descendants(proc.pid))
    _terminate_and_check(proc, tmp, err, out)
    assert not (out / "training.json").exists()  # the stopped part left no result
    again = subprocess.run([sys.executable, "-m", "empirical.pipeline.cli", "reproduce", "--quick", "--only", "smt",
                            "--out", str(out)], cwd=ROOT, env=_env(tmp),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "[smt] reused" in again.stderr, again.stderr[-2000:]


def test_sigterm_stops_a_sweeps_running_jobs_and_keeps_the_finished_ones(tmp_path):
    """``sinks sweep``: SIGTERM while two workers are inside 60 s jobs ends it within seconds; the
    job that had finished keeps its record."""
    out, tmp, err = tmp_path / "out", tmp_path / "tmp", tmp_path / "stderr.txt"
    tmp.mkdir()
    echo = "empirical.pipeline.sweep._echo_job"
    jobs = [{"fn": echo, "config": {"value": v, "sleep_s": s}, "seeds": [0]} for v, s in ((0, 0), (1, 60), (2, 60))]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    with open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "empirical.pipeline.cli", "sweep", str(tmp_path / "jobs.json"),
                                 "--out", str(out), "--workers", "2", "--device", "cpu"], cwd=ROOT, env=_env(tmp),
                                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    _wait_for(lambda: len(list(out.glob("echo_job-*.json"))) == 1 and
              len([p for p in _descendants(proc.pid) if SPAWNED in p.cmdline]) == 2, proc, err,
              "the short job's record beside two workers in the long jobs")
    start = time.monotonic()
    _terminate_and_check(proc, tmp, err, out)
    assert time.monotonic() - start < 30  # not the long jobs' 60 s: they were stopped
    assert [json.loads(f.read_text())["result"]["value"] for f in out.glob("echo_job-*.json")] == [0]


def test_stop_pool_ends_workers_that_do_not_handle_sigterm(tmp_path):
    """A pool whose workers keep the default SIGTERM (the certificates' pool): ``stop_pool`` ends
    their tasks at once instead of waiting for them, as a shutdown would."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from empirical.host.signals import stop_pool

    pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
    task = "import pathlib, time\npathlib.Path({!r}).touch()\ntime.sleep(60)\n"
    tasks = [pool.submit(exec, task.format(str(tmp_path / f"started-{n}")), {}) for n in range(3)]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("started-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = list(pool._processes.values())
    start = time.monotonic()
    stop_pool(pool)
    assert time.monotonic() - start < 20
    assert not any(w.is_alive() for w in workers) and all(t.done() for t in tasks)


def test_run_session_kills_its_session_when_the_wait_is_cut_short(tmp_path):
    """An interrupt (here an alarm that raises) while ``run_session`` waits kills the whole session
    it started, a grandchild too, before the interrupt goes on: no signal to the caller's session
    reaches it otherwise."""
    from proofs.coq.coqc import run_session

    pid_file = tmp_path / "pid"

    def cut(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, cut)
    signal.setitimer(signal.ITIMER_REAL, 3.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_session(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], tmp_path, time.monotonic() + 120)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    grandchild = _read(int(pid_file.read_text()))
    deadline = time.monotonic() + 5
    while grandchild is not None and _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert grandchild is None or not _alive(grandchild)
