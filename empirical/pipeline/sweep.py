"""Sweeps: lists of pure jobs, each result written atomically under a run id derived from its job.

A job is ``Job(fn, config, seeds)``: ``fn`` names a function by its dotted path (``"pkg.mod.func"``
or ``"pkg.mod:func"``) so that any worker, local or on a Ray cluster, can import it, and must be
one of the registered job functions ``JOB_FUNCTIONS`` (a sweep file is data, not code); ``config`` is
a frozen dataclass; ``seeds`` is a tuple of ints. The function is called as
``fn(config, seeds, device) -> dict`` and must be pure: the same job gives the same result.

The run id is ``<func>-<hash>``, where the hash is taken over the job's canonical JSON (function,
config, seeds; not the device), so it is the same on every machine and in every session. A
finished job's record ``{"run_id", "job", "result", "wall_s", "usage", "provenance"}`` (``usage``: the
job's wall and CPU time and the load while it ran, ``empirical.host.usage``) is written with
``constructions.files.write_json`` (temporary file + rename) to ``<out>/<run_id>.json`` by the
process that drives the sweep, as soon as the job finishes. Hence:

- a sweep that is killed (the driver, a worker, the machine) loses only the jobs in flight;
- rerunning the same sweep skips every job whose record is complete and matches, and runs the rest
  exactly once; a record that is unreadable or belongs to another job is run again;
- no half-written record is ever read: a crash mid-write leaves at most a hidden ``.*.tmp`` file.

Backends: ``"process"`` (default; ``concurrent.futures.ProcessPoolExecutor`` with the spawn
context, each worker limited to cores / workers torch threads; Ctrl-C or SIGTERM in the driver
drops the queued jobs and stops the running ones: their workers turn SIGTERM into ``Terminated``,
so that a job's ``finally`` blocks and the worker's atexit cleanup run), ``"ray"`` (optional extra
``.[ray]``; ``ray.init(address=$RAY_ADDRESS)`` starts a local Ray or joins a cluster with the same
code) and ``"serial"`` (in this process, for debugging and for callers that are already parallel).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import multiprocessing
import os
import signal
import sys
import time
import types
import typing
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from constructions.errors import BadInput
from constructions.files import config_from_dict, provenance, to_jsonable, write_json
from empirical.host.device import limit_threads, owned_cores
from empirical.host.signals import Terminated, stop_pool

BACKENDS = ("process", "ray", "serial")
# The job functions a sweep may call. A sweep file is data: it can only name one of these, and a
# name is checked against this table before anything is imported. The names are the ones sweep
# files and run ids have always used (the functions' module paths before empirical/ was grouped
# into rooms); each maps to where its function lives now. A job may give either form, and the
# registered name is what a job stores and hashes, so the run ids of earlier results still match.
JOB_FUNCTIONS = {
    "empirical.train:train_job": "empirical.training.train:train_job",
    "empirical.beyond:train_run": "empirical.analysis.beyond_runs:train_run",
    # the worst-case setting (empirical.pipeline.parts.t1_end_to_end)
    "empirical.worstcase:worst_case_job": "empirical.analysis.worst_case:worst_case_job",
    "empirical.sweep:_echo_job": "empirical.pipeline.sweep:_echo_job",  # test-only, documented below
}
REGISTERED_AT = {place: name for name, place in JOB_FUNCTIONS.items()}
RAY_INSTALL_HINT = "--backend ray needs the optional extra: pip install -e '.[ray]'"
# Jobs that train models: before they go to workers, the driver settles the formulation of the
# layer's products once (``empirical.training.fastest``), so every worker uses the same one.
TRAINING_JOBS = ("empirical.train:train_job", "empirical.beyond:train_run")


# ----------------------------------------------------------------------------------------
# Jobs and run ids.


def canonical_fn(fn: str) -> str:
    """``"pkg.mod.func"`` and ``"pkg.mod:func"`` both become ``"pkg.mod:func"``; a registered job
    named by where its function lives now becomes its registered name (``JOB_FUNCTIONS``)."""
    if not isinstance(fn, str) or not fn.strip():
        raise BadInput(f"job field 'fn' must be a dotted function name like 'pkg.module.func', got {fn!r}")
    module, sep, name = fn.partition(":") if ":" in fn else fn.rpartition(".")
    if not module or not name or not sep:
        raise BadInput(f"job field 'fn' must be a dotted function name like 'pkg.module.func', got {fn!r}")
    return REGISTERED_AT.get(f"{module}:{name}", f"{module}:{name}")


def resolve_fn(fn: str) -> Callable[..., dict]:
    """Import the registered job function named ``fn``; any other name is bad input."""
    canonical = canonical_fn(fn)
    if canonical not in JOB_FUNCTIONS:
        raise BadInput(f"job function {fn!r} is not a registered job; valid: "
                       f"{', '.join(f.replace(':', '.') for f in JOB_FUNCTIONS)}")
    module, _, name = JOB_FUNCTIONS[canonical].partition(":")
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise BadInput(f"job function {fn!r} cannot be imported: {e}") from None
    if not callable(target):
        raise BadInput(f"job function {fn!r} is not callable")
    return target


@dataclass(frozen=True)
class Job:
    """One pure unit of work: ``fn(config, seeds, device) -> dict``."""

    fn: str
    config: Any
    seeds: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fn", canonical_fn(self.fn))
        if not dataclasses.is_dataclass(self.config) or isinstance(self.config, type):
            raise BadInput(f"job config must be a dataclass instance, got {type(self.config).__name__}")
        if not type(self.config).__dataclass_params__.frozen:
            raise BadInput(f"job config {type(self.config).__name__} must be a frozen dataclass")
        seeds = self.seeds
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            seeds = (seeds,)
        if not isinstance(seeds, (list, tuple)) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds
        ):
            raise BadInput(f"job field 'seeds' must be a non-empty list of integers, got {self.seeds!r}")
        object.__setattr__(self, "seeds", tuple(seeds))

    def to_dict(self) -> dict[str, Any]:
        return {"fn": self.fn, "config": to_jsonable(self.config), "seeds": list(self.seeds)}

    @property
    def run_id(self) -> str:
        """Stable across machines and sessions: a hash of the canonical JSON of the job."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"{self.fn.partition(':')[2].strip('_')}-{digest}"


def build_config(cls: type, data: Any, what: str = "config") -> Any:
    """Build the (possibly nested) frozen dataclass ``cls`` from JSON data.

    Fields typed as a dataclass (or ``X | None``) are built recursively, JSON lists become tuples
    where the field is a tuple, and unknown fields are rejected (``files.config_from_dict``).
    """
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    data = dict(data)
    for name, value in data.items():
        hint = hints.get(name)
        inner = _dataclass_in(hint)
        if inner is not None and isinstance(value, dict):
            data[name] = build_config(inner, value, f"{what}.{name}")
        elif isinstance(value, list) and _is_tuple_type(hint):
            data[name] = tuple(value)
    return config_from_dict(cls, data, what)


def _options(hint: Any) -> tuple:
    """The alternatives of a union type (``X | None``), or the type itself."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def _dataclass_in(hint: Any) -> type | None:
    for option in _options(hint):
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            return option
    return None


def _is_tuple_type(hint: Any) -> bool:
    return any(option is tuple or typing.get_origin(option) is tuple for option in _options(hint))


def config_class(fn: Callable[..., Any]) -> type:
    """The config dataclass a job function declares as the annotation of its first parameter."""
    params = list(inspect.signature(fn).parameters)
    hint = typing.get_type_hints(fn).get(params[0]) if params else None
    cls = _dataclass_in(hint)
    if cls is None:
        raise BadInput(f"job function {fn.__module__}.{fn.__name__} must annotate its first parameter "
                       "with a config dataclass")
    return cls


def job_from_dict(data: Any, what: str = "job") -> Job:
    """A job from JSON ``{"fn": ..., "config": {...}, "seeds": [...]}``, fully validated."""
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object with fields fn, config, seeds; got {type(data).__name__}")
    unknown = sorted(set(data) - {"fn", "config", "seeds"})
    if unknown:
        raise BadInput(f"{what} has unknown field(s) {', '.join(unknown)}; valid: config, fn, seeds")
    if "fn" not in data:
        raise BadInput(f"{what} is missing the field 'fn'")
    fn = resolve_fn(data["fn"])
    config = build_config(config_class(fn), data.get("config", {}), f"{what}.config")
    return Job(data["fn"], config, data.get("seeds", (0,)))


def jobs_from_json(data: Any) -> list[Job]:
    """A sweep file: a JSON list of jobs. Every job is validated before any runs."""
    if not isinstance(data, list) or not data:
        raise BadInput("a sweep file must be a non-empty JSON list of jobs {fn, config, seeds}")
    return [job_from_dict(item, f"job {n}") for n, item in enumerate(data)]


# ----------------------------------------------------------------------------------------
# Records on disk.


def record_path(out_dir: Path, job: Job) -> Path:
    return Path(out_dir) / f"{job.run_id}.json"


def load_record(out_dir: Path, job: Job) -> dict | None:
    """The complete record of ``job`` under ``out_dir``, or None if it has not finished.

    Unreadable, truncated or foreign files count as not finished (the job runs again)."""
    try:
        record = json.loads(record_path(out_dir, job).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or "result" not in record or record.get("job") != job.to_dict():
        return None
    return record


def _write_record(out_dir: Path, job: Job, result: Any, wall_s: float, device: str,
                  usage: dict | None = None) -> dict:
    record = {
        "run_id": job.run_id,
        "job": job.to_dict(),
        "result": to_jsonable(result),
        "wall_s": round(wall_s, 4),
        **({"usage": usage} if usage else {}),
        "provenance": provenance(job.config, list(job.seeds), device),
    }
    write_json(record_path(out_dir, job), record)
    return record


# ----------------------------------------------------------------------------------------
# Execution.


# A pool worker's state for its SIGTERM / SIGINT handler (``_worker_init``).
_WORKER = {"stopping": False, "in_job": False}


def _worker_init(threads: int) -> None:
    """A pool worker's start: its torch threads, and SIGTERM / SIGINT handled as a stop (``_worker_stop``)."""
    limit_threads(threads)
    signal.signal(signal.SIGTERM, _worker_stop)
    signal.signal(signal.SIGINT, _worker_stop)


def _worker_stop(signum: int, frame) -> None:
    """The first signal stops the running job (it raises there: ``Terminated`` for SIGTERM, as in the
    driver), later ones are ignored while its cleanup runs; the worker starts no job after it and
    exits when the pool sends it the end (never stopped between jobs, where it uses the pool's queues)."""
    first, _WORKER["stopping"] = not _WORKER["stopping"], True
    if first and _WORKER["in_job"]:
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _execute(job: Job, device: str, threads: int | None, progress_file: str | None = None) -> tuple[Any, float, dict]:
    """Run one job (in a worker); returns its JSON-able result, wall time and usage (wall, CPU
    and load, ``empirical.host.usage``; a worker runs one job at a time, so its CPU time is the
    job's). While it runs, ``empirical.host.progress.report`` writes to ``progress_file`` (if given)."""
    if _WORKER["stopping"]:  # a job queued in a worker that was told to stop
        raise Terminated()
    _WORKER["in_job"] = True
    try:
        return _execute_job(job, device, threads, progress_file)
    finally:
        _WORKER["in_job"] = False


def _execute_job(job: Job, device: str, threads: int | None, progress_file: str | None) -> tuple[Any, float, dict]:
    from empirical.host import progress
    from empirical.host.usage import Meter

    fn = resolve_fn(job.fn)
    if threads is not None and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    start, meter = time.perf_counter(), Meter(sample=True)
    progress.set_channel(progress_file)
    try:
        result = fn(job.config, job.seeds, device)
    finally:
        progress.set_channel(None)
        used = meter.read()  # also stops its load sampler when the job raised
    if not isinstance(result, dict):
        raise TypeError(f"job function {job.fn} returned {type(result).__name__}, not a dict")
    return to_jsonable(result), time.perf_counter() - start, used


@dataclass
class SweepOutcome:
    """What a sweep did. ``records`` holds every finished job's record, run or skipped."""

    records: dict[str, dict] = field(default_factory=dict)
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


def run_sweep(
    jobs: Iterable[Job],
    out_dir: str | os.PathLike,
    backend: str = "process",
    workers: int | None = None,
    device: str = "cpu",
    on_event: Callable[[str, str, str], None] | None = None,
    on_wait: Callable[[], None] | None = None,
) -> SweepOutcome:
    """Run every job of ``jobs`` that has no complete record under ``out_dir``; see the module doc.

    ``on_event(kind, run_id, detail)`` is told of each job ("skipped", "done", "failed");
    ``on_wait()`` is called about once a second while the process backend waits for jobs; with
    it, jobs report their progress into ``out_dir/.progress/<run id>.json`` (``empirical.host.progress``).
    A failed job (an exception, or a worker that died) leaves no record and is retried on rerun.
    """
    if backend not in BACKENDS:
        raise BadInput(f"unknown sweep backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise BadInput(f"workers must be a positive integer, got {workers!r}")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInput(f"sweep output folder {out_dir} is a file, not a folder")
    notify = on_event or (lambda kind, run_id, detail: None)
    outcome = SweepOutcome()
    pending: list[Job] = []
    for job in {job.run_id: job for job in jobs}.values():  # one run per distinct job
        record = load_record(out_dir, job)
        if record is None:
            pending.append(job)
        else:
            outcome.records[job.run_id] = record
            outcome.skipped.append(job.run_id)
            notify("skipped", job.run_id, "")
    if not pending:
        return outcome

    def finished(job: Job, payload: tuple[Any, float, dict]) -> None:
        outcome.records[job.run_id] = _write_record(out_dir, job, payload[0], payload[1], device, payload[2])
        outcome.ran.append(job.run_id)
        notify("done", job.run_id, f"{payload[1]:.2f} s")

    def failed(job: Job, error: BaseException) -> None:
        message = f"{type(error).__name__}: {error}".strip().splitlines()[0]
        outcome.failed[job.run_id] = message
        notify("failed", job.run_id, message)

    if any(canonical_fn(job.fn) in TRAINING_JOBS for job in pending):
        from empirical.training.fastest import choose_for_host

        choose_for_host(device)  # exported to $SINKS_FORMULATION, which the workers inherit
    runner = {"process": _run_processes, "ray": _run_ray, "serial": _run_serial}[backend]
    runner(pending, workers, device, finished, failed, _Progress(out_dir, on_wait))
    return outcome


@dataclass
class _Progress:
    """Where a job reports its progress, and what the driver calls while it waits."""

    out_dir: Path
    on_wait: Callable[[], None] | None

    def file(self, job: Job) -> str | None:
        """The job's progress file; none when nobody watches (no ``on_wait``)."""
        from empirical.host.progress import progress_path

        return str(progress_path(self.out_dir, job.run_id)) if self.on_wait else None

    def wait(self) -> None:
        if self.on_wait is not None:
            self.on_wait()


Done = Callable[[Job, tuple[Any, float, dict]], None]
Failed = Callable[[Job, BaseException], None]


def _run_serial(jobs: Sequence[Job], workers: int | None, device: str, finished: Done, failed: Failed,
                progress: _Progress) -> None:
    for job in jobs:
        try:
            payload = _execute(job, device, None, progress.file(job))
        except Exception as e:  # a failing job must not stop the others
            failed(job, e)
        else:
            finished(job, payload)


def _run_processes(jobs: Sequence[Job], workers: int | None, device: str, finished: Done, failed: Failed,
                   progress: _Progress) -> None:
    workers = min(workers or owned_cores(), len(jobs))
    threads = max(1, owned_cores() // workers)
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init, initargs=(threads,),
    )
    try:
        futures: dict[Future, Job] = {pool.submit(_execute, job, device, threads, progress.file(job)): job
                                      for job in jobs}
        while futures:
            done, _ = wait(futures, timeout=1.0, return_when=FIRST_COMPLETED)
            progress.wait()
            for future in done:
                job = futures.pop(future)
                try:
                    payload = future.result()
                except BrokenProcessPool:
                    failed(job, RuntimeError("a worker process died; rerun the sweep to resume"))
                except Exception as e:
                    failed(job, e)
                else:
                    finished(job, payload)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: stop the running jobs too, not only the queued ones
        stop_pool(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_ray(jobs: Sequence[Job], workers: int | None, device: str, finished: Done, failed: Failed,
             progress: _Progress) -> None:
    try:
        import ray
    except ImportError:
        raise BadInput(RAY_INSTALL_HINT) from None
    started_here = not ray.is_initialized()
    # RAY_ADDRESS unset: a local Ray on this machine; set: join that cluster (same code).
    address = os.environ.get("RAY_ADDRESS")
    try:
        ray.init(address=address, ignore_reinit_error=True)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise BadInput(f"cannot start or join Ray (RAY_ADDRESS={address!r}): {e}".splitlines()[0]) from None
    try:
        remote = ray.remote(num_cpus=1)(_execute)
        queue = list(jobs)
        in_flight: dict[Any, Job] = {}
        limit = workers or len(queue)
        while queue or in_flight:
            while queue and len(in_flight) < limit:
                job = queue.pop(0)
                in_flight[remote.remote(job, device, 1)] = job
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                job = in_flight.pop(ref)
                try:
                    payload = ray.get(ref)
                except Exception as e:  # a dead worker too; RayTaskError wraps the job's own error
                    cause = getattr(e, "cause", None)
                    failed(job, cause if isinstance(cause, BaseException) else e)
                else:
                    finished(job, payload)
    finally:
        if started_here:
            ray.shutdown()


# ----------------------------------------------------------------------------------------
# A test-only job (documented so that tests and examples need no real training).


@dataclass(frozen=True)
class EchoConfig:
    """Config of ``_echo_job``, the test-only job.

    ``log``: a file to which each completed execution appends ``"<value>\\n"`` (counts executions);
    ``sleep_s``: how long the job takes; ``die_unless``: if set and that file does not exist, the
    process running the job exits abruptly (simulates a worker killed mid-sweep); ``fail``: raise.
    """

    value: int = 0
    sleep_s: float = 0.0
    log: str = ""
    die_unless: str = ""
    fail: bool = False


def _echo_job(config: EchoConfig, seeds: tuple[int, ...], device: str) -> dict:
    """Test-only job: returns its value and seeds after ``sleep_s`` seconds (see ``EchoConfig``)."""
    if config.die_unless and not Path(config.die_unless).exists():
        os._exit(3)  # no cleanup, no exception: like a worker killed by the OS
    if config.fail:
        raise ValueError(f"echo job {config.value} asked to fail")
    time.sleep(config.sleep_s)
    if config.log:
        with open(config.log, "a") as f:  # one short append: atomic enough for a counter file
            f.write(f"{config.value}\n")
    return {"value": config.value, "seeds": list(seeds), "device": device, "total": config.value + sum(seeds)}
