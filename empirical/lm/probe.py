"""``sinks probe``'s run: load the model, read every head on the probe texts, bound, ablate.

Stages, each checkpointed under ``OUT/.probe-work/<stage>-<key>/`` (atomic npz files; the key
hashes the model files, the token ids and the options the stage depends on), so an interrupted
run resumes where it stopped and repeats nothing, and a rerun with other ablation options keeps
the measurements; the folder is removed once ``probe.json`` is written:

1. ``measure``: on the first ``bound_texts`` texts, per batch one forward (``extract.record``),
   the cross-checks (the weights the probe reads against ``output_attentions``, the float64
   recomputation from Q/K/V against both), and ``heads.layer_quantities`` for every layer (mass,
   output norms, the SPEC bound with its certified delta, Gu's score). The float64 recomputation
   and the bound's QP are most of the probe's measurement cost, so they run only here;
2. ``families``: Gu's score on every text of each input family (``families``) from the model's
   float32 weights, and on the repeated family the bound of ``repeated`` per layer (float64);
3. ``ablate``: the first ``screen_texts`` of the ``ablation_texts`` texts for every (head,
   ablation), the two first-token ablations and the head zeroing, then the rest for those that
   pass ``functional.continues`` (``zeroing.continues`` for the zeroing); batched
   (``ablate.batched_losses``), one checkpoint per layer and part; a replay check and a check of
   the batched ablation and zeroing against the one-head-at-a-time ones.
"""

from __future__ import annotations

import hashlib
import io
import json
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from constructions.errors import BadInput
from constructions.files import write_atomic
from empirical.host import usage

from . import ablate, extract, families, functional, heads, load, repeated, zeroing
from . import texts as probe_texts

WORK_DIR = ".probe-work"


@dataclass(frozen=True)
class ProbeConfig:
    model: str
    texts: str | None = None  # a file, one text a line; None: the default probe set
    tokens: int = probe_texts.DEFAULT_TOKENS
    bos: bool = False
    ablation_texts: int = 32
    batch: int = 17
    solver_iters: int = 20  # the delta QP; more only tightens the certified bound
    device: str = "cpu"
    bound_texts: int = 17  # texts that carry the float64 recomputation and the SPEC bound
    screen_texts: int = 1  # ablation texts every head runs on (0: all of them)
    family_texts: int = families.FAMILY_TEXTS
    zeroing_texts: int = zeroing.ZEROING_TEXTS  # ablation texts the head zeroing runs on (its cost)

    def check(self) -> None:
        for name in ("ablation_texts", "screen_texts"):
            if getattr(self, name) < 0:
                raise BadInput(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        for name in ("batch", "solver_iters", "bound_texts", "family_texts", "zeroing_texts"):
            if getattr(self, name) < 1:
                raise BadInput(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")


@dataclass
class Measured:
    """Everything the stages produced, as numpy arrays."""

    pairs: dict[str, np.ndarray]  # [L, H, N_bound, T-1] each (heads.PAIR_FIELDS and "model_mass")
    per_text: dict[str, np.ndarray]  # [L, H, N_bound] each
    checks: dict[str, float]
    ablation: dict[str, np.ndarray] | None  # "clean" [A]; "<kind>" [L, H, A], NaN where screened out
    families: dict[str, dict[str, np.ndarray]] | None = None  # family -> families.sink_scores, [L, H, N_f]
    repeated: dict[str, np.ndarray] | None = None  # repeated.stack on the repeated family
    phases: dict[str, dict[str, float]] | None = None  # per stage: wall and CPU seconds, peak RSS so far


class _Phases:
    """``usage.Split``'s wall and CPU seconds per stage, with the peak RSS and the machine's load
    average at each stage's end (the probe shares its machine; the load says how much)."""

    def __init__(self):
        self.split, self.extra = usage.Split(), {}

    def phase(self, name: str):
        return self.split.phase(name)

    def mark(self, name: str) -> None:
        self.extra[name] = {"peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2, 2),
                            "load_end": usage.load_average()}

    def read(self) -> dict[str, dict[str, float]]:
        return {name: {**times, **self.extra.get(name, {})} for name, times in self.split.read().items()}


def run(config: ProbeConfig, out: Path, bar=None) -> tuple[load.LoadedModel, probe_texts.ProbeSet, Measured]:
    """Load, measure, ablate (resuming from ``out``'s work folder). ``bar(total, desc)`` makes a
    progress bar with ``update()`` and ``close()``, or None."""
    config.check()
    if config.texts is None:
        raw, source = probe_texts.default_texts(), "default"
    else:
        raw, source = probe_texts.read_texts(config.texts), str(config.texts)
    phases = _Phases()
    with phases.phase("load"):
        loaded = load.load(config.model, config.device)
    phases.mark("load")
    probe_set = probe_texts.tokenise(loaded.tokenizer, raw, config.tokens, config.bos, source)
    work = Path(out) / WORK_DIR
    ids = torch.tensor(probe_set.ids, device=config.device)
    torch.manual_seed(0)  # nothing here is random; fixed anyway so that any sampling stays reproducible
    with phases.phase("measure"):
        measured = _measure(loaded.model, ids[:config.bound_texts], config, work / "measure-{}".format(
            _key(loaded, probe_set, config.batch, config.solver_iters, config.bound_texts)), bar)
    phases.mark("measure")
    with phases.phase("families"):
        measured.families, measured.repeated = _families(
            loaded, ids, probe_set.bos, config, work / f"families-{_key(loaded, probe_set, config.family_texts)}", bar)
    phases.mark("families")
    bounded = measured.families["natural"]["gu_alpha0"][..., :config.bound_texts]
    measured.checks["max_gu_alpha0_float32_vs_float64"] = float(np.abs(bounded - measured.per_text["gu_alpha0"]).max())
    if config.ablation_texts > 0:
        key = _key(loaded, probe_set, config.ablation_texts, config.screen_texts, ablate.KINDS,
                   functional.SCREEN_FRACTION * ablate.FUNCTIONAL_LOSS_INCREASE,
                   zeroing.SCREEN_FACTOR * zeroing.NO_LOSS_INCREASE, config.zeroing_texts)  # what ran and was kept
        with phases.phase("ablations"):
            measured.ablation = _ablate(loaded.model, ids[:config.ablation_texts], config.screen_texts,
                                        config.zeroing_texts, work / f"ablate-{key}", bar, measured.checks)
        phases.mark("ablations")
    measured.phases = phases.read()
    return loaded, probe_set, measured


def finish(out: Path) -> None:
    """Remove the work folder once the results are written."""
    shutil.rmtree(Path(out) / WORK_DIR, ignore_errors=True)


def _key(loaded: load.LoadedModel, probe_set: probe_texts.ProbeSet, *options) -> str:
    blob = json.dumps({"files": loaded.provenance["files"], "device": loaded.provenance["device"],
                       "texts": probe_set.hash(), "options": options}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_atomic(path, lambda f: f.write(buf.getvalue()), mode="wb")


def _load(path: Path) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _measure(model, ids: torch.Tensor, config: ProbeConfig, work: Path, bar) -> Measured:
    geo = extract.geometry(model)
    n_layers = len(extract.layers(model))
    starts = list(range(0, len(ids), config.batch))
    progress = bar(len(starts) * n_layers, "heads, bound") if bar else None
    parts = []
    for b, s in enumerate(starts):
        path = work / f"batch-{b:03d}.npz"
        part = _load(path)
        if part is None:
            part = _measure_batch(model, ids[s:s + config.batch], geo, config.solver_iters, progress)
            _save(path, part)
        elif progress:
            progress.update(n_layers)
        parts.append(part)
    if progress:
        progress.close()
    pair_keys = (*heads.PAIR_FIELDS, "model_mass")
    pairs = {k: np.concatenate([p[k] for p in parts], axis=2) for k in pair_keys}
    per_text = {k: np.concatenate([p[k] for p in parts], axis=2) for k in ("u0_norm", "value_norm_mean", "gu_alpha0")}
    checks = {k: float(max(p[k] for p in parts)) for k in parts[0] if k.startswith("max_")}
    return Measured(pairs, per_text, checks, None)


def _measure_batch(model, ids: torch.Tensor, geo: extract.Geometry, iters: int, progress) -> dict[str, np.ndarray]:
    rec = extract.record(model, ids)
    rows: dict[str, list] = {}
    checks = {"max_probe_vs_output_attentions": 0.0, "max_recomputed_vs_probe": 0.0,
              "max_recomputed_vs_output_attentions": 0.0}
    for n, x in enumerate(rec.inputs):
        pattern, v = extract.recompute(model, n, x, geo)
        q = heads.layer_quantities(model, n, pattern, v, geo, iters)
        checks["max_probe_vs_output_attentions"] = max(checks["max_probe_vs_output_attentions"],
                                                       extract.max_difference(rec.weights[n], rec.output_attentions[n]))
        checks["max_recomputed_vs_probe"] = max(checks["max_recomputed_vs_probe"],
                                                extract.max_difference(pattern, rec.weights[n]))
        checks["max_recomputed_vs_output_attentions"] = max(
            checks["max_recomputed_vs_output_attentions"], extract.max_difference(pattern, rec.output_attentions[n]))
        q["model_mass"] = rec.weights[n][:, :, 1:, 0].transpose(0, 1).to(torch.float64)  # [H, B, T-1]
        for k, v in q.items():
            rows.setdefault(k, []).append(v.cpu().numpy())
        if progress:
            progress.update(1)
    out = {k: np.stack(v) for k, v in rows.items()}  # [L, H, B, ...]
    out.update({k: np.float64(v) for k, v in checks.items()})
    return out


def _families(loaded, ids: torch.Tensor, bos_id, config: ProbeConfig, work: Path, bar):
    model = loaded.model
    geo = extract.geometry(model)
    inputs = {"natural": ids, **{k: v.to(ids.device) for k, v in
                                 families.drawn(loaded.tokenizer, ids.shape[1], bos_id, config.family_texts).items()}}
    progress = bar(len(families.FAMILIES), "input families") if bar else None
    scores, bounded = {}, None
    for name in families.FAMILIES:
        path = work / f"{name}.npz"
        part = _load(path)
        if part is None:
            per_layer: list[list] = []
            keep = None
            if name == "repeated":
                def keep(start, rec):
                    per_layer.append([repeated.layer_bound(model, n, x, geo) for n, x in enumerate(rec.inputs)])
            part = families.measure(model, inputs[name], config.batch, keep)
            if per_layer:  # the batches' per-layer results, texts joined on their batch axis
                joined = [{k: torch.cat([b[n][k] for b in per_layer], dim=-2 if k in ("bound", "mass") else -1)
                           for k in per_layer[0][n]} for n in range(len(per_layer[0]))]
                part.update({f"bound_{k}": v for k, v in repeated.stack(joined).items()})
            _save(path, part)
        scores[name] = {k: part[k] for k in ("gu_alpha0", "mass_mean")}
        if name == "repeated":
            bounded = {k.removeprefix("bound_"): v for k, v in part.items() if k.startswith("bound_")}
        if progress:
            progress.update(1)
    if progress:
        progress.close()
    return scores, bounded


def _ablate(model, ids: torch.Tensor, screen_texts: int, zeroing_texts: int, work: Path, bar,
            checks: dict[str, float]) -> dict[str, np.ndarray]:
    geo = extract.geometry(model)
    n_layers, A = len(extract.layers(model)), len(ids)
    S = min(screen_texts or A, A)
    Z = max(min(zeroing_texts, A), S)  # the zeroing's texts: the screen's and up to zeroing_texts
    variants = [(h, kind) for kind in ablate.KINDS for h in range(geo.heads)]
    clean = ablate.clean_run(model, ids[:S])
    final = ablate.logits(model, clean.final)
    for start in (0, n_layers // 2):  # the replay is the model's own forward from that layer on
        checks[f"max_replay_from_layer_{start}_vs_forward"] = extract.max_difference(
            ablate.replay(model, clean, start), final)
    losses = np.full((len(variants), n_layers, A), np.nan)
    _ablate_part(model, clean, ids[:S], variants, [list(range(len(variants)))] * n_layers, losses[..., :S],
                 work / "screen", bar)
    middle, (h, kind) = n_layers // 2, variants[0]  # batched against one head at a time, on the real model
    checks["max_batched_vs_single_ablation"] = float(np.abs(
        losses[0, middle, :S] - ablate.ablated_loss(model, clean, ids[:S], middle, h, kind, geo).cpu().numpy()).max())
    z = variants.index((h, ablate.ZEROED))
    checks["max_batched_vs_single_zeroing"] = float(np.abs(
        losses[z, middle, :S] - ablate.ablated_loss(model, clean, ids[:S], middle, h, ablate.ZEROED, geo).cpu().numpy()).max())
    clean_loss = clean.loss.cpu().numpy()
    if S < A:
        go = _continues(variants, losses[..., :S] - clean_loss)
        zeroed = np.array([kind == ablate.ZEROED for _, kind in variants])
        rest = ablate.clean_run(model, ids[S:])
        _ablate_part(model, rest, ids[S:], variants, [np.flatnonzero(go[:, n] & ~zeroed).tolist() for n in range(n_layers)],
                     losses[..., S:], work / "rest", bar)
        if Z > S:  # the zeroing over texts S..Z-1 only (its cost: most heads pass its screen)
            _ablate_part(model, ablate.clean_run(model, ids[S:Z]), ids[S:Z], variants,
                         [np.flatnonzero(go[:, n] & zeroed).tolist() for n in range(n_layers)],
                         losses[..., S:Z], work / "zeroing", bar)
        clean_loss = np.concatenate([clean_loss, rest.loss.cpu().numpy()])
    result = {kind: losses[[v for v, (_, k) in enumerate(variants) if k == kind]].transpose(1, 0, 2)
              for kind in ablate.KINDS}  # [L, H, A]
    result["clean"] = clean_loss
    result["screen_texts"] = np.int64(S)
    result["zeroing_texts"] = np.int64(Z)
    return result


def _continues(variants, screen_changes: np.ndarray) -> np.ndarray:
    """[V, L] booleans from ``screen_changes`` [V, L, S]: a first-token ablation continues past the
    screen when it may be functional (``functional.continues``), a zeroing when it may be zeroable
    (``zeroing.continues``)."""
    V, L, S = screen_changes.shape
    flat = screen_changes.reshape(-1, S)
    zeroed = np.repeat([kind == ablate.ZEROED for _, kind in variants], L)
    return np.where(zeroed, zeroing.continues(flat), functional.continues(flat)).reshape(V, L)


def _ablate_part(model, clean, ids, variants, chosen: list[list[int]], out: np.ndarray, work: Path, bar) -> None:
    """Fill ``out`` [V, L, texts] at the ``chosen`` variants of each layer, one checkpoint a layer."""
    progress = bar(sum(map(len, chosen)), f"ablations ({work.name}, {len(ids)} texts)") if bar else None
    for n, picked in enumerate(chosen):
        if not picked:
            continue
        path = work / f"layer-{n:03d}.npz"
        part = _load(path)
        if part is None:
            part = {"variants": np.array(picked), "loss": ablate.batched_losses(
                model, clean, ids, n, [variants[v] for v in picked]).cpu().numpy()}
            _save(path, part)
        out[part["variants"], n] = part["loss"]
        if progress:
            progress.update(len(picked))
    if progress:
        progress.close()
