"""What a piece of work cost: wall time, CPU time and the machine's load while it ran.

Wall time alone says little on a shared machine: the full ``sinks reproduce`` took 17 minutes on
an idle 2-core machine and 92 minutes on the same kind of machine at load 3-8. CPU time (user +
system, of this process and of the worker processes it waited for) barely moves with the load, so
a record that holds both, with the load average beside them, lets a reader plan a run elsewhere.

``Meter()`` starts measuring; ``meter.read()`` returns a JSON-able dict::

    {"wall_s", "cpu_s", "cpu_self_s", "cpu_children_s", "load_start", "load_end", "load_mean",
     "load_samples"}

- ``cpu_self_s``: ``time.process_time()`` of this process (every thread);
- ``cpu_children_s``: user + system time of child processes that ended and were waited for
  while the meter ran (``resource.RUSAGE_CHILDREN``: the sweep's worker processes, once the pool
  is shut down; Ray workers are not children and are not counted);
- ``load_*``: the 1-minute load average of the machine (all its processes, this run's included)
  at the start, at the end, and averaged over samples taken every ``LOAD_EVERY_S`` seconds by a
  daemon thread (only when ``sample=True``: long parts and jobs).

``machine()`` describes the host (CPU model, logical CPUs, cores this process owns, the widest
vector instructions the CPU has and the ones torch and the compiled kernels were told to use) for
the records that quote timings: the same code is 1.3-1.6x slower on an AVX2-only host than with
AVX-512, so a figure without its vector width cannot be compared across machines.
"""

from __future__ import annotations

import os
import platform
import threading
import time
from typing import Any

from constructions.native import cpu_model  # noqa: F401  (the host's CPU, in every timing record)
from constructions.native import vector_width as vector_width_name
from constructions.native import widest_vector

LOAD_EVERY_S = 10.0


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # pragma: no cover - platforms without getloadavg
        return None


def _children_cpu() -> float:
    try:
        import resource
    except ImportError:  # pragma: no cover - platforms without resource
        return 0.0
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _sample_load(stop: threading.Event, samples: list[float]) -> None:
    while not stop.wait(LOAD_EVERY_S):
        value = load_average()
        if value is not None:
            samples.append(value)


class Meter:
    """Wall, CPU and load from construction to ``read()`` (which may be called more than once).
    The sampling thread stops at ``read()`` or when the meter is dropped (a run that raised)."""

    def __init__(self, sample: bool = False):
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        self._children = _children_cpu()
        self._load_start = load_average()
        self._samples: list[float] = []
        self._stop = threading.Event()
        self._thread = None
        if sample and self._load_start is not None:  # the thread holds the list and event, not the meter
            self._thread = threading.Thread(target=_sample_load, args=(self._stop, self._samples),
                                            name="load-sampler", daemon=True)
            self._thread.start()

    def __del__(self):
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()

    def read(self, stop: bool = True) -> dict[str, Any]:
        if stop and self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        cpu_self = time.process_time() - self._cpu
        cpu_children = _children_cpu() - self._children
        end = load_average()
        loads = [v for v in (self._load_start, *self._samples, end) if v is not None]
        return {
            "wall_s": round(time.perf_counter() - self._wall, 3),
            "cpu_s": round(cpu_self + cpu_children, 3),
            "cpu_self_s": round(cpu_self, 3),
            "cpu_children_s": round(cpu_children, 3),
            "load_start": self._load_start,
            "load_end": end,
            "load_mean": round(sum(loads) / len(loads), 2) if loads else None,
            "load_samples": len(loads),
        }


def vector_width() -> dict[str, Any]:
    """The CPU's vector width and what this process was told to use of it: torch's dispatch
    (``ATEN_CPU_CAPABILITY``, read from torch only when torch is already imported, so that the
    torch-free commands stay torch-free), MKL's (``MKL_ENABLE_INSTRUCTIONS``) and the compiled
    kernels' extra flags (``SINKS_KERNEL_FLAGS``)."""
    import sys

    torch = sys.modules.get("torch")
    capability = None
    if torch is not None:
        try:
            capability = torch.backends.cpu.get_cpu_capability()
        except Exception:  # an old or stripped torch build: say nothing rather than guess
            capability = None
    widest = widest_vector()
    return {"cpu_vector": vector_width_name(), "cpu_vector_bits": widest[1] if widest else None,
            "torch_cpu_capability": capability,
            "mkl_instructions": os.environ.get("MKL_ENABLE_INSTRUCTIONS"),
            "kernel_flags": os.environ.get("SINKS_KERNEL_FLAGS")}


def machine() -> dict[str, Any]:
    """The host a timing was taken on."""
    from empirical.host.device import owned_cores

    return {"cpu": cpu_model(), "logical_cpus": os.cpu_count(), "owned_cores": owned_cores(),
            "platform": platform.platform(), "vector": vector_width()}


def describe_machine(host: dict[str, Any]) -> str:
    """One line: 'AMD EPYC, 2 logical CPUs (2 owned), AVX-512 (512 bit) (torch: AVX512)'; a record
    written before the vector width was kept says 'vector width unknown'."""
    vector = host.get("vector") or {}
    line = f"{host.get('cpu', '?')}, {host.get('logical_cpus', '?')} logical CPUs ({host.get('owned_cores', '?')} owned)"
    line += f", {vector['cpu_vector']}" if vector.get("cpu_vector", "unknown") != "unknown" else ", vector width unknown"
    told = [f"torch: {vector['torch_cpu_capability']}"] if vector.get("torch_cpu_capability") else []
    told += [f"MKL: {vector['mkl_instructions']}"] if vector.get("mkl_instructions") else []
    told += [f"kernel flags: {vector['kernel_flags']}"] if vector.get("kernel_flags") else []
    return line + (f" ({', '.join(told)})" if told else "")


def describe(usage: dict[str, Any]) -> str:
    """One line for logs and reports: '12.3 s wall, 20.1 s CPU, load 3.1 (start 2.0, end 4.2)'."""
    load = ""
    if usage.get("load_mean") is not None:
        load = f", load {usage['load_mean']:.1f} (start {usage['load_start']:.1f}, end {usage['load_end']:.1f})"
    return f"{usage['wall_s']:.1f} s wall, {usage['cpu_s']:.1f} s CPU{load}"


class Split:
    """Wall and CPU seconds of named phases of one process's work, accumulated over calls:
    ``with split.phase("bound"): ...``; ``split.read()`` -> {phase: {"wall_s", "cpu_s"}}. The CPU
    time includes the child processes a phase started and waited for (its process pools)."""

    def __init__(self):
        self.totals: dict[str, list[float]] = {}

    def phase(self, name: str) -> "_Phase":
        return _Phase(self.totals.setdefault(name, [0.0, 0.0]))

    def read(self) -> dict[str, dict[str, float]]:
        return {name: {"wall_s": round(w, 3), "cpu_s": round(c, 3)} for name, (w, c) in self.totals.items()}


class _Phase:
    def __init__(self, total: list[float]):
        self.total = total

    def __enter__(self) -> "_Phase":
        self.wall, self.cpu = time.perf_counter(), time.process_time() + _children_cpu()
        return self

    def __exit__(self, *exc) -> None:
        self.total[0] += time.perf_counter() - self.wall
        self.total[1] += time.process_time() + _children_cpu() - self.cpu


def jobs_table(jobs: list[tuple[str, dict]], title: str) -> dict:
    """A report table of what each sweep job cost: ``jobs`` is [(label, sweep record)]. A record's
    ``usage`` gives the job's wall / CPU time and load; a training result's ``timing.split`` the
    training steps against what ran after them (history points, evaluation with the bound's QPs,
    weights). Records written before these were kept say "not recorded"."""
    rows = []
    for label, record in jobs:
        usage = record.get("usage") or {}
        timing = (record.get("result") or {}).get("timing") or {}
        split = timing.get("split") or {}
        train = split.get("training")
        after = [split[k] for k in ("history", "evaluation", "weights") if k in split]
        rows.append([
            label,
            timing.get("ensemble_steps", "—"),
            f"{train['wall_s']:.1f} / {train['cpu_s']:.1f}" if train else "not recorded",
            (f"{sum(v['wall_s'] for v in after):.1f} / {sum(v['cpu_s'] for v in after):.1f}" if after else "not recorded"),
            f"{split['bound']['cpu_s']:.1f}" if "bound" in split else "—",
            f"{usage['wall_s']:.1f} / {usage['cpu_s']:.1f}" if usage else f"{record.get('wall_s', 0):.1f} / not recorded",
            f"{usage['load_mean']:.1f} ({usage['load_start']:.1f} → {usage['load_end']:.1f})"
            if usage.get("load_mean") is not None else "not recorded",
        ])
    return {
        "title": title,
        "columns": ["job", "ensemble steps", "training steps: wall / CPU s", "after training: wall / CPU s",
                    "of which the bound's QPs: CPU s", "job: wall / CPU s", "load: mean (start → end)"],
        "rows": rows,
        "note": "One worker process and one torch thread per job, so a job's CPU time is its own. After training: "
                "history points, the float64 evaluation (metrics and the certified bound's QPs) and the stored weights. "
                "Load: the machine's 1-minute load average while the job ran (every process counted). A job reused "
                "from an earlier run shows the figures of the run that made it.",
    }


def phases_table(split: dict[str, dict[str, float]], title: str) -> dict:
    """A report table of ``Split.read()``: one row per phase, wall and CPU seconds."""
    return {"title": title, "columns": ["phase", "wall s", "CPU s"],
            "rows": [[name, f"{v['wall_s']:.1f}", f"{v['cpu_s']:.1f}"] for name, v in split.items()],
            "note": "Run in the part's own process after every job has finished (this run's figures; "
                    "nothing here is reused from an earlier run)."}
