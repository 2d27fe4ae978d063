"""Which torch device a command runs on, and how many CPU threads it uses.

``resolve_device("auto")`` picks CUDA when torch sees a GPU and the CPU otherwise; an explicit
name ("cpu", "cuda", "cuda:1", "mps") is checked, and a name torch does not know, or a device
this machine does not have, is bad input with a one-line message.

Threads: ``use_command_threads`` (called once by the CLI's dispatch, before any command runs)
gives every command one thread, or ``SINKS_THREADS`` of them, never more than the cores the
process owns, in torch and in the BLAS / OpenMP pools numpy and torch start (their environment
variables, so that worker processes inherit it too).
"""

from __future__ import annotations

import os
import sys

from constructions.errors import BadInput


def resolve_device(name: str = "auto") -> str:
    """The canonical device string for ``name`` ("auto" | "cpu" | "cuda[:n]" | "mps")."""
    import torch

    if not isinstance(name, str) or not name:
        raise BadInput(f"device must be a name such as auto, cpu or cuda, got {name!r}")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise BadInput(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BadInput(f"device {name!r} requested but torch sees no CUDA GPU on this machine")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise BadInput(f"device {name!r} requested but only {torch.cuda.device_count()} GPU(s) exist")
    elif device.type == "mps":
        if not torch.backends.mps.is_available():
            raise BadInput(f"device {name!r} requested but MPS is not available on this machine")
    elif device.type != "cpu":
        raise BadInput(f"unsupported device {name!r}; use auto, cpu, cuda or cuda:N")
    return str(device)


def owned_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without affinity masks
        return max(1, os.cpu_count() or 1)


THREADS_ENV = "SINKS_THREADS"
POOL_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def command_threads() -> int:
    """The threads a command uses: ``$SINKS_THREADS`` if set, else 1 (see ``use_training_threads``
    for why one: ``sinks certify`` took 220 s with torch's default threads against 71 s with one
    at load ~7), never more than the cores this process owns."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise BadInput(f"{THREADS_ENV} must be a positive integer (threads per command), got {text!r}")
    return min(int(text), owned_cores())


def use_command_threads() -> int:
    """Set every thread pool of this process (and of the processes it starts) to
    ``command_threads()``; returns the count."""
    n = command_threads()
    for var in POOL_ENV:  # read when numpy / torch start their pools, and inherited by children
        os.environ[var] = str(n)
    if "torch" in sys.modules:  # already started (a command run in-process, e.g. by the tests)
        sys.modules["torch"].set_num_threads(n)
    return n


def limit_threads(threads: int) -> None:
    """Worker initialiser (a sweep's or a certificate pool's processes): torch (imported later by the job) uses ``threads`` threads."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def use_training_threads() -> int:
    """One torch thread for training the task's models; returns it.

    The models are tiny (16 x 16 matrices, 16 positions), so every op is overhead-bound: a second
    intra-op thread gains little on an idle machine and, on a shared 2-core machine under load,
    made steps 5-40x slower (OpenMP threads spinning for a core; measured with
    tests/benchmarks/test_bench_train.py::_step_fn, 1 layer 3.5 vs 17.8-204 ms, 4 x 4 x 5 seeds
    120 vs 1540-1790 ms). Parallelism comes from batching seeds and from one process per run
    (``empirical.pipeline.sweep``), not from threads.
    """
    import torch

    torch.set_num_threads(1)
    return 1
