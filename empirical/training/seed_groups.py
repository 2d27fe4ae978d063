"""Splitting training runs into (run, seed group) jobs, planning them longest-first over the
cores, and merging the groups' summaries back into one summary per run.

Every member of an ensemble trains as if alone (``empirical.training.train``: own initialisation, own
data, own loss term, elementwise Adam; on the CPU a member's numbers are bit for bit those of a
single run of its seed, ``tests/test_training_part.py``), so a run's seeds may be trained in any
grouping. Grouping only changes the cost:

- one ensemble of n seeds costs about ``a + b n`` seconds per step (``STEP_COST``: a fixed
  per-step overhead plus a per-seed part) and runs until its slowest member stops;
- two workers finish sooner when a long run's seeds are split over both.

``plan(runs, workers)`` tries every way of cutting each run into 1..workers contiguous groups of
near-equal size, schedules the jobs longest-first (LPT) over ``workers`` and keeps the plan with
the smallest estimated makespan (ties: fewer jobs). The estimate uses SPEC's steps to stop and the
cost model below; it only orders and groups jobs. It is a pure function of its arguments, so a
rerun on the same machine plans the same jobs (same run ids) and resumes.
"""

from __future__ import annotations

import heapq
import itertools
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

# Milliseconds per ensemble step of n seeds ~ a + b * n, (a, b) by (layers, heads): fitted to
# `empirical.training.train.train` step rates at n = 1, 2, 3, 5 on the 2-core development machine (one
# torch thread, load ~3, 07:56 UTC: 1 layer 1.5 / 2.2 / 2.7 / 5.0 ms, 2 x 2 2.9 / 5.9 / 7.0 /
# 8.7 ms, 4 x 4 6.3 / 11.8 / 17.2 / 30.9 ms). Only their ratios decide the plan; the progress
# board rescales them by the rates it measures. Shapes not listed scale with layers * heads.
STEP_COST = {(1, 1): (1.1, 0.8), (2, 2): (1.5, 1.45), (4, 4): (0.5, 6.1)}


@dataclass(frozen=True)
class Group:
    """One job: ``seeds`` of run ``run`` (any object with kind, layers, heads, seeds)."""

    run: Any
    seeds: tuple[int, ...]
    expected_steps: int

    @property
    def cost(self) -> float:
        """Estimated seconds for this group to reach its expected steps."""
        return self.expected_steps * step_seconds(self.run.layers, self.run.heads, len(self.seeds))


def step_seconds(layers: int, heads: int, n: int) -> float:
    a, b = STEP_COST.get((layers, heads), (2.0 + 0.2 * layers * heads, 1.0 * layers * heads))
    return (a + b * n) / 1000


def split(seeds: Sequence[int], k: int) -> list[tuple[int, ...]]:
    """``seeds`` cut into k contiguous groups whose sizes differ by at most one (larger first)."""
    seeds = tuple(seeds)
    size, extra = divmod(len(seeds), k)
    out, start = [], 0
    for g in range(k):
        end = start + size + (1 if g < extra else 0)
        out.append(seeds[start:end])
        start = end
    return [g for g in out if g]


def schedule(groups: Sequence[Group], workers: int) -> tuple[list[Group], float]:
    """Longest-first order of ``groups`` and its makespan on ``workers`` (LPT list scheduling)."""
    order = sorted(groups, key=lambda g: (-g.cost, g.run.kind, g.run.layers, g.seeds))
    loads = [0.0] * workers
    heapq.heapify(loads)
    for g in order:
        heapq.heappush(loads, heapq.heappop(loads) + g.cost)
    return order, max(loads)


def plan(runs: Sequence[Any], workers: int, expected_steps) -> tuple[list[Group], float]:
    """The grouping of every run with the smallest estimated makespan, longest job first.

    ``expected_steps(run) -> int`` estimates the steps a run's slowest seed needs."""
    workers = max(1, workers)
    options = [[[Group(r, g, expected_steps(r)) for g in split(r.seeds, k)]
                for k in range(1, min(workers, len(r.seeds)) + 1)] for r in runs]
    best = None
    for choice in itertools.product(*options):
        groups = [g for option in choice for g in option]
        order, makespan = schedule(groups, workers)
        key = (round(makespan, 6), len(groups))
        if best is None or key < best[0]:
            best = (key, order, makespan)
    return best[1], best[2]


# ----------------------------------------------------------------------------------------
# Merging the groups of one run.


def merge(summaries: Sequence[dict], seeds: Sequence[int]) -> dict:
    """One run's summary from its groups' summaries (members in the order of ``seeds``).

    Members, patterns, stored weights and per-member evaluation are concatenated. History: the groups log at
    the same steps (multiples of ``log_every``, plus each member's stopping step and the group's
    last step); the merged history keeps the steps at which every group that was still training
    logged, and a group that had already finished contributes its last point (its members are
    frozen from their stopping step on, so that point is still their state)."""
    if len(summaries) == 1:
        return summaries[0]
    by_seed = {}
    for s in summaries:
        for n, seed in enumerate(s["config"]["seeds"]):
            by_seed[seed] = (s, n)
    missing = [seed for seed in seeds if seed not in by_seed]
    if missing:
        raise ValueError(f"no group trained seeds {missing}")
    members = [by_seed[seed][0]["members"][by_seed[seed][1]] for seed in seeds]
    patterns = {key: [by_seed[seed][0]["patterns"][key][by_seed[seed][1]] for seed in seeds]
                for key in ("mean", "std")}
    first = summaries[0]
    weights = {}  # final weights per member (``train._store_weights``), where every group stored them
    if all("weights" in s for s in summaries):
        weights["weights"] = [by_seed[seed][0]["weights"][by_seed[seed][1]] for seed in seeds]
    return {
        **first,
        **weights,
        "members": members,
        "patterns": patterns,
        "history": _merge_history(summaries, seeds, by_seed),
        "timing": _merge_timing(summaries),
        "config": {**first["config"], "seeds": list(seeds)},
        "groups": [list(s["config"]["seeds"]) for s in summaries],
    }


def _merge_timing(summaries: Sequence[dict]) -> dict:
    t = [s["timing"] for s in summaries]
    seconds = sum(x["seconds"] for x in t)
    merged = {"seconds": seconds, "history_seconds": sum(x["history_seconds"] for x in t),
              "ensemble_steps": sum(x["ensemble_steps"] for x in t),
              "steps_per_second": statistics.fmean([x["steps_per_second"] or 0 for x in t]),
              "threads": t[0]["threads"], "groups": t}
    if all("split" in x for x in t):  # wall and CPU seconds per phase, summed over the groups
        phases = {name for x in t for name in x["split"]}
        merged["split"] = {name: {key: round(sum(x["split"].get(name, {}).get(key, 0.0) for x in t), 3)
                                  for key in ("wall_s", "cpu_s")} for name in sorted(phases)}
    return merged


def _per_member(point: dict, n: int) -> dict:
    """The values of member ``n`` in a history point (lists indexed by member at some depth)."""
    out = {}
    for key, value in point.items():
        if key == "step":
            continue
        if key == "bos_nontrigger_mean":  # [layer][member][head]
            out[key] = [layer[n] for layer in value]
        else:  # [member]
            out[key] = value[n]
    return out


def _merge_history(summaries: Sequence[dict], seeds: Sequence[int], by_seed: dict) -> list[dict]:
    last_step = {id(s): s["history"][-1]["step"] for s in summaries}
    steps = sorted({h["step"] for s in summaries for h in s["history"]})
    points = {id(s): {h["step"]: h for h in s["history"]} for s in summaries}
    merged = []
    for step in steps:
        chosen = {}
        for s in summaries:
            if step <= last_step[id(s)]:
                if step not in points[id(s)]:
                    break  # a running group has no point here: skip this step
                chosen[id(s)] = points[id(s)][step]
            else:
                chosen[id(s)] = s["history"][-1]
        else:
            values = [_per_member(chosen[id(by_seed[seed][0])], by_seed[seed][1]) for seed in seeds]
            point = {"step": step}
            for key in values[0]:
                if key == "bos_nontrigger_mean":
                    point[key] = [[v[key][layer] for v in values] for layer in range(len(values[0][key]))]
                else:
                    point[key] = [v[key] for v in values]
            merged.append(point)
    return merged
