"""``sinks probe``'s run: load the model, read every head on the probe texts, bound, ablate.

Stages, each checkpointed under ``OUT/.probe-work/<stage>-<key>/`` (atomic npz files; the key
hashes the model files, the token ids and the options the stage depends on), so an interrupted
run resumes where it stopped and repeats nothing, and a rerun with other ablation options keeps
the measurements; the folder is removed once ``probe.json`` is written:

1. ``measure``: per batch of texts one forward (``extract.record``), the cross-checks (the
   weights the probe reads against ``output_attentions``, the float64 recomputation from Q/K/V
   against both), and ``heads.layer_quantities`` for every layer (mass, output norms, the SPEC
   bound with its certified delta, Gu's score);
2. ``ablate``: the clean run of the first ``ablation_texts`` texts, a replay check, and both
   ablations of every head (``ablate.ablated_loss``), one checkpoint per layer.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from constructions.errors import BadInput
from constructions.files import write_atomic

from . import ablate, extract, heads, load
from . import texts as probe_texts

WORK_DIR = ".probe-work"


@dataclass(frozen=True)
class ProbeConfig:
    model: str
    texts: str | None = None  # a file, one text a line; None: the default probe set
    tokens: int = probe_texts.DEFAULT_TOKENS
    bos: bool = False
    ablation_texts: int = 1
    batch: int = 17
    solver_iters: int = 20  # the delta QP; more only tightens the certified bound
    device: str = "cpu"

    def check(self) -> None:
        if self.ablation_texts < 0:
            raise BadInput(f"--ablation-texts must be >= 0, got {self.ablation_texts}")
        if self.batch < 1:
            raise BadInput(f"--batch must be >= 1, got {self.batch}")
        if self.solver_iters < 1:
            raise BadInput(f"--solver-iters must be >= 1, got {self.solver_iters}")


@dataclass
class Measured:
    """Everything the stages produced, as numpy arrays."""

    pairs: dict[str, np.ndarray]  # [L, H, N, T-1] each (heads.PAIR_FIELDS and "model_mass")
    per_text: dict[str, np.ndarray]  # [L, H, N] each
    checks: dict[str, float]
    ablation: dict[str, np.ndarray] | None  # "clean" [A]; "<kind>" [L, H, A]


def run(config: ProbeConfig, out: Path, bar=None) -> tuple[load.LoadedModel, probe_texts.ProbeSet, Measured]:
    """Load, measure, ablate (resuming from ``out``'s work folder). ``bar(total, desc)`` makes a
    progress bar with ``update()`` and ``close()``, or None."""
    config.check()
    if config.texts is None:
        raw, source = probe_texts.default_texts(), "default"
    else:
        raw, source = probe_texts.read_texts(config.texts), str(config.texts)
    loaded = load.load(config.model, config.device)
    probe_set = probe_texts.tokenise(loaded.tokenizer, raw, config.tokens, config.bos, source)
    work = Path(out) / WORK_DIR
    ids = torch.tensor(probe_set.ids, device=config.device)
    torch.manual_seed(0)  # nothing here is random; fixed anyway so that any sampling stays reproducible
    measured = _measure(loaded.model, ids, config,
                        work / f"measure-{_key(loaded, probe_set, config.batch, config.solver_iters)}", bar)
    if config.ablation_texts > 0:
        measured.ablation = _ablate(loaded.model, ids[:config.ablation_texts],
                                    work / f"ablate-{_key(loaded, probe_set, config.ablation_texts)}", bar,
                                    measured.checks)
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


def _ablate(model, ids: torch.Tensor, work: Path, bar, checks: dict[str, float]) -> dict[str, np.ndarray]:
    geo = extract.geometry(model)
    n_layers = len(extract.layers(model))
    clean = ablate.clean_run(model, ids)
    for start in (0, n_layers // 2):  # the replay is the model's own forward from that layer on
        checks[f"max_replay_from_layer_{start}_vs_forward"] = extract.max_difference(
            ablate.replay(model, clean, start), clean.logits)
    progress = bar(n_layers * geo.heads * len(ablate.ABLATIONS), "ablations") if bar else None
    layers = []
    for n in range(n_layers):
        path = work / f"layer-{n:03d}.npz"
        part = _load(path)
        if part is None:
            part = {}
            for kind in ablate.ABLATIONS:
                losses = []
                for h in range(geo.heads):
                    losses.append(ablate.ablated_loss(model, clean, ids, n, h, kind, geo).cpu().numpy())
                    if progress:
                        progress.update(1)
                part[kind] = np.stack(losses)  # [H, A]
            _save(path, part)
        elif progress:
            progress.update(geo.heads * len(ablate.ABLATIONS))
        layers.append(part)
    if progress:
        progress.close()
    result = {kind: np.stack([p[kind] for p in layers]) for kind in ablate.ABLATIONS}  # [L, H, A]
    result["clean"] = clean.loss.cpu().numpy()
    return result
