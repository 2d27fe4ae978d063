"""The cross-checks, one per kind of probe figure, each returning ``tolerance.Pair``s.

- ``families``: Sink_1^eps per input family from ``output_attentions`` of a
  plain transformers forward, with Gu et al.'s score of key 0 computed here (alpha_0 =
  (1/T) sum_{i=0}^{T-1} a_i0 per text, layer and head; Sink^eps the percentage above eps);
- ``ablation``: a head's ``removed`` loss change, by whole-model forwards with the
  head's row renormalised inside the patched attention function (``attention.remove_first``);
- ``dormancy``: on the bound texts, the dormant pairs (||o_i|| < 0.2 x the head's 0.95
  quantile of ||o_i|| over its (text, query >= 1) pairs), the sinking heads (mean alpha_0 >
  0.3) and the fraction of those dormant at more than half their pairs, from ``output_attentions``
  and each head's output read at o_proj by this package's hook.

Every figure is computed in float32 (the figure) and in float64 (the rounding reference;
``tolerance``)."""

from __future__ import annotations

import re

import numpy as np
import torch

from constructions.errors import BadInput

from . import attention, source, tolerance
from .tolerance import Pair

SINK_EPS = 0.3  # Gu et al.'s threshold, the one the probe's family table reports
DORMANT_FRACTION, ACTIVE_QUANTILE = 0.2, 0.95  # the probe's stated dormant rule
MOSTLY = 0.5  # "dormant at most of its pairs": more than half


def _batches(ids: torch.Tensor, batch: int):
    return (ids[s:s + batch] for s in range(0, len(ids), batch))


def alpha0(model, ids: torch.Tensor, batch: int = 17) -> np.ndarray:
    """Gu's alpha_0 [N, L, H] (float64 arithmetic on the forward's weights)."""
    out = []
    with torch.no_grad():
        for x in _batches(ids, batch):
            att = model.model(input_ids=x, output_attentions=True, use_cache=False).attentions
            out.append(torch.stack([a[..., :, 0].to(torch.float64).sum(-1) / a.shape[-1] for a in att], dim=1))
    return torch.cat(out).numpy()


def alpha0_float32_and_float64(model, ids: torch.Tensor, batch: int = 17) -> tuple[np.ndarray, np.ndarray]:
    plain = alpha0(model, ids, batch)
    with attention.in_float64(model), attention.patched(model):
        reference = alpha0(model, ids, batch)
    return plain, reference


def families(run: source.ProbeRun, names=("natural", "random", "repeated"), batch: int = 17) -> list[Pair]:
    count = run.record["provenance"]["config"]["family_texts"]
    inputs = {"natural": run.ids, **source.drawn_families(run.tokenizer, run.ids.shape[1], run.record["texts"]["bos"], count)}
    pairs = []
    for name in names:
        if name not in inputs:
            raise BadInput(f"unknown family {name!r}; valid: natural, random, repeated")
        plain, reference = alpha0_float32_and_float64(run.model, inputs[name], batch)
        low, high = tolerance.percentage_interval(reference, SINK_EPS, tolerance.gap(plain, reference))
        probe = run.summary["families"][name][f"sink_percentage_eps_{SINK_EPS}"]
        pairs.append(Pair(f"Sink_1^{SINK_EPS} {name} ({len(plain)} seq.)", probe, 100.0 * float((plain > SINK_EPS).mean()),
                          low, high))
    return pairs


def parse_head(name: str) -> tuple[int, int]:
    m = re.fullmatch(r"L(\d+)H(\d+)", name)
    if not m:
        raise BadInput(f"--head must look like L18H8, got {name!r}")
    return int(m[1]), int(m[2])


def probed_ablation(record: dict, head: str, texts: int) -> dict:
    """The probe's ``removed`` entry of ``head``; bad input unless it averaged exactly ``texts`` texts."""
    row = next((r for r in record.get("heads", []) if r["name"] == head), None)
    if row is None or "ablation" not in row:
        raise BadInput(f"probe.json has no ablation of {head}")
    probe = row["ablation"]["removed"]
    if probe["texts"] != texts:
        raise BadInput(f"the probe averaged {head} over {probe['texts']} text(s); give --texts {probe['texts']}")
    return probe


def removed_losses(model, ids: torch.Tensor, layer: int, head: int, renormalise: bool = True) -> torch.Tensor:
    with attention.patched(model, attention.remove_first(layer, head, renormalise)):
        return attention.token_losses(model, ids)


def ablation(run: source.ProbeRun, head: str, texts: int, reference_texts: int = 4, renormalise: bool = True) -> list[Pair]:
    """The head's mean ``removed`` loss change over the first ``texts`` ablation texts (which must be
    the texts the probe averaged for it), the rounding gap measured on the first ``reference_texts``."""
    layer, h = parse_head(head)
    probe = probed_ablation(run.record, head, texts)
    ids = run.ids[:texts]
    clean, ablated = attention.token_losses(run.model, ids), removed_losses(run.model, ids, layer, h, renormalise)
    K = max(1, min(reference_texts, texts))
    with attention.in_float64(run.model):
        with attention.patched(run.model):
            clean64 = attention.token_losses(run.model, ids[:K])
        ablated64 = removed_losses(run.model, ids[:K], layer, h, renormalise)
    clean_gap, ablated_gap = tolerance.gap(clean[:K], clean64), tolerance.gap(ablated[:K], ablated64)
    change = float((ablated - clean).mean())
    tol = tolerance.loss_tolerance(clean_gap, ablated_gap, float(ablated.max()))
    pairs = [tolerance.within(f"{head} removed: mean loss change over {texts} text(s)", probe["loss_change"], change, tol)]
    if texts == run.summary.get("ablation_texts"):
        pairs.append(tolerance.within(f"clean loss over {texts} texts", run.summary["clean_loss"], float(clean.mean()),
                                      tolerance.loss_tolerance(clean_gap, 0.0, float(clean.max()))))
    return pairs


def head_quantities(model, ids: torch.Tensor, batch: int = 17) -> dict[str, np.ndarray]:
    """Per layer and head over the texts: mass a_i0 and ||o_i|| at queries >= 1 [L, H, N, T-1],
    alpha_0 [L, H, N]."""
    parts: dict[str, list] = {"mass": [], "norm": [], "alpha0": []}
    for x in _batches(ids, batch):
        weights, outputs = attention.head_outputs(model, x)
        parts["mass"].append(torch.stack([w[:, :, 1:, 0] for w in weights]).to(torch.float64))
        parts["norm"].append(torch.stack([o[:, :, 1:].norm(dim=-1) for o in outputs]).to(torch.float64))
        parts["alpha0"].append(torch.stack([w[..., :, 0].to(torch.float64).sum(-1) / w.shape[-1] for w in weights]))
    return {k: torch.cat(v, dim=1).transpose(1, 2).numpy() for k, v in parts.items()}  # [L, B, H, ...] -> [L, H, B, ...]


def dormancy_statistic(norm: np.ndarray) -> np.ndarray:
    """||o_i|| - 0.2 x the head's 0.95 quantile: negative exactly at the dormant pairs."""
    flat = norm.reshape(*norm.shape[:2], -1)
    return norm - DORMANT_FRACTION * np.quantile(flat, ACTIVE_QUANTILE, axis=-1)[..., None, None]


def dormancy(run: source.ProbeRun, batch: int = 17) -> list[Pair]:
    ids = run.ids[:run.record["provenance"]["config"]["bound_texts"]]
    plain = head_quantities(run.model, ids, batch)
    with attention.in_float64(run.model), attention.patched(run.model):
        ref = head_quantities(run.model, ids, batch)
    d32, d64 = dormancy_statistic(plain["norm"]), dormancy_statistic(ref["norm"])
    not_dormant_sure, not_dormant_maybe = tolerance.above(d64, 0.0, tolerance.gap(d32, d64))
    dormant_sure, dormant_maybe = ~not_dormant_maybe, ~not_dormant_sure
    s = run.summary
    pairs = [Pair(f"dormant pairs ({d32.size:,})", s["dormant_fraction"], float((d32 < 0).mean()),
                  float(dormant_sure.mean()), float(dormant_maybe.mean()))]
    mean32, mean64 = plain["alpha0"].mean(-1), ref["alpha0"].mean(-1)
    sink_sure, sink_maybe = tolerance.above(mean64, SINK_EPS, tolerance.gap(mean32, mean64))
    sinking32 = mean32 > SINK_EPS
    d = s["sinks_and_dormancy"]
    pairs.append(Pair(f"sinking heads (mean alpha_0 > {SINK_EPS})", d["sinking_heads"], int(sinking32.sum()),
                      int(sink_sure.sum()), int(sink_maybe.sum())))
    flat = lambda a: a.reshape(*a.shape[:2], -1).mean(-1)  # noqa: E731  per-head fraction of pairs
    mostly32 = flat(d32 < 0) > MOSTLY
    low, high = tolerance.ratio_interval(sink_sure, sink_maybe, flat(dormant_sure) > MOSTLY, flat(dormant_maybe) > MOSTLY)
    pairs.append(Pair("sinking heads dormant at most pairs", d["sinking_heads_mostly_dormant"],
                      float(mostly32[sinking32].mean()) if sinking32.any() else float("nan"), low, high))
    return pairs
