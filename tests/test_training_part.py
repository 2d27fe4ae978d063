"""The training part's scheduling: seed groups planned longest-first over the workers, members
identical whatever their group, and the whole part end to end at tiny caps (split groups merged,
capped members reported as not converged, mean +- std tables, resumable)."""

import dataclasses
import json

import pytest

from empirical.pipeline import reproduce

from empirical.training import seed_groups
from empirical.training import train as T
from empirical.pipeline.parts import training as part

from test_train import assert_same_numbers

SMALL = dict(d=6, L=6, eval_trigger=3, lr=3e-3, eval_sequences=20, log_every=10)


def test_plan_covers_every_seed_once_longest_first_and_splits_only_when_it_pays():
    for workers in (1, 2, 3):
        groups, makespan = seed_groups.plan(part.DEFAULT_RUNS, workers, part.expected_steps)
        for r in part.DEFAULT_RUNS:
            seeds = sorted(s for g in groups if g.run == r for s in g.seeds)
            assert seeds == list(r.seeds)
        costs = [g.cost for g in groups]
        assert costs == sorted(costs, reverse=True)
        unsplit = [seed_groups.Group(r, r.seeds, part.expected_steps(r)) for r in part.DEFAULT_RUNS]
        assert makespan <= seed_groups.schedule(unsplit, workers)[1]
        if workers == 1:
            assert len(groups) == len(part.DEFAULT_RUNS)  # one core: splitting only adds overhead
    groups, _ = seed_groups.plan(part.SPEC_RUNS, 2, part.expected_steps)  # SPEC's six: the 4 x 4 dominates
    longest = groups[0]
    assert (longest.run.kind, longest.run.layers) == ("softmax", 4) and len(longest.seeds) < 5  # split over both
    assert seed_groups.plan(part.SPEC_RUNS, 2, part.expected_steps)[0] == groups  # deterministic: same run ids


def test_split_cuts_contiguous_near_equal_groups():
    assert seed_groups.split((0, 1, 2, 3, 4), 2) == [(0, 1, 2), (3, 4)]
    assert seed_groups.split((0, 1, 2, 3, 4), 3) == [(0, 1), (2, 3), (4,)]
    assert seed_groups.split((7,), 2) == [(7,)]


def _member_view(summary, n):
    return json.loads(json.dumps([summary["members"][n], summary["patterns"]["mean"][n]]))


def test_a_member_has_the_numbers_of_the_single_run_of_its_seed_in_any_group():
    cfg = T.TrainConfig(kind="softmax", layers=2, heads=2, seeds=(0, 1, 2), max_steps=25, **SMALL)
    whole = T.train(cfg, quiet=True)
    groups = [T.train(dataclasses.replace(cfg, seeds=g), quiet=True) for g in ((0, 1), (2,))]
    merged = seed_groups.merge(groups, (0, 1, 2))
    alone = T.train(dataclasses.replace(cfg, seeds=(2,)), quiet=True)
    # Members do not interact; ensembles of different sizes may round differently in the last bit
    # (on this CPU they agree bit for bit over these steps), hence 1e-6.
    for n in range(3):
        assert_same_numbers(_member_view(merged, n), _member_view(whole, n), rel=1e-6)
    assert_same_numbers(_member_view(alone, 0), _member_view(whole, 2), rel=1e-6)
    assert_same_numbers(merged["weights"], whole["weights"], rel=1e-6)  # certify reads these
    assert [h["step"] for h in merged["history"]] == [h["step"] for h in whole["history"]]
    assert_same_numbers([h["loss"] for h in merged["history"]], [h["loss"] for h in whole["history"]], rel=1e-6)


def _untimed(part_output):
    """The part's tables without their wall-time columns (a measurement, not a result)."""
    tables = reproduce.plain(part_output)["tables"]
    keep = [[i for i, c in enumerate(t["columns"]) if c not in ("seconds", "wall s", "CPU s")] for t in tables]
    return [{**t, "rows": [[row[i] for i in k] for row in t["rows"]]} for t, k in zip(tables, keep)]


def test_training_part_end_to_end_at_tiny_caps(tmp_path, capsys):
    runs = (part.Run("softmax", 1, 1, (0, 1, 2), 30), part.Run("relu", 2, 2, (0, 1), 12))
    out = part.run(tmp_path, quick=False, device="cpu", runs=runs, workers=2, **SMALL)
    claims, tables, details = reproduce.validate_output(reproduce.plain(out))
    assert len(details["plan"]["jobs"]) >= 2
    steps_cells = [row[2] for row in tables[0]["rows"]]
    assert "not converged at the cap 30: seed(s) 0, 1, 2" in steps_cells[0]
    assert "not converged at the cap 12: seed(s) 0, 1" in steps_cells[1]
    assert "±" in tables[0]["rows"][0][4] and all("±" in row[2] for row in tables[1]["rows"])
    assert len(tables[1]["rows"]) == 1 + 4  # one head + a 2 x 2 stack
    assert {c["verdict"] for c in claims} <= {"unknown", "observed", "not met", "refuted", "verified numerically"}
    assert not any(c["verdict"] == "observed" and "1-layer" in c["claim"] for c in claims)
    assert details["runs"]["softmax-1x1"]["seeds"] == [0, 1, 2]
    log = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[training]")]
    assert log and log[-1].startswith(f"[training] {len(details['plan']['jobs'])}/{len(details['plan']['jobs'])} "
                                      "jobs finished")  # stderr is not a terminal here: plain lines
    jobs_table, after_table = tables[-2], tables[-1]  # what each job and the part's own work cost
    assert len(jobs_table["rows"]) == len(details["plan"]["jobs"])
    assert all("/" in row[2] and "/" in row[5] and "→" in row[6] for row in jobs_table["rows"])
    assert [row[0] for row in after_table["rows"]] == ["figures", "certificates", "ablations"]
    assert details["plan"]["formulation"] == {"name": "bmm", "chosen_by": "environment"}
    # A rerun reuses every job's record and gives the same part output.
    again = part.run(tmp_path, quick=False, device="cpu", runs=runs, workers=2, **SMALL)
    assert _untimed(again) == _untimed(out)
    assert not list((tmp_path / "runs" / "training" / ".progress").glob("*.json"))


def test_budget_default_is_the_full_reference():
    assert len(part.DEFAULT_RUNS) == 7  # SPEC's six and the 2 x 1 stack of question (b)
    assert all(r.seeds == (0, 1, 2, 3, 4) and r.max_steps == 50_000 for r in part.DEFAULT_RUNS)
    assert {(r.kind, r.layers, r.heads) for r in part.SPEC_RUNS} == set(part.SPEC_VALUES)
    assert part.ONE_HEAD_PER_LAYER in part.DEFAULT_RUNS and part.expected_steps(part.ONE_HEAD_PER_LAYER) < 50_000
    cfg = part.config(part.ONE_HEAD_PER_LAYER, part.SEEDS)
    assert cfg.residual and cfg.lr == 1e-4 and (cfg.layers, cfg.heads) == (2, 1)  # SPEC's multi-layer settings


def test_one_head_per_layer_setting_end_to_end_at_tiny_caps(tmp_path):
    runs = (part.Run("softmax", 2, 1, (0, 1), 12),)
    out = part.run(tmp_path, quick=False, device="cpu", runs=runs, workers=1, **SMALL)
    claims, tables, _ = reproduce.validate_output(reproduce.plain(out))
    claim = next(c for c in claims if c["claim"].startswith("Question (b)"))
    assert claim["verdict"] == "unknown"  # capped at 12 steps: unconverged members and no sink yet
    assert "L0H0:" in claim["evidence"] and "L1H0:" in claim["evidence"] and "at it" in claim["evidence"]
    assert [row[1] for row in tables[1]["rows"] if row[0] == "softmax 2x1"] == ["L0H0", "L1H0"]
    from empirical.pipeline.published.claims_results import question_b_observed
    from empirical.pipeline.published.records import Records

    details = {k: v for k, v in reproduce.plain(out).items() if k not in ("claims", "tables")}
    cell = question_b_observed(Records({"training": {"status": "ok", "claims": claims, "details": details}}))
    assert cell.startswith("unknown") and "L0H0" in cell and "L1H0" in cell and "0/2 converged" in cell, cell


def test_one_head_per_layer_claim_reads_the_sink_level():
    from empirical.training.metrics import STACK_SINK_MASS

    def stack(mass):
        head = lambda m: {"bos_nontrigger_mean": m, "bos_trigger_mean": 0.1}
        members = [{"seed": s, "steps": 100, "converged": True, "layers": [[head(mass)], [head(0.2)]]} for s in (0, 1)]
        return {"config": {"kind": "softmax", "layers": 2, "heads": 1, "seeds": [0, 1], "max_steps": 50_000},
                "members": members}

    gap = 1 - STACK_SINK_MASS
    assert part._one_head_per_layer_claim(stack(1 - 0.7 * gap), {})["verdict"] == "observed"
    assert part._one_head_per_layer_claim(stack(1 - 1.5 * gap), {})["verdict"] == "not met"


def test_relu_stack_claims_do_not_depend_on_the_2x1_stack(monkeypatch):
    """Each stack's claim comes from its own summary: the 2 x 1 stack neither hides nor gates the ReLU ones."""
    monkeypatch.setattr(part, "_relu_stack_claim", lambda s, f: ("relu", s))
    monkeypatch.setattr(part, "_one_head_per_layer_claim", lambda s, f: ("b", s))
    assert part._claims({("relu", 2, 2): 22, ("relu", 4, 4): 44}, {}) == [("relu", 22), ("relu", 44)]
    assert part._claims({("relu", 2, 2): 22, ("softmax", 2, 1): 21}, {}) == [("relu", 22), ("b", 21)]


class _Terminal:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def _board(tmp_path, stream):
    from empirical.host import progress

    jobs = [("a", "softmax 4x4 seeds 0-2", 1000, 50_000, 30.0), ("b", "relu 4x4 seeds 0-4", 500, 50_000, 20.0)]
    return progress.Board(tmp_path, jobs, 1, stream=stream)


def test_progress_board_draws_one_line_per_job_and_an_overall_eta_on_a_terminal(tmp_path):
    from constructions.files import write_json
    from empirical.host import progress

    term = _Terminal()
    board = _board(tmp_path, term)
    write_json(progress.progress_path(tmp_path, "a"), {"step": 400, "members": 3, "active": 2, "steps_per_second": 20.0})
    board.poll(force=True)
    lines = board.lines()
    assert lines[0].startswith("  softmax 4x4 seeds 0-2: step 400/50,000, 2/3 seeds active, 20 steps/s, ETA ~30 s")
    assert lines[1] == "  relu 4x4 seeds 0-4: queued"
    # one worker: 600 steps left at 20/s, then job b: planned 20 s at the measured / planned speed
    # (20 steps/s against 1000 steps planned in 30 s), i.e. 20 / (20 / (1000 / 30)) = 33 s.
    assert board.overall_eta() == pytest.approx(30 + 20 * (1000 / 30) / 20)
    assert lines[-1].startswith("training: 0/2 jobs done") and "overall ETA ~63 s" in lines[-1]
    board.event("done", "a", "51.0 s")
    assert not progress.progress_path(tmp_path, "a").exists()
    assert "softmax 4x4 seeds 0-2: done in 51 s" in term.text


def test_progress_board_logs_plain_lines_off_a_terminal(tmp_path):
    """With stderr not a terminal (nohup, CI): one plain line per finished job with
    the elapsed time and an ETA at the rate so far, at most one line per 30 s (jobs finishing in
    between wait for the next line), and a line on the running jobs after a quiet minute."""
    import io

    from constructions.files import write_json
    from empirical.host import progress

    now = [0.0]
    stream = io.StringIO()
    jobs = [("a", "softmax 4x4", 1000, 50_000, 30.0), ("b", "relu 4x4", 500, 50_000, 20.0),
            ("c", "relu 1x1", 100, 50_000, 10.0)]
    board = progress.Board(tmp_path, jobs, 1, stream=stream, clock=lambda: now[0])

    def at(t, action):
        now[0] = t
        action()
        return stream.getvalue().splitlines()

    assert at(20.0, lambda: board.poll()) == []
    lines = at(40.0, lambda: board.event("done", "a", "40.0 s"))
    # 40 s for 30 of 60 planned: 30 left at that rate is 40 s more
    assert lines == ["[training] 1/3 jobs finished (softmax 4x4 done in 40 s); 40 s elapsed; the jobs' ETA ~40 s at the rate so far"]
    assert len(at(50.0, lambda: board.event("done", "b", "10.0 s"))) == 1  # 10 s after the last line: held
    assert len(at(60.0, lambda: board.poll())) == 1
    lines = at(75.0, lambda: board.poll())
    assert lines[-1] == "[training] 2/3 jobs finished (relu 4x4 done in 10 s); 75 s elapsed; the jobs' ETA ~15 s at the rate so far"
    lines = at(80.0, lambda: board.event("done", "c", "5.0 s"))  # the last job: said at once
    assert lines[-1].startswith("[training] 3/3 jobs finished (relu 1x1 done in 5 s); 80 s elapsed; the jobs' ETA ~0 s")
    assert len(lines) == 3 and "\x1b" not in stream.getvalue()

    quiet = io.StringIO()
    board = progress.Board(tmp_path, jobs[:1], 1, stream=quiet, clock=lambda: now[0])
    write_json(progress.progress_path(tmp_path, "a"), {"step": 400, "members": 3, "active": 3, "steps_per_second": 20.0})
    at(now[0] + 59.0, lambda: board.poll())
    assert quiet.getvalue() == ""
    at(now[0] + 2.0, lambda: board.poll())
    assert quiet.getvalue() == ("[training] 0/1 jobs finished; running: softmax 4x4 at step 400/50,000; 61 s "
                                "elapsed; the jobs' ETA ~30 s from the step rates\n")


def test_the_worst_case_jobs_run_in_the_parts_own_sweep_after_its_runs(tmp_path, monkeypatch):
    """The part's own runs (here a tiny stand-in for QUICK_RUNS) and the worst-case setting's jobs
    share one sweep, the setting's last (they fill the workers' gaps): its record sits beside the
    runs' records, none under runs/worst_case, the plan and the jobs table list it, and the
    setting's claims are built from it."""
    from empirical.analysis import worst_case
    from empirical.pipeline.parts import t1_end_to_end

    tiny = worst_case.WorstCaseConfig(d=6, L=6, steps=60, refresh=30, eval_sequences=100, eval_trigger=3,
                                      reference_lr=3e-3, lr=3e-3, reference_max_steps=200)
    monkeypatch.setattr(t1_end_to_end, "default_config", lambda: tiny)
    monkeypatch.setattr(part, "QUICK_RUNS", (part.Run("relu", 1, 1, (0,), 20),))
    out = part.run(tmp_path, quick=True, device="cpu", workers=2, **SMALL)
    claims, tables, details = reproduce.validate_output(reproduce.plain(out))
    assert [j["run"] for j in details["plan"]["jobs"]] == ["relu 1x1 seeds 0", "worst-case seed 0"]
    worst_id = details["plan"]["jobs"][-1]["run_id"]
    assert (tmp_path / "runs" / "training" / f"{worst_id}.json").is_file()
    assert not (tmp_path / "runs" / "worst_case").exists()
    assert [row[0] for row in tables[-2]["rows"]] == ["relu 1x1 seeds 0", "worst-case seed 0"]
    assert details["worst_case"]["config"]["seeds"] == [0]
    assert any("T1" in c["claim"] and "worst" in c["evidence"].lower() + c["claim"].lower() for c in claims)
