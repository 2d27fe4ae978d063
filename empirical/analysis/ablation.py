"""Functional sinks: does the trained model rely on a head's attention to BOS?

Attention to BOS is not reliance on BOS. For each head of a trained model (every ensemble member
at once) two ablations are run on the training evaluation set, through the staged forward
(``empirical.training.staged``; nothing about the model is re-implemented):

- ``removed``: at every non-trigger query (1..L-1 except the trigger: where the sink is, as
  constructions/SPEC.md section 5 measures it) the head's weight on BOS is set to 0 and the row is renormalised
  over the other keys so that it keeps its total mass sum_k a_ik (for softmax: the softmax over
  keys 1..i, i.e. BOS taken out of the softmax). Query 0 sees only BOS and has no other key to
  renormalise over; the trigger row's BOS weight is part of the mean, not a sink; both are
  left alone.
- ``value_zeroed``: BOS's value vector in that head is set to 0 (the head still puts its
  weight on BOS, but what it reads there is nothing). A sink that only parks mass on a
  near-zero value survives this; one that reads a useful vector from BOS does not.

A head's sink is **functional** under an ablation when the evaluation max-abs error rises by
more than ``FUNCTIONAL_INCREASE`` over the error with the head intact. The threshold is ten
times the stop rule's tolerance (5e-3): the model was trained to 5e-3, so an increase of 0.05
means the ablated model plainly no longer solves the task, well above the spread of the intact
errors (0.002-0.011 over the reference runs' seeds). It is pinned by ``tests/test_ablation.py``.
"""

from __future__ import annotations

from typing import Any

import torch

from empirical.training.bos_edits import ABLATIONS, remove_bos, zero_bos_value

FUNCTIONAL_INCREASE = 0.05  # 10 x the stop tolerance; see the module docstring


def _hook_for(ablation: str, layer: int, head: int, nontrigger: torch.Tensor):
    stage, change = {"removed": ("attn.hook_pattern", lambda t: remove_bos(t, head, nontrigger)),
                     "value_zeroed": ("attn.hook_v", lambda t: zero_bos_value(t, head))}[ablation]
    target = f"blocks.{layer}.{stage}"
    return lambda name, t: change(t) if name == target else t


def _member_errors(out: torch.Tensor, y: torch.Tensor) -> tuple[list[float], list[float]]:
    """Per member (leading dimension; none for a plain model): max-abs error and MSE."""
    err = out - y
    if err.dim() == y.dim():
        err = err.unsqueeze(0)
    flat = err.flatten(1)
    return flat.abs().amax(dim=1).tolist(), flat.pow(2).mean(dim=1).tolist()


@torch.no_grad()
def head_ablations(model, x: torch.Tensor, y: torch.Tensor, trigger: torch.Tensor) -> dict[str, Any]:
    """Every head under both ablations. Returns {"kept": {"max_abs": [S], "mse": [S]},
    "heads": [layer][head] {"bos_mass": [S], "<ablation>": {"max_abs": [S], "mse": [S]}}} with
    one entry per ensemble member (S = 1 for a plain model)."""
    from empirical.training import metrics, staged

    model = model.eval()
    nontrigger = metrics.query_masks(trigger, x.shape[-2])["nontrigger"]  # [B, L]
    masses = []

    def keep_patterns(name, t):
        if name.endswith("attn.hook_pattern"):
            masses.append(metrics.bos_mass(t, trigger)["nontrigger_mean"])  # [*E, H]
        return t

    kept_max, kept_mse = _member_errors(staged.run(model, x, keep_patterns), y)
    heads = []
    for n in range(model.n_layers):
        mass = masses[n] if masses[n].dim() == 2 else masses[n].unsqueeze(0)  # [S, H]
        row = []
        for h in range(model.n_heads):
            entry = {"bos_mass": mass[:, h].tolist()}
            for ablation in ABLATIONS:
                mx, mse = _member_errors(staged.run(model, x, _hook_for(ablation, n, h, nontrigger)), y)
                entry[ablation] = {"max_abs": mx, "mse": mse}
            row.append(entry)
        heads.append(row)
    return {"kept": {"max_abs": kept_max, "mse": kept_mse}, "heads": heads}


def is_functional(kept: float, ablated: float) -> bool:
    """Does removing the sink break the model: error increase above ``FUNCTIONAL_INCREASE``?"""
    return ablated - kept > FUNCTIONAL_INCREASE


def of_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """``head_ablations`` of a stored training run, on its own evaluation set (1000 sequences,
    trigger at 7), from the weights in its record (``empirical.weights.formats``)."""
    from empirical.training import stored_weights, train

    config = train.TrainConfig.from_dict(summary["config"])
    batch = evaluation_set(config)
    return head_ablations(stored_weights.model_from_summary(summary), batch.x, batch.y, batch.trigger)


def evaluation_set(config):
    """The training evaluation sequences of ``config`` in float64 (as training evaluates)."""
    from constructions import task
    from empirical.training import train

    cfg = config.task(trigger=config.eval_trigger)
    return task.sample(cfg, config.eval_sequences, torch.Generator().manual_seed(train.EVAL_SEED), dtype=torch.float64)


def rows(result: dict[str, Any], seeds: list[int]) -> list[dict[str, Any]]:
    """One flat row per (layer, head, seed): BOS mass, kept error, each ablation's error and
    increase, and whether the sink is functional under it."""
    out = []
    for n, layer in enumerate(result["heads"]):
        for h, entry in enumerate(layer):
            for s, seed in enumerate(seeds):
                kept = result["kept"]["max_abs"][s]
                row = {"layer": n, "head": h, "seed": seed, "bos_mass": entry["bos_mass"][s], "kept": kept}
                for ablation in ABLATIONS:
                    err = entry[ablation]["max_abs"][s]
                    row[ablation] = err
                    row[f"{ablation}_increase"] = err - kept
                    row[f"{ablation}_functional"] = is_functional(kept, err)
                out.append(row)
    return out
