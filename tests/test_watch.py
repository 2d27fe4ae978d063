"""The whole run's progress (``empirical.host.watch``): a stage's lines in a log come at a bounded
rate and never stop for longer than the bound while work goes on; every line carries the whole
run's ETA from the per-part budget and the pace so far; a progress board speaks through the run.
Time is a fake clock moved by hand: nothing here waits on the wall clock."""

from __future__ import annotations

import pytest

from empirical.host import progress, watch

from test_reproduce import fake_parts  # noqa: F401 (a fixture)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _run(plan, clock, live=False, **kw):
    """A watch whose lines are (time, line) pairs; the heartbeat is driven by hand (``tick``)."""
    said: list[tuple[float, str]] = []
    return watch.Watch(plan, lambda line: said.append((clock(), line)), live=live, clock=clock, **kw), said


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:])]


@pytest.mark.parametrize("every_s", [1.0, 7.0, 200.0])  # many quick pieces, some, one long piece at a time
def test_a_stage_in_a_log_is_rate_bounded_and_never_silent_beyond_the_bound(every_s):
    clock = Clock()
    run, said = _run({"zz": 100.0}, clock)
    run.part_started("zz")
    with watch.Stage(run, "certificates", 10_000) as stage:
        next_piece = every_s
        while clock.now < 900.0:  # the heartbeat runs once a second, as the watch's thread does
            clock.now += 1.0
            if clock.now >= next_piece:
                stage.advance(note="a head")
                next_piece += every_s
            run.tick()
    times = [t for t, _ in said]
    inner = [t for t, line in said[1:-1]]  # between the stage's first and last line
    assert min(_gaps(inner)) >= progress.LOG_EVERY_S  # at most one line per 30 s
    assert max(_gaps(times)) <= progress.LOG_ALIVE_S  # at least one per minute
    assert said[0][1].startswith("[zz] certificates (10000 to do) started; run: 0 s elapsed")
    assert said[-1][1].startswith("[zz] certificates done (") and "in 15.0 min" in said[-1][1]
    assert all("ETA ~" in line and "for the whole run" in line for _, line in said)


def test_on_a_terminal_updates_come_faster_and_the_heartbeat_stays():
    clock = Clock()
    run, said = _run({"zz": 100.0}, clock, live=True)
    run.part_started("zz")
    with watch.Stage(run, "exact checks", 100) as stage:
        for _ in range(20):
            clock.now += 1.0
            stage.advance()
    assert 9 <= len(said) - 2 <= 10  # one update per 2 s
    clock.now += progress.LOG_ALIVE_S
    run.tick()
    assert said[-1][1].startswith("[zz] running; run: ")  # the stage has ended: the part still runs


def test_without_a_watched_run_a_stage_does_nothing():
    assert watch.current() is None
    with watch.stage("anything", 3) as stage:
        stage.advance(note="x")
    assert stage.done == 1


def test_the_whole_runs_eta_follows_the_budget_the_pace_and_the_parts_alongside():
    clock = Clock()
    plan = {"proofs": 20.0, "constructions": 100.0, "smt": 400.0, "training": 900.0, "beyond": 80.0}
    run, _ = _run(plan, clock, alongside=("smt",), after={"beyond": ("smt",)})
    # nothing ran yet: the plan itself, smt beside proofs + constructions + training
    assert run.eta() == pytest.approx(20 + 100 + 900 + 80)
    run.part_started("smt", finished=lambda: None)
    run.part_started("proofs")
    clock.now = 40.0  # proofs at twice its plan, smt (40 of 400 s) taken as on plan: pooled
    assert run.pace() == pytest.approx((40 + 400) / (20 + 400))
    run.part_ended("proofs", 40.0)
    assert run.pace() == pytest.approx(2.0)  # proofs alone has finished: twice the plan
    assert run.eta() == pytest.approx(2 * (100 + 900 + 80))
    run.part_started("constructions")
    clock.now = 40.0 + 100.0  # constructions at its plan: pace (40 + 100) / 120
    run.part_ended("constructions", 100.0)
    assert run.pace() == pytest.approx(140.0 / 120.0)
    run.part_ended("smt", 300.0)  # ran alongside: counts in the pace, no longer in the ETA
    pace = 440.0 / 520.0
    assert run.eta() == pytest.approx(pace * (900 + 80))
    run.walls["training"] = None  # a reused part costs nothing
    assert run.eta() == pytest.approx(run.pace() * 80)
    assert "finished 4/5 parts: proofs (40 s), constructions (1.7 min), smt (5.0 min), training (reused)" in run.summary()


def test_a_part_past_its_plan_still_has_time_left():
    clock = Clock()
    run, _ = _run({"training": 100.0, "beyond": 10.0}, clock)
    run.part_started("training")
    clock.now = 300.0
    # three times its plan: the pace is 3, at least a tenth of its raised plan is left, then beyond
    assert run.eta() == pytest.approx(0.1 * 300 + 30)


def test_a_board_speaks_through_the_run_and_keeps_its_heartbeat_quiet(tmp_path):
    clock = Clock()
    run, said = _run({"training": 100.0}, clock)
    watch._current.append(run)
    try:
        run.part_started("training")
        board = progress.Board(tmp_path, [("a", "softmax 1x1", 100, 1000, 10.0)], 1, stream=None, clock=clock)
        clock.now = 200.0
        run.tick()
        assert said == []  # the open board says it itself ...
        board.poll()
        assert said[-1][1].startswith("[training] 0/1 jobs finished; ") and "the jobs' ETA" in said[-1][1]
        assert "for the whole run" in said[-1][1]
        board.event("done", "a", "10.0 s")
        board.close()
        clock.now = 200.0 + progress.LOG_ALIVE_S
        run.tick()
        assert said[-1][1].startswith("[training] running; run: ")  # ... and once it closed, the run does
    finally:
        watch._current.remove(run)


STAGED_PART = '''
from empirical.host import watch
def run(results_dir, quick, device):
    with watch.stage("pieces", 2) as stage:
        stage.advance(note="one")
        stage.advance(note="two")
    return {{"claims": [{{"claim": "c", "verdict": "observed", "evidence": "e"}}]}}
'''


def test_reproduce_says_each_parts_stages_and_the_whole_runs_eta(tmp_path, fake_parts, monkeypatch):
    from empirical.pipeline import reproduce

    fake_parts({"zz_staged": STAGED_PART, "zz_after": STAGED_PART})
    monkeypatch.setattr(reproduce, "BUDGET_S", {True: {"zz_staged": 10.0, "zz_after": 30.0}})
    lines: list[str] = []
    reproduce.reproduce(tmp_path / "results", quick=True, device="cpu", log=lines.append)
    assert lines[0].startswith("[zz_staged] running (quick, cpu); run: ") and "finished 0/2 parts; ETA ~" in lines[0]
    assert lines[1].startswith("[zz_staged] pieces (2 to do) started; run: ")
    assert lines[2].startswith("[zz_staged] pieces done (2/2) in ")
    assert lines[3].startswith("[zz_staged] ok (") and "finished 1/2 parts: zz_staged (" in lines[3]
    assert "finished 2/2 parts" in lines[-2] and "ETA ~0 s for the whole run" in lines[-2]
    assert lines[-1].startswith("report: ") and watch.current() is None
