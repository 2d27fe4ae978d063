"""The whole run's half of the progress mechanism (``empirical.host.progress`` has the jobs' half):
what a long command (``sinks reproduce``) says while it works, so that a slow run can be told
from a hung one.

- ``Watch`` follows the run's parts (started, finished in so many seconds, reused) against a
  per-part plan of seconds and gives the whole run's ETA: each part's planned seconds times the
  pace so far (the wall seconds the parts that ran here took over their plan, pooled with the
  running parts' elapsed time where it is already past their plan), parts run alongside the
  others overlapping the serial ones, reused parts free.
- Inside a part, ``stage(label, total)`` names a stage of its work (``with progress.stage(...) as
  s: ... s.advance(note)``); outside a watched run it does nothing, so a part's code is the same
  under ``sinks reproduce`` and alone.
- Lines, the same on a terminal and in a log: a stage's first and last line always; between
  them at most one line per ``DRAW_EVERY_S`` (terminal) or ``LOG_EVERY_S`` (log) per stage; and,
  while work goes on, at least one line every ``LOG_ALIVE_S`` whatever runs (a heartbeat thread
  repeats where the run stands). A progress board (the training and beyond parts' jobs) speaks
  through the watch while it is open, with the same bounds.

Every line ends with where the whole run stands: elapsed, the parts finished and the ETA.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

from empirical.host.progress import DRAW_EVERY_S, LOG_ALIVE_S, LOG_EVERY_S, WATCHED, duration

_current: list["Watch"] = WATCHED  # where a progress board finds the run it speaks through


def current() -> "Watch | None":
    """The watch of the run in progress in this process, if any."""
    return _current[-1] if _current else None


class Stage:
    """A stage of a part's work: ``advance`` after each piece (``note``: what just finished)."""

    def __init__(self, watch: "Watch | None", label: str, total: int | None):
        self.watch, self.label, self.total, self.done, self.note = watch, label, total, 0, ""
        self.start = self.last_said = watch.clock() if watch else 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done, self.note = self.done + n, note
        if self.watch is not None:
            self.watch._update(self)

    def status(self) -> str:
        count = f" {self.done}/{self.total}" if self.total is not None else ""
        note = f" (last: {self.note})" if self.note else ""
        return f"{self.label}{count}{note}, {duration(self.watch.clock() - self.start)} in this stage"

    def __enter__(self) -> "Stage":
        if self.watch is not None:
            self.watch._enter(self)
        return self

    def __exit__(self, kind, *rest) -> None:
        if self.watch is not None:
            self.watch._exit(self, ok=kind is None)


def stage(label: str, total: int | None = None) -> Stage:
    """A stage of the watched run's current part (a no-op outside a watched run)."""
    return Stage(current(), label, total)


class Watch:
    """``plan``: part -> planned wall seconds, in run order; ``alongside``: parts that run beside
    the serial ones from the start; ``after``: part -> the alongside parts it waits for; ``say``:
    where lines go; ``live``: the lines go to a terminal (a shorter rate bound)."""

    def __init__(self, plan: dict[str, float], say: Callable[[str], None], live: bool = False,
                 alongside: Iterable[str] = (), after: dict[str, Iterable[str]] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.plan, self.out, self.live, self.clock = dict(plan), say, live, clock
        self.alongside, self.after = set(alongside), {k: tuple(v) for k, v in (after or {}).items()}
        self.start = self.last_said = clock()
        self.walls: dict[str, float | None] = {}  # finished parts: wall seconds here, None if reused
        self.running: dict[str, tuple[float, Callable[[], float | None] | None]] = {}
        self.part: str | None = None  # the serial part running now
        self.stages: list[Stage] = []
        self.boards = 0  # progress boards open: they keep the run's lines coming themselves
        self.lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the run's events ------------------------------------------------------------------

    def part_started(self, name: str, finished: Callable[[], float | None] | None = None) -> None:
        """``finished``: for a part that runs alongside, its wall seconds once it has ended, else None."""
        self.running[name] = (self.clock(), finished)
        if finished is None:
            self.part = name

    def part_ended(self, name: str, wall_s: float | None) -> None:
        """A part has finished (``wall_s`` None: reused, not run here)."""
        self.running.pop(name, None)
        self.walls[name] = wall_s
        if self.part == name:  # and a board or stage it left open (an exception) is closed with it
            self.part, self.stages, self.boards = None, [], 0

    def say(self, line: str) -> None:
        with self.lock:
            self.out(line)
            self.last_said = self.clock()

    # -- the whole run's ETA ---------------------------------------------------------------

    def _poll_alongside(self) -> None:
        for name, (_, finished) in list(self.running.items()):
            wall = finished() if finished else None
            if wall is not None:
                self.part_ended(name, wall)

    def pace(self) -> float:
        """Wall seconds here per planned second, pooled: the finished parts that ran here, and the
        running ones at their elapsed time where it is already past their plan at that pace (else
        on plan); 1 before either."""
        ran = [(w, self.plan.get(n, 0.0)) for n, w in self.walls.items() if w is not None and self.plan.get(n)]
        done = sum(p for _, p in ran)
        pace = sum(w for w, _ in ran) / done if ran and done else 1.0
        now = self.clock()
        running = [(now - began, self.plan[n]) for n, (began, _) in self.running.items() if self.plan.get(n)]
        if not running:
            return pace
        spent = sum(w for w, _ in ran) + sum(max(elapsed, p * pace) for elapsed, p in running)
        return spent / (done + sum(p for _, p in running))

    def left(self, name: str, pace: float) -> float:
        if name in self.walls:
            return 0.0
        planned = self.plan.get(name, 0.0) * pace
        if name in self.running:  # past its (raised) plan: at least a tenth more
            return max(planned - (self.clock() - self.running[name][0]), 0.1 * planned)
        return planned

    def eta(self) -> float:
        """Seconds until the whole run ends: the serial parts one after another, each alongside
        part overlapping them from the start (a part ``after`` it waits for it)."""
        pace = self.pace()
        left = {name: self.left(name, pace) for name in self.plan}
        t = 0.0
        for name in self.plan:
            if name in self.alongside:
                continue
            t = max([t] + [left[b] for b in self.after.get(name, ()) if b in left]) + left[name]
        return max([t] + [left[b] for b in self.alongside if b in left])

    def summary(self) -> str:
        """'run: 4.2 min elapsed; finished: proofs (26 s), smt (reused); ETA ~12 min for the whole run'."""
        with self.lock:
            self._poll_alongside()
            done = [f"{n} ({duration(w) if w is not None else 'reused'})" for n, w in self.walls.items()]
            pace = self.pace()
            return (f"run: {duration(self.clock() - self.start)} elapsed; "
                    f"finished {len(done)}/{len(self.plan)} parts{': ' + ', '.join(done) if done else ''}; "
                    f"ETA ~{duration(self.eta())} for the whole run (per-part budget x {pace:.1f}, the pace so far)")

    # -- stages ----------------------------------------------------------------------------

    def _prefix(self) -> str:
        return f"[{self.part}] " if self.part else ""

    def _enter(self, stage: Stage) -> None:
        self.stages.append(stage)
        total = f" ({stage.total} to do)" if stage.total is not None else ""
        self.say(f"{self._prefix()}{stage.label}{total} started; {self.summary()}")
        stage.last_said = self.clock()

    def _update(self, stage: Stage) -> None:
        every = DRAW_EVERY_S if self.live else LOG_EVERY_S
        if self.clock() - max(stage.last_said, self.last_said) >= every:  # a heartbeat line counts too
            self.say(f"{self._prefix()}{stage.status()}; {self.summary()}")
            stage.last_said = self.clock()

    def _exit(self, stage: Stage, ok: bool) -> None:
        if stage in self.stages:
            self.stages.remove(stage)
        if ok:
            count = f" ({stage.done}/{stage.total})" if stage.total is not None else ""
            self.say(f"{self._prefix()}{stage.label} done{count} in {duration(self.clock() - stage.start)}; "
                     f"{self.summary()}")

    # -- the heartbeat ---------------------------------------------------------------------

    def tick(self) -> None:
        """Say where the run stands if nothing was said for ``LOG_ALIVE_S`` (an open board says it itself)."""
        with self.lock:
            if self.boards or self.clock() - self.last_said < LOG_ALIVE_S:
                return
            where = self.stages[-1].status() if self.stages else "running"
            beside = [n for n in self.running if n != self.part]
            also = f" ({', '.join(beside)} alongside)" if beside else ""
            self.say(f"{self._prefix()}{where}{also}; {self.summary()}")

    def __enter__(self) -> "Watch":
        _current.append(self)
        self._thread = threading.Thread(target=self._beat, name="sinks-watch", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.tick()
            except Exception:  # progress is best effort: the run never depends on it
                pass

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self in _current:
            _current.remove(self)
