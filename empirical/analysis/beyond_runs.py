"""Beyond the paper: every attention kind and task variant through the same training, by name.

A *run* (``BeyondRun``) is one attention kind on one named task variant, trained with the
training part's ``empirical.training.train.train`` (reference optimiser and stop rule) over several seeds
in one ensemble. Variants are named field sets of ``constructions.task.TaskConfig`` plus
``eval_L`` for length generalisation:

    reference   SPEC's task                  no_bos     bos=False (position 0 is content)
    triggers3   3 triggers per sequence      gaussian   content ~ N(0, 1)
    retrieval   key-query retrieval          length64 / length256   train at L, evaluate at 64 / 256

(the task variants are defined precisely in ``constructions.task``). ``train_run`` is a pure
sweep job (``empirical.pipeline.sweep``), so finished runs are kept and an interrupted part resumes.

How the sink is measured (``sink_of``): the mean BOS mass a_i0 over non-trigger queries 1..L-1
of the evaluation set (``empirical.training.metrics``), per seed; for several heads, the largest head's
(T2 asks whether *some* head sinks). With several triggers the metrics' "non-trigger" set uses
the first trigger only, so the pre-trigger mean is used instead (queries before any trigger).
Without BOS, "BOS mass" is the mass on position 0, the first content token: the measure of
whether softmax turns that token into a sink.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from constructions import attention, task
from constructions.errors import BadInput
from empirical.training.train import TrainConfig, train_job

VARIANTS: dict[str, dict[str, Any]] = {
    "reference": {},
    "no_bos": {"bos": False},
    "triggers3": {"triggers": 3},
    "gaussian": {"content": "gaussian"},
    "retrieval": {"retrieval": True},
    "length64": {"eval_L": 64},
    "length256": {"eval_L": 256},
}


def variant_fields(name: str) -> dict[str, Any]:
    """The fields of variant ``name``; an unknown name is bad input listing the valid ones."""
    try:
        return dict(VARIANTS[name])
    except (KeyError, TypeError):
        raise BadInput(f"unknown task variant {name!r}; valid: {', '.join(VARIANTS)}") from None


@dataclass(frozen=True)
class VariantTrainConfig(TrainConfig):
    """``TrainConfig`` on a task variant: trains on ``task()`` at length L with the variant's
    fields; evaluates on ``task(trigger)``, which for ``eval_L`` is length eval_L with the
    trigger drawn from 2..eval_L-1 (and, with several triggers, random positions)."""

    bos: bool = True
    triggers: int = 1
    retrieval: bool = False
    eval_L: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.eval_L is not None and (not isinstance(self.eval_L, int) or isinstance(self.eval_L, bool)
                                        or self.eval_L < 4):
            raise BadInput(f"training field 'eval_L' must be None or an integer >= 4, got {self.eval_L!r}")

    def task(self, trigger: int | None = None) -> task.TaskConfig:
        evaluating = trigger is not None
        L = self.eval_L if evaluating and self.eval_L is not None else self.L
        fixed = trigger if evaluating and self.eval_L is None and self.triggers == 1 else None
        return task.TaskConfig(d=self.d, L=L, trigger=fixed, residual=self.residual, content=self.content,
                               bos=self.bos, triggers=self.triggers, retrieval=self.retrieval)

    @property
    def bound_applies(self) -> bool:
        # The certified bound is the training part's figure (reference task); skipping it here
        # keeps every kind x variant run cheap, at long evaluation lengths too.
        return False


@dataclass(frozen=True)
class BeyondRun:
    """One kind on one variant; ``lr`` None is the reference choice (1e-3 one layer, 1e-4 more)."""

    kind: str = "softmax"
    variant: str = "reference"
    layers: int = 1
    heads: int = 1
    max_steps: int = 3000
    lr: float | None = None
    eval_sequences: int = 200
    d: int = 16
    L: int = 16

    def __post_init__(self) -> None:
        attention.get(self.kind)
        variant_fields(self.variant)
        self.train_config((0,))  # every other field is checked by TrainConfig

    def train_config(self, seeds: tuple[int, ...]) -> VariantTrainConfig:
        return VariantTrainConfig(kind=self.kind, d=self.d, L=self.L, layers=self.layers, heads=self.heads, lr=self.lr,
                                  max_steps=self.max_steps, seeds=tuple(seeds),
                                  eval_sequences=self.eval_sequences, log_every=self.max_steps,
                                  **variant_fields(self.variant))

    @property
    def label(self) -> str:
        return f"{self.kind} {self.layers}x{self.heads} {self.variant}"


HEAD_METRICS = ("bos_nontrigger_mean", "bos_nontrigger_min", "bos_pre_trigger_mean", "bos_trigger_mean",
                "row_nontrigger_mean", "row_trigger_mean")


def train_run(run: BeyondRun, seeds: tuple[int, ...], device: str = "cpu") -> dict[str, Any]:
    """Sweep job: train ``run`` over ``seeds`` (through ``train_job``, so on one torch thread like
    every training job); the compact per-seed result (no patterns)."""
    summary = train_job(run.train_config(seeds), seeds, device)
    members = [{
        "seed": m["seed"], "converged": m["converged"], "steps": m["steps"],
        "eval_max_abs_error": m["eval_max_abs_error"], "eval_mse": m["eval_mse"],
        "heads": [[{k: h[k] for k in HEAD_METRICS} for h in layer] for layer in m["layers"]],
    } for m in summary["members"]]
    return {"run": dataclasses.asdict(run), "members": members, "timing": summary["timing"]}


def sink_of(run: BeyondRun, member: dict[str, Any]) -> float:
    """One seed's sink measure (module docstring): BOS mass at non-trigger queries, largest head."""
    key = "bos_pre_trigger_mean" if variant_fields(run.variant).get("triggers", 1) > 1 else "bos_nontrigger_mean"
    return max(h[key] for layer in member["heads"] for h in layer)


def row_mass_of(member: dict[str, Any]) -> float:
    """One seed's total row mass sum_k a_ik at non-trigger queries, largest head."""
    return max(h["row_nontrigger_mean"] for layer in member["heads"] for h in layer)


def summarise(run: BeyondRun, result: dict[str, Any]) -> dict[str, Any]:
    """Over seeds: sink mean and min, row mass mean, error reached (median and max), steps."""
    import statistics

    members = result["members"]
    sinks = [sink_of(run, m) for m in members]
    errors = [m["eval_max_abs_error"] for m in members]
    return {
        "label": run.label, "seeds": len(members),
        "sink_mean": statistics.fmean(sinks), "sink_min": min(sinks),
        "row_mass_mean": statistics.fmean(row_mass_of(m) for m in members),
        "error_median": statistics.median(errors), "error_max": max(errors),
        "converged": sum(m["converged"] for m in members),
        "steps_mean": statistics.fmean(m["steps"] for m in members),
    }
