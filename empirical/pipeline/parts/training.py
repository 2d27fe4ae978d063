"""The ``training`` part of ``sinks reproduce``: the six reference runs of constructions/SPEC.md section 4 (1 layer,
2 x 2, 4 x 4; softmax and ReLU), their sink metrics over seeds, certified bounds and figures, and
the softmax 2 x 1 stack of question (b) (two layers, one head each).

Budgets: the default is the full reference: every one of the six settings and the 2 x 1 stack on
5 seeds (0-4), cap 50,000 steps, SPEC's multi-layer settings, every member to the stop rule; a
member that reaches the cap is reported as not converged (its metrics at the cap), never hidden.
Quick mode trains only the single-layer runs (2 seeds).

Scheduling (``empirical.training.seed_groups``): each run is cut into seed groups and the (run, seed
group) jobs are scheduled longest-first over the cores this process owns, one worker process
and one torch thread per core; a long run's seeds are split over workers when that finishes
sooner. A member's numbers do not depend on its group. Every job is a sweep job
(``empirical.train:train_job``; record under ``results/runs/training/<run id>.json``, written
atomically), so an interrupted part resumes job by job. On a terminal the part shows one
progress line per job and an overall ETA; in a log (no terminal) one plain line per finished job
with the elapsed time and an ETA, at most every 30 s (``empirical.host.progress``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEST = "tests/test_train.py"
JOB_FN = "empirical.train:train_job"

# constructions/SPEC.md section 4, as reported there (steps to stop, BOS mass at non-trigger queries).
SPEC_VALUES = {
    ("softmax", 1, 1): ("~900", "0.9998"),
    ("relu", 1, 1): ("~700", "0 exactly"),
    ("softmax", 2, 2): ("~12,000", "0.95 - 0.9996 in all 4 heads"),
    ("relu", 2, 2): ("~13,000", "0 in all heads"),
    ("softmax", 4, 4): ("~22,000", "> 0.94 in 8 of 16 heads, 0.15 - 0.52 in the others"),
    ("relu", 4, 4): ("~7,000", "<= 0.002 in all heads"),
}
SPEC_STEPS = {key: int(steps.strip("~").replace(",", "")) for key, (steps, _) in SPEC_VALUES.items()}


@dataclass(frozen=True)
class Run:
    kind: str
    layers: int
    heads: int
    seeds: tuple[int, ...]
    max_steps: int


SEEDS = (0, 1, 2, 3, 4)
CAP = 50_000  # constructions/SPEC.md section 4
SPEC_RUNS = tuple(Run(kind, layers, layers, SEEDS, CAP) for layers in (4, 2, 1) for kind in ("softmax", "relu"))
ONE_HEAD_PER_LAYER = Run("softmax", 2, 1, SEEDS, CAP)  # question (b): two layers, one head each
DEFAULT_RUNS = SPEC_RUNS + (ONE_HEAD_PER_LAYER,)
# Steps to stop of the settings SPEC does not report (the planner's estimate), measured: the 2 x 1
# ensemble ran 16,888 steps (its slowest seed; seeds 11,660-16,888), empirical/training/README.md.
MEASURED_STEPS = {("softmax", 2, 1): 16_900}
QUICK_RUNS = (
    Run("softmax", 1, 1, (0, 1), CAP),
    Run("relu", 1, 1, (0, 1), CAP),
)


def expected_steps(run: Run) -> int:
    """SPEC's steps to stop, or this suite's measurement (the planner's estimate), never above the cap."""
    key = (run.kind, run.layers, run.heads)
    return min(run.max_steps, SPEC_STEPS.get(key, MEASURED_STEPS.get(key, run.max_steps)))


def config(run: Run, seeds: tuple[int, ...], **overrides):
    from empirical.training.train import TrainConfig

    multi = run.layers > 1
    # a stack's per-head bound on the first train.STACK_BOUND_SEQUENCES evaluation sequences (the default)
    fields = dict(kind=run.kind, layers=run.layers, heads=run.heads, seeds=seeds, max_steps=run.max_steps,
                  log_every=500 if multi else 50)
    fields.update(overrides)
    return TrainConfig(**fields)


def jobs(runs: tuple[Run, ...], workers: int, **overrides):
    """The planned (run, seed group) jobs, longest first, and the estimated makespan (s)."""
    from empirical.training import seed_groups
    from empirical.pipeline.sweep import Job

    groups, makespan = seed_groups.plan(runs, workers, expected_steps)
    return [(g, Job(JOB_FN, config(g.run, g.seeds, **overrides), g.seeds)) for g in groups], makespan


def run(results_dir: Path, quick: bool, device: str, runs: tuple[Run, ...] | None = None,
        workers: int | None = None, **overrides) -> dict[str, Any]:
    """``runs``, ``workers`` and ``overrides`` (TrainConfig fields) exist for tests; the part
    itself runs ``DEFAULT_RUNS`` / ``QUICK_RUNS`` on the cores this process owns."""
    from empirical.host import progress, usage, watch
    from empirical.training import seed_groups
    from empirical.host.device import owned_cores
    from empirical.pipeline.sweep import run_sweep

    own_runs = runs is None  # the worst-case setting runs with the part's own runs only (tests pass tiny ones)
    from empirical.training.fastest import choose_for_host

    runs = runs or (QUICK_RUNS if quick else DEFAULT_RUNS)
    workers = workers or owned_cores()
    formulation = choose_for_host(device)  # exported to the workers: every job uses the same one
    planned, makespan = jobs(runs, workers, **overrides)
    worst_jobs = _worst_case_jobs(quick) if own_runs else []  # short: last, they fill the workers' gaps
    out_dir = Path(results_dir) / "runs" / "training"
    board = progress.Board(out_dir, [(j.run_id, _label(g), g.expected_steps, g.run.max_steps, g.cost)
                                     for g, j in planned] + [(j.run_id, *rest) for j, rest in worst_jobs], workers)
    outcome = run_sweep([j for _, j in planned] + [j for j, _ in worst_jobs], out_dir, backend="process",
                        workers=workers, device=device, on_event=board.event, on_wait=board.poll)
    board.close()
    if not outcome.ok:
        raise RuntimeError(f"training runs failed: {outcome.failed}")
    summaries = {}
    for r in runs:
        parts = [outcome.records[j.run_id]["result"] for g, j in planned if g.run == r]
        summaries[(r.kind, r.layers, r.heads)] = seed_groups.merge(parts, r.seeds)
    after = usage.Split()  # what runs in this process once the jobs are done
    with after.phase("figures"), watch.stage("figures"):
        figures = _figures(Path(results_dir), summaries)
    with after.phase("certificates"), watch.stage("certificates"):
        cert_tables, cert_claims, certificates = _certificates(summaries, quick, workers)
    with after.phase("ablations"):  # its stage: functional_sinks.ablate_runs
        functional = _functional_sinks(Path(results_dir), summaries)
    worst = None
    if own_runs:  # tests that pass their own runs skip it, so their phases stay the three above
        with after.phase("worst-case setting"), watch.stage("worst-case setting"):
            worst = _worst_case(Path(results_dir), quick, device, workers, outcome.records)
    return {
        "claims": _claims(summaries, figures) + cert_claims + functional["claims"] + (worst["claims"] if worst else []),
        "tables": [_runs_table(summaries), _heads_table(summaries), functional["table"]] + cert_tables
                  + (worst["tables"] if worst else [])
                  + [usage.jobs_table([(_label(g), outcome.records[j.run_id]) for g, j in planned]
                                      + [(rest[0], outcome.records[j.run_id]) for j, rest in worst_jobs],
                                      "Training jobs: what each (run, seed group) job cost"),
                     usage.phases_table(after.read(), "Training part after its jobs: figures, certificates, ablations, "
                                                      "worst-case setting (CPU includes the worker processes "
                                                      "each phase ran: certificates, the setting's training)")],
        "certificates": certificates,
        "worst_case": worst["details"] if worst else None,
        "functional_sinks": functional["rows"],
        "runs": {f"{k}-{l}x{h}": _run_digest(s, [j.run_id for g, j in planned if (g.run.kind, g.run.layers,
                                                                                  g.run.heads) == (k, l, h)])
                 for (k, l, h), s in summaries.items()},
        "plan": {"workers": workers, "estimated_makespan_s": round(makespan, 1),
                 "formulation": {"name": formulation[0], "chosen_by": formulation[1]},
                 "jobs": [{"run": _label(g), "seeds": list(g.seeds), "run_id": j.run_id} for g, j in planned]
                 + [{"run": rest[0], "seeds": list(j.seeds), "run_id": j.run_id} for j, rest in worst_jobs]},
        "budget_note": __doc__.split("Budgets: ")[1].split("\n\n")[0].strip(),
    }


def _label(group) -> str:
    r = group.run
    seeds = f"{group.seeds[0]}-{group.seeds[-1]}" if len(group.seeds) > 1 else f"{group.seeds[0]}"
    return f"{r.kind} {r.layers}x{r.heads} seeds {seeds}"


def _certificates(summaries: dict, quick: bool, workers: int):
    """Certificates over every input of the trained heads (``empirical.pipeline.parts.certificate_tables``),
    one process per core (they are independent)."""
    from empirical.pipeline.parts.certificate_tables import training_certificates

    return training_certificates(summaries, quick, workers)


def _worst_case_jobs(quick: bool) -> list[tuple]:
    """The worst-case setting's jobs with their progress-board entries (label, expected steps, cap,
    planned seconds): the reference single-layer run's steps plus the fine-tuning's."""
    from empirical.pipeline.parts import t1_end_to_end
    from empirical.training import seed_groups

    config = t1_end_to_end.default_config()
    steps = expected_steps(Run("softmax", 1, 1, (0,), config.reference_max_steps)) + config.steps
    return [(j, (f"worst-case seed {j.seeds[0]}", steps, config.reference_max_steps + config.steps,
                 steps * seed_groups.step_seconds(1, 1, 1))) for j in t1_end_to_end.jobs(quick, config)]


def _worst_case(results_dir: Path, quick: bool, device: str, workers: int, records: dict) -> dict:
    """The worst-case setting certified: T1 in full (``empirical.pipeline.parts.t1_end_to_end``),
    its jobs trained in this part's sweep (``records``)."""
    from empirical.pipeline.parts import t1_end_to_end

    return t1_end_to_end.run(results_dir, quick, device, workers, t1_end_to_end.default_config(), records)


def _functional_sinks(results_dir: Path, summaries: dict) -> dict:
    """Per head and seed: the error with its BOS attention ablated (``empirical.analysis.ablation``)."""
    from empirical.pipeline.parts import functional_sinks

    return functional_sinks.part(results_dir, summaries)


# ----------------------------------------------------------------------------------------
# Numbers.


def _mean(xs):
    return statistics.fmean(xs) if xs else float("nan")


def _head_values(summary: dict, key: str) -> list[list[list[float]]]:
    """[layer][head][member] values of one per-head metric."""
    c = summary["config"]
    return [[[m["layers"][n][h][key] for m in summary["members"]] for h in range(c["heads"])]
            for n in range(c["layers"])]


def _run_digest(summary: dict, run_ids: list[str]) -> dict:
    members = summary["members"]
    return {
        "run_ids": run_ids,
        "seeds": [m["seed"] for m in members],
        "converged": [m["converged"] for m in members],
        "steps": [m["steps"] for m in members],
        "eval_max_abs_error": [m["eval_max_abs_error"] for m in members],
        "bos_nontrigger_mean": _head_values(summary, "bos_nontrigger_mean"),
        "bos_nontrigger_min": _head_values(summary, "bos_nontrigger_min"),
        "bos_trigger_mean": _head_values(summary, "bos_trigger_mean"),
        "row_nontrigger_max": _head_values(summary, "row_nontrigger_max"),
        "bound": [{k: m["layers"][0][0]["bound"][k] for k in ("bound_mean", "bound_min", "violations", "min_slack")}
                  for m in members] if summary["config"]["layers"] == 1 and "bound" in members[0]["layers"][0][0]
        else None,
        "sinking_heads_gu": [sum(e["sinks_gu"] for layer in m["layers"] for e in layer) for m in members],
        "steps_per_second": summary["timing"]["steps_per_second"],
        "train_seconds": summary["timing"]["seconds"],
    }


def _fmt(x: float, digits: int = 4, side: str | None = None) -> str:
    """A number to nearest, or a bound on its ``side`` ("lower": rounded down, "upper": up)."""
    from constructions.numbers import format_bound

    return format_bound(x, digits, side) if isinstance(x, (int, float)) else str(x)


def _pm(values: list[float], digits: int = 4) -> str:
    """mean +- standard deviation over seeds (population std; a single seed: the value)."""
    if len(values) == 1:
        return _fmt(values[0], digits)
    return f"{_fmt(_mean(values), digits)} ± {_fmt(statistics.pstdev(values), 2)}"


def _steps_cell(summary: dict) -> str:
    members = summary["members"]
    conv = [m["steps"] for m in members if m["converged"]]
    capped = [m["seed"] for m in members if not m["converged"]]
    parts = []
    if conv:
        parts.append(f"{_pm(conv, 5)} (range {min(conv)}-{max(conv)}; {len(conv)}/{len(members)} converged)")
    if capped:
        parts.append(f"not converged at the cap {summary['config']['max_steps']}: seed(s) "
                     f"{', '.join(map(str, capped))}")
    return "; ".join(parts)


def _runs_table(summaries: dict) -> dict:
    rows = []
    for (kind, layers, heads), s in summaries.items():
        members = s["members"]
        mins = [v for layer in _head_values(s, "bos_nontrigger_min") for head in layer for v in head]
        per_head = [_pm(head, 3) for layer in _head_values(s, "bos_nontrigger_mean") for head in layer]
        bound = "n/a (not on the simplex)"
        if layers > 1 and "bound" in members[0]["layers"][0][0]:
            bound = "per head: see the next table"
        elif "bound" in members[0]["layers"][0][0]:
            b = [m["layers"][0][0]["bound"] for m in members]
            # the per-example bound's minimum is a lower bound (rounded down); its mean over the sequences
            # is a statistic beside the measured mean (to nearest)
            bound = (f"L0H0 mean {_pm([x['bound_mean'] for x in b], 6)}, min {_fmt(min(x['bound_min'] for x in b), side='lower')}; "
                     f"violations {sum(x['violations'] for x in b)}")
        spec_steps, spec_mass = SPEC_VALUES.get((kind, layers, heads), ("-", "-"))
        mass = (f"{_pm(_head_values(s, 'bos_nontrigger_mean')[0][0], 6)}; min over seeds, sequences and queries "
                f"{_fmt(min(mins), 6)}" if len(per_head) == 1 else
                f"per head: {', '.join(per_head)}; min over seeds and queries {_fmt(min(mins), 3)}")
        rows.append([
            f"{kind} {layers}x{heads}", len(members), _steps_cell(s),
            f"{_pm([m['eval_max_abs_error'] for m in members], 3)} (max {max(m['eval_max_abs_error'] for m in members):.2e})",
            mass, bound, spec_steps, spec_mass,
        ])
    return {
        "title": "Reference runs (constructions/SPEC.md section 4) next to SPEC's values (mean ± std over seeds)",
        "columns": ["run", "seeds", "steps to stop (this run)", "eval max-abs error",
                    "BOS mass at non-trigger queries", "certified bound (single head)", "SPEC steps", "SPEC BOS mass"],
        "rows": rows,
        "note": "mean ± std: over the seeds (population standard deviation). Evaluation: 1000 sequences, trigger "
                "at 7, float64. Non-trigger queries are 1..15 except 7 (query 0 sees only BOS). Every member trains "
                "to the stop rule or the cap; a member that reached the cap is listed by seed as not converged.",
    }


def _heads_table(summaries: dict) -> dict:
    rows = []
    for (kind, layers, heads), s in summaries.items():
        for n in range(layers):
            for h in range(heads):
                entries = [m["layers"][n][h] for m in s["members"]]
                bounds = [e["bound"] for e in entries if "bound" in e]
                rows.append([
                    f"{kind} {layers}x{heads}", f"L{n}H{h}",
                    _pm([e["bos_nontrigger_mean"] for e in entries], 4),
                    _fmt(min(e["bos_nontrigger_min"] for e in entries), 4),
                    _pm([e["bos_trigger_mean"] for e in entries], 3),
                    _pm([e["row_nontrigger_mean"] for e in entries], 3),
                    f"{sum(e['sinks_gu'] for e in entries)}/{len(entries)}",
                    (f"{_pm([b['bound_mean'] for b in bounds], 3)} ({_fmt(_mean([b['bound_positive_fraction'] for b in bounds]), 2)} > 0)"
                     if bounds else "n/a"),
                ])
    return {
        "title": "Per head: BOS mass over seeds (mean ± std), Gu et al. sink score, certified bound",
        "columns": ["run", "head", "BOS mass non-trigger", "min over seeds and queries", "BOS mass at trigger",
                    "row mass non-trigger", "seeds sinking (Gu alpha_0 > 0.3)",
                    "certified bound mean (fraction of queries > 0)"],
        "rows": rows,
        "note": "mean ± std over the seeds. In a stack the bound holds for each head (its own inputs and output), but "
                "the target constrains only the sum of all heads, so a head's bound may be vacuous (<= 0).",
    }


# ----------------------------------------------------------------------------------------
# Claims.


def _claims(summaries: dict, figures: dict) -> list[dict]:
    claims = []
    one_s, one_r = summaries.get(("softmax", 1, 1)), summaries.get(("relu", 1, 1))
    if one_s:
        claims += [_t1_sink(one_s, figures), _bound_claim(one_s, figures)]
    if one_r:
        claims += _t3_relu(one_r, figures)
    for heads in (2, 4):
        s = summaries.get(("softmax", heads, heads))
        if s:
            claims.append(_t2_claim(s, figures))
        r = summaries.get(("relu", heads, heads))
        if r:
            claims.append(_relu_stack_claim(r, figures))
    if ("softmax", 2, 1) in summaries:
        claims.append(_one_head_per_layer_claim(summaries[("softmax", 2, 1)], figures))
    return claims


def _cmd(kind: str, layers: int, heads: int, seeds, max_steps: int) -> str:
    return (f"sinks train --kind {kind} --layers {layers} --heads {heads} --seeds {' '.join(map(str, seeds))} "
            f"--max-steps {max_steps}")


def _cmd_of(s: dict) -> str:
    c = s["config"]
    return _cmd(c["kind"], c["layers"], c["heads"], c["seeds"], c["max_steps"])


def _converged_note(s: dict) -> tuple[bool, str]:
    n = sum(m["converged"] for m in s["members"])
    return n == len(s["members"]), f"{n}/{len(s['members'])} seeds met the stop rule"


def _t1_sink(s: dict, figures: dict) -> dict:
    all_conv, note = _converged_note(s)
    masses = [m["layers"][0][0]["bos_nontrigger_mean"] for m in s["members"]]
    mins = [m["layers"][0][0]["bos_nontrigger_min"] for m in s["members"]]
    trig = [m["layers"][0][0]["bos_trigger_mean"] for m in s["members"]]
    from empirical.training.metrics import SINK_MASS

    holds = all(v > SINK_MASS for v in masses)
    verdict = "observed" if holds and all_conv else ("not met" if all_conv else "unknown")
    return {
        "id": "t1_observed",
        "claim": f"T1 (observed): a trained single-layer softmax head sinks: BOS mass at non-trigger queries > {SINK_MASS} "
                 "in every seed, ~0 at the trigger",
        "verdict": verdict,
        "evidence": (f"{note}; BOS mass per seed {', '.join(_fmt(v, 6) for v in masses)} (min over sequences and "
                     f"queries {_fmt(min(mins), 6)}); at the trigger {', '.join(_fmt(v, 2) for v in trig)}; "
                     f"SPEC: 0.9998 after ~900 steps"),
        "test": f"{TEST}::test_softmax_run_sinks_and_the_bound_holds",
        "command": _cmd_of(s),
        "figures": [figures[k] for k in ("maps_1x1", "sink_vs_step", "error_vs_bos") if k in figures],
    }


def _bound_claim(s: dict, figures: dict) -> dict:
    b = [m["layers"][0][0]["bound"] for m in s["members"]]
    violations = sum(x["violations"] for x in b)
    return {
        "id": "t1_bound",
        "claim": "Certified sink bound a_i0 >= (delta_i - ||o_i||)/(delta_i + ||u_0||) (constructions/SPEC.md "
                 "section 3) never exceeds "
                 "the measured BOS mass on the trained single-layer softmax heads, and is close to 1",
        "verdict": "verified numerically" if violations == 0 else "refuted",
        "evidence": (f"{len(b)} seeds x {s['eval']['sequences']} sequences x 14 non-trigger queries: violations "
                     f"{violations}, smallest slack (measured - bound) {_fmt(min(x['min_slack'] for x in b), 3)}; "
                     f"bound mean {', '.join(_fmt(x['bound_mean'], 6) for x in b)} vs measured mean "
                     f"{', '.join(_fmt(x['measured_mean'], 6) for x in b)}; bound min "
                     f"{_fmt(min(x['bound_min'] for x in b), 6, 'lower')}; delta_i >= "
                     f"{_fmt(min(x['delta_lower_min'] for x in b), 4, 'lower')} (certified lower bound, float64, "
                     f"duality gap <= {_fmt(max(x['duality_gap_max'] for x in b), 2, 'upper')})"),
        "test": "tests/test_bound.py::test_bound_on_the_constructed_softmax_head_by_hand",
        "command": _cmd_of(s),
        "figures": [figures[k] for k in ("sink_vs_step",) if k in figures],
    }


def _t3_relu(s: dict, figures: dict) -> list[dict]:
    """Two claims: the strong one (every weight of every non-trigger row exactly 0, every seed) and
    the no-sink one (BOS mass <= 0.002 at non-trigger queries, every seed)."""
    all_conv, note = _converged_note(s)
    heads = [(m["seed"], m["steps"], m["layers"][0][0]) for m in s["members"]]
    exact = [seed for seed, _, h in heads if h["row_nontrigger_max"] == 0.0]
    others = "; ".join(f"seed {seed} (stopped at {steps}): max row mass {h['row_nontrigger_max']:.3g}, mean BOS mass "
                       f"{h['bos_nontrigger_mean']:.3g}" for seed, steps, h in heads if h["row_nontrigger_max"] != 0.0)
    from empirical.training.metrics import NO_SINK_MASS

    worst_bos = max(h["bos_nontrigger_mean"] for _, _, h in heads)
    common = {"test": f"{TEST}::test_relu_run_puts_exactly_zero_weight_on_non_trigger_rows", "command": _cmd_of(s),
              "figures": [figures[k] for k in ("maps_1x1",) if k in figures]}
    return [
        {"id": "t3_exact_zero",
         "claim": "T3 (observed): a trained single-layer ReLU head puts exactly zero weight on every non-trigger row, "
                  "in every seed",
         "verdict": ("observed" if len(exact) == len(heads) else "not met") if all_conv else "unknown",
         "evidence": (f"{note} (steps {', '.join(str(st) for _, st, _ in heads)}); every weight of every non-trigger "
                      f"row is exactly 0 in seeds {exact} of {[seed for seed, _, _ in heads]}"
                      + (f"; not in: {others} (the stop rule fired before those weights reached 0)" if others else "")
                      + "; SPEC: 0 exactly after ~700 steps (seed 0)"),
         **common},
        {"id": "t3_no_sink",
         "claim": "T3 (observed): a trained single-layer ReLU head forms no sink: BOS mass at non-trigger queries "
                  f"<= {NO_SINK_MASS} in every seed",
         "verdict": ("observed" if worst_bos <= NO_SINK_MASS else "not met") if all_conv else "unknown",
         "evidence": f"{note}; largest mean non-trigger BOS mass over seeds {worst_bos:.3g}",
         **common},
    ]


def _t2_claim(s: dict, figures: dict) -> dict:
    c = s["config"]
    all_conv, note = _converged_note(s)
    from empirical.training.metrics import STACK_SINK_MASS

    per_seed = [[e["bos_nontrigger_mean"] for layer in m["layers"] for e in layer] for m in s["members"]]
    strong = [sum(v > STACK_SINK_MASS for v in seed) for seed in per_seed]
    gu = [sum(e["sinks_gu"] for layer in m["layers"] for e in layer) for m in s["members"]]
    some = all(n >= 1 for n in strong)
    total = c["layers"] * c["heads"]
    verdict = "observed" if some else "not met"
    where = "" if all_conv else " (metrics at the step cap, not converged)"
    return {
        "id": f"t2_observed_{c['layers']}x{c['heads']}",
        "claim": f"T2 (observed): in a trained {c['layers']}x{c['heads']} softmax stack some head sinks (its mean "
                 f"non-trigger BOS mass is > {STACK_SINK_MASS}) in every seed: what training finds, not what the task "
                 "forces (T2 is refuted by the cancelling pair)",
        "verdict": verdict if all_conv or some else "unknown",
        "evidence": (f"{note}{where}; per seed, heads whose non-trigger BOS mass (mean over the {s['eval']['sequences']} "
                     f"evaluation sequences and the {c['L'] - 2} non-trigger queries) is > {STACK_SINK_MASS}: "
                     f"{strong} of {total}; sinking by Gu et al. (alpha_0 > 0.3): {gu} of {total}; "
                     f"SPEC: {SPEC_VALUES[(c['kind'], c['layers'], c['heads'])][1]}"),
        "test": ("tests/test_threshold_pins.py::test_stack_sink_mass_level_is_pinned, "
                 "tests/test_metrics.py::test_bos_mass_on_a_hand_built_pattern"),
        "command": _cmd_of(s),
        "figures": [figures[k] for k in (f"grid_softmax_{c['layers']}x{c['heads']}",) if k in figures],
    }


def _one_head_per_layer_claim(s: dict, figures: dict) -> dict:
    """Question (b) next to what training finds: per head, the BOS mass at non-trigger queries and
    at the trigger; "observed" when every seed has a head above STACK_SINK_MASS off the trigger."""
    c = s["config"]
    all_conv, note = _converged_note(s)
    from empirical.training.metrics import STACK_SINK_MASS

    heads = [(n, h) for n in range(c["layers"]) for h in range(c["heads"])]
    off = {k: [m["layers"][k[0]][k[1]]["bos_nontrigger_mean"] for m in s["members"]] for k in heads}
    at = {k: [m["layers"][k[0]][k[1]]["bos_trigger_mean"] for m in s["members"]] for k in heads}
    sinks = [sum(off[k][i] > STACK_SINK_MASS for k in heads) for i in range(len(s["members"]))]
    some = all(n >= 1 for n in sinks)
    where = "" if all_conv else " (metrics at the step cap, not converged)"
    per_head = "; ".join(f"L{n}H{h}: {_pm(off[(n, h)], 4)} off the trigger, {_pm(at[(n, h)], 3)} at it"
                         for n, h in heads)
    return {
        "id": f"question_b_observed_{c['layers']}x{c['heads']}",
        "claim": f"Question (b) (observed): in a trained {c['layers']}x{c['heads']} softmax stack (one head per layer) "
                 f"some head sinks at the non-trigger queries; (b) itself is unknown (proofs: t2_one_head_per_layer)",
        "verdict": ("observed" if some else "not met") if all_conv or some else "unknown",
        "evidence": (f"{note}{where}; BOS mass per head (mean ± std over seeds): {per_head}; heads above "
                     f"{STACK_SINK_MASS} off the trigger per seed: {sinks} of {len(heads)}"),
        "test": "tests/test_training_part.py::test_one_head_per_layer_setting_end_to_end_at_tiny_caps",
        "command": _cmd_of(s),
        "figures": [figures[k] for k in (f"grid_softmax_{c['layers']}x{c['heads']}",) if k in figures],
    }


def _relu_stack_claim(s: dict, figures: dict) -> dict:
    c = s["config"]
    all_conv, note = _converged_note(s)
    worst = max(e["bos_nontrigger_mean"] for m in s["members"] for layer in m["layers"] for e in layer)
    from empirical.training.metrics import NO_SINK_MASS

    holds = worst <= NO_SINK_MASS
    return {
        "id": f"t3_observed_{c['layers']}x{c['heads']}",
        "claim": f"T3 in a stack (observed): a trained {c['layers']}x{c['heads']} ReLU stack puts <= {NO_SINK_MASS} on BOS "
                 f"in every head",
        "verdict": ("observed" if holds else "not met") if all_conv else "unknown",
        "evidence": (f"{note}; largest mean non-trigger BOS mass over heads and seeds {_fmt(worst, 3)}"
                     f"{'' if all_conv else ' (at the step cap)'}; SPEC: {SPEC_VALUES[(c['kind'], c['layers'], c['heads'])][1]}"),
        "test": "tests/test_threshold_pins.py::test_no_sink_mass_level_is_pinned",
        "command": _cmd_of(s),
        "figures": [figures[k] for k in (f"grid_relu_{c['layers']}x{c['heads']}",) if k in figures],
    }


# ----------------------------------------------------------------------------------------
# Figures (from the stored sweep records, i.e. saved JSON only).


def _figures(results_dir: Path, summaries: dict) -> dict[str, str]:
    from empirical.training import figures as F

    out: dict[str, str] = {}

    def put(key: str, name: str, draw) -> None:
        draw(results_dir / name)
        out[key] = name

    one_s, one_r = summaries.get(("softmax", 1, 1)), summaries.get(("relu", 1, 1))
    if one_s and one_r:
        put("maps_1x1", "training_patterns_1x1.png", lambda p: F.pattern_maps([one_s, one_r], p))
    if one_s:
        put("sink_vs_step", "training_sink_vs_step.png", lambda p: F.sink_vs_step(one_s, p))
        put("error_vs_bos", "training_error_vs_bos.png",
            lambda p: F.error_vs_bos([one_s], p))
    for (kind, layers, heads), s in summaries.items():
        if layers > 1:
            put(f"grid_{kind}_{layers}x{heads}", f"training_heads_{kind}_{layers}x{heads}.png",
                lambda p, s=s: F.head_grid(s, p))
    return out
