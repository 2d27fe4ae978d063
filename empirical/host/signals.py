"""SIGTERM handled as Ctrl-C is, for every ``sinks`` command and the processes it starts.

``kill``, ``timeout`` and schedulers send SIGTERM, whose default action ends a Python process on
the spot: no ``finally``, no atexit, so pool workers, the multiprocessing resource tracker and
temporary build folders were left behind. Inside ``stop_signals()`` (the CLI's dispatch wraps every
command in it) SIGTERM raises ``Terminated``, a ``KeyboardInterrupt``, so every interrupt path runs
for it as for Ctrl-C; ``stopped`` prints the one line a stopped command ends with and gives its exit
status, 143 after SIGTERM and 130 after Ctrl-C, as a shell reports either signal.

A signal sent to one process reaches none of its workers (Ctrl-C from a terminal reaches the whole
process group; ``kill`` does not): ``stop_pool`` stops a process pool's workers on the way out.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (``stop_signals``)."""


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal's number: 143 after SIGTERM, 130 after Ctrl-C."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def stopped(interrupt: KeyboardInterrupt, kept: str = "") -> int:
    """Say in one line on stderr that the command was stopped (``kept``: what stays and how to
    resume); returns its exit status."""
    what = "stopped by SIGTERM" if isinstance(interrupt, Terminated) else "interrupted"
    print(f"sinks: {what}" + (f"; {kept}" if kept else ""), file=sys.stderr, flush=True)
    return exit_status(interrupt)


_CAUGHT: list[int] = []


def _raise(signum: int, frame) -> None:
    for caught in _CAUGHT:  # a repeat must not cut the cleanup short (SIGKILL still ends it)
        signal.signal(caught, _ignore)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _ignore(signum: int, frame) -> None:
    pass


@contextlib.contextmanager
def stop_signals(sigint: bool = False) -> Iterator[None]:
    """While inside, SIGTERM raises ``Terminated`` in the main thread (and, with ``sigint``, SIGINT
    raises KeyboardInterrupt); the first signal only: later ones are ignored while its cleanup
    runs. If none came, the previous handlers are back on the way out. Outside the main thread
    nothing changes (Python runs signal handlers there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = [signal.SIGTERM] + ([signal.SIGINT] if sigint else [])
    previous = {s: signal.signal(s, _raise) for s in caught}
    _CAUGHT[:] = caught
    try:
        yield
    finally:
        if all(signal.getsignal(s) is _raise for s in caught):  # no signal came
            for s, handler in previous.items():
                signal.signal(s, handler)


STOP_GRACE_S = 30.0  # how long a stopped worker's cleanup may take before it is killed


def stop_pool(pool) -> None:
    """Stop a ``concurrent.futures.ProcessPoolExecutor`` now, from an interrupt handler: queued
    tasks are dropped, the workers get SIGTERM (a worker that handles it, as a sweep's does, stops
    its task with ``Terminated``, runs its ``finally`` blocks and exits through the pool, running
    its atexit cleanup; one that does not ends at once) and a worker still running
    ``STOP_GRACE_S`` later is killed. Returns when every worker has ended; the pool is shut down."""
    workers = list((pool._processes or {}).values())  # no public handle on a pool's processes
    manager = pool._executor_manager_thread
    pool.shutdown(wait=False, cancel_futures=True)  # the workers get the end once their tasks report back
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    for worker in workers:
        if worker.is_alive():
            worker.kill()
            worker.join()
    if manager is not None:
        manager.join()
