"""Progress of long sweeps: on a terminal one line per job and an overall ETA, redrawn; in a log
(stderr not a terminal: nohup, CI, a cluster job) one plain line per finished job with the
elapsed time and an ETA at the rate so far, at most every 30 s, and a line on the running jobs
at least every minute. A whole run (``sinks reproduce``) is watched by a ``Watch``
(``empirical.host.watch``): the stages inside its parts say how far they are through
``stage(...)``, and the Board's lines end with the whole run's ETA.

Two halves that meet in files, so that they work across worker processes without any pipe:

- in a worker, ``empirical.pipeline.sweep`` points ``channel`` at ``<sweep out>/.progress/<run id>.json``
  before it calls the job, and ``report(...)`` (called by ``empirical.training.train`` as it trains)
  rewrites that small file atomically at most once a second;
- in the driver, ``Board`` reads those files while it waits for jobs and redraws one line per
  job (queued, running with step / active seeds / steps per second / ETA, done) and an overall
  ETA: each running job's remaining steps (to its expected steps) at its measured rate, and the
  queued jobs' expected steps at the rate measured for the same run (or the planner's cost model
  scaled by the rates measured so far), laid out longest-first over the workers.

In a log nothing is redrawn: finished jobs are said in plain lines (those that finish within 30 s
of the last line wait for the next one), with an ETA that assumes the rate so far holds: the
elapsed time times the planned cost still to run over the planned cost run. The progress files
are removed once their job has finished.
"""

from __future__ import annotations

import heapq
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

PROGRESS_DIR = ".progress"
REPORT_EVERY_S = 1.0
DRAW_EVERY_S = 2.0
LOG_EVERY_S = 30.0  # a log without a terminal: at most one line per 30 s ...
LOG_ALIVE_S = 60.0  # ... and at least one per minute while work goes on

_channel: dict[str, Any] = {"path": None, "last": 0.0}
WATCHED: list = []  # the watched run in progress in this process (``empirical.host.watch``), if any


def set_channel(path: str | os.PathLike | None) -> None:
    """Where ``report`` writes in this process (None: nowhere)."""
    _channel.update(path=Path(path) if path else None, last=0.0)


def report(force: bool = False, **fields: Any) -> None:
    """Write ``fields`` (JSON-able) to this process's channel, at most once a second."""
    path = _channel["path"]
    now = time.monotonic()
    if path is None or (not force and now - _channel["last"] < REPORT_EVERY_S):
        return
    _channel["last"] = now
    from constructions.files import write_json

    try:
        write_json(path, {**fields, "time": time.time()})
    except OSError:  # progress is best effort; the job's result never depends on it
        pass


def progress_path(out_dir: str | os.PathLike, run_id: str) -> Path:
    return Path(out_dir) / PROGRESS_DIR / f"{run_id}.json"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class _Job:
    run_id: str
    label: str
    expected_steps: int
    cap: int
    cost_s: float  # the planner's estimate (relative costs only)
    state: str = "queued"
    info: dict = field(default_factory=dict)
    started: float | None = None
    wall_s: float | None = None


class Board:
    """One line per job and an overall ETA on stderr, if stderr is a terminal.

    ``jobs``: (run_id, label, expected_steps, cap, planned cost in seconds) in the order they
    are submitted; ``workers``: how many run at once."""

    def __init__(self, out_dir: str | os.PathLike, jobs: list[tuple], workers: int, stream: TextIO | None = None,
                 title: str = "training", clock=time.monotonic):
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.out_dir, self.workers, self.title = Path(out_dir), max(1, workers), title
        self.jobs = {j[0]: _Job(*j) for j in jobs}
        self.drawn_lines, self.last_draw = 0, 0.0
        self.clock = clock
        self.start = self.last_said = clock()
        self.unsaid: list[str] = []  # jobs finished since the last log line
        self.run = WATCHED[-1] if WATCHED else None  # the run's ``empirical.host.watch.Watch``
        if self.run is not None:  # while open, the board keeps the run's lines coming itself
            self.run.boards += 1

    # -- events from the sweep driver --------------------------------------------------

    def event(self, kind: str, run_id: str, detail: str) -> None:
        job = self.jobs.get(run_id)
        if job is None:
            return
        job.state = {"skipped": "done (reused)", "done": "done", "failed": "failed"}.get(kind, kind)
        if kind == "done":
            job.wall_s = float(detail.split()[0]) if detail else None
        if kind in ("done", "failed"):
            self.unsaid.append(f"{job.label} {job.state}" + (f" in {duration(job.wall_s)}" if job.wall_s else ""))
        progress_path(self.out_dir, run_id).unlink(missing_ok=True)
        self.poll(force=True)

    def poll(self, force: bool = False) -> None:
        if not self.live:
            self._read_progress()
            self._log()
            return
        if not force and time.monotonic() - self.last_draw < DRAW_EVERY_S:
            return
        self._read_progress()
        self._draw()

    def _read_progress(self) -> None:
        for job in self.jobs.values():
            if job.state in ("queued", "running"):
                info = _read(progress_path(self.out_dir, job.run_id))
                if info:
                    job.state, job.info = "running", info

    def close(self) -> None:
        if self.live:
            self._draw()
        elif self.unsaid:
            self._say(self.log_line())
        if self.run is not None:
            self.run.boards, self.run = max(0, self.run.boards - 1), None

    # -- estimates ------------------------------------------------------------------------

    def _rate_scale(self) -> float | None:
        """Measured / planned speed over the running jobs (the cost model's absolute scale)."""
        ratios = [(j.cost_s / j.expected_steps) * j.info["steps_per_second"]
                  for j in self.jobs.values() if j.state == "running" and j.info.get("steps_per_second")]
        return sum(ratios) / len(ratios) if ratios else None

    def remaining(self, job: _Job, scale: float | None) -> float | None:
        """Seconds this job still needs, if it stops near its expected steps."""
        if job.state.startswith("done") or job.state == "failed":
            return 0.0
        if job.state == "running" and job.info.get("steps_per_second"):
            left = max(job.expected_steps - job.info.get("step", 0), 0)
            return left / job.info["steps_per_second"]
        return job.cost_s / scale if scale else None

    def overall_eta(self) -> float | None:
        scale = self._rate_scale()
        left = [self.remaining(j, scale) for j in self.jobs.values()]
        if any(x is None for x in left):
            return None
        running = sorted(x for j, x in zip(self.jobs.values(), left) if j.state == "running")
        queued = [x for j, x in zip(self.jobs.values(), left) if j.state == "queued"]
        loads = (running + [0.0] * self.workers)[:self.workers]
        heapq.heapify(loads)
        for x in queued:  # submitted longest first, taken by the first free worker
            heapq.heappush(loads, heapq.heappop(loads) + x)
        return max(loads) if loads else 0.0

    def steady_eta(self) -> float | None:
        """Seconds left if the rate so far holds: elapsed x (planned cost left / planned cost run
        here); None before a job has finished here (reused jobs are not part of the rate)."""
        ran = sum(j.cost_s for j in self.jobs.values() if j.state in ("done", "failed"))
        left = sum(j.cost_s for j in self.jobs.values() if j.state in ("queued", "running"))
        return (self.clock() - self.start) * left / ran if ran else None

    # -- a log without a terminal ---------------------------------------------------------

    def log_line(self) -> str:
        done = sum(j.state.startswith("done") or j.state == "failed" for j in self.jobs.values())
        finished = f" ({'; '.join(self.unsaid)})" if self.unsaid else ""
        running = [f"{j.label} at step {j.info.get('step', 0):,}/{j.cap:,}" for j in self.jobs.values()
                   if j.state == "running" and j.info]
        eta, by_steps = self.steady_eta(), self.overall_eta()
        if eta is not None:
            when = f"the jobs' ETA ~{duration(eta)} at the rate so far"
        else:  # nothing finished yet: the running jobs' step rates, if they have reported
            when = (f"the jobs' ETA ~{duration(by_steps)} from the step rates" if by_steps is not None
                    else "the jobs' ETA not known yet")
        return (f"[{self.title}] {done}/{len(self.jobs)} jobs finished{finished}; "
                + (f"running: {', '.join(running)}; " if running and not self.unsaid else "")
                + f"{duration(self.clock() - self.start)} elapsed; {when}")

    def _log(self) -> None:
        quiet_for = self.clock() - self.last_said
        all_done = all(j.state not in ("queued", "running") for j in self.jobs.values())
        if (self.unsaid and (quiet_for >= LOG_EVERY_S or all_done)) or quiet_for >= LOG_ALIVE_S:
            self._say(self.log_line())

    def _say(self, line: str) -> None:
        run = self.run
        if run is not None:  # one voice for the whole run: its lines, its ETA, its quiet-time count
            run.say(f"{line}; {run.summary()}")
        else:
            self.stream.write(line + "\n")
            self.stream.flush()
        self.unsaid, self.last_said = [], self.clock()

    # -- drawing --------------------------------------------------------------------------

    def lines(self) -> list[str]:
        scale = self._rate_scale()
        out = []
        for job in self.jobs.values():
            if job.state == "running" and job.info:
                i = job.info
                eta = self.remaining(job, scale)
                past = i.get("step", 0) >= job.expected_steps
                out.append(f"  {job.label}: step {i.get('step', 0):,}/{job.cap:,}, {i.get('active', '?')}/"
                           f"{i.get('members', '?')} seeds active, {i.get('steps_per_second', 0):.0f} steps/s, "
                           + ("past the expected steps" if past else f"ETA ~{duration(eta)}"))
            elif job.state == "done":
                out.append(f"  {job.label}: done" + (f" in {duration(job.wall_s)}" if job.wall_s else ""))
            else:
                out.append(f"  {job.label}: {job.state}")
        done = sum(j.state.startswith("done") for j in self.jobs.values())
        out.append(f"{self.title}: {done}/{len(self.jobs)} jobs done, {duration(time.monotonic() - self.start)} "
                   f"so far, overall ETA ~{duration(self.overall_eta())} (measured step rates, SPEC's step counts)")
        return out

    def _draw(self) -> None:
        lines = self.lines()
        up = f"\x1b[{self.drawn_lines}F" if self.drawn_lines else ""
        self.stream.write(up + "".join(f"\x1b[2K{line}\n" for line in lines))
        self.stream.flush()
        self.drawn_lines, self.last_draw = len(lines), time.monotonic()


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
