"""Gu et al.'s input families (ICLR 2025, "When attention sink emerges in language models",
Table 1): natural text, random tokens, and one token repeated, each ``T`` tokens long.

- ``natural``: the probe texts (``texts.tokenise``);
- ``random``: ``FAMILY_TEXTS`` sequences of tokens drawn uniformly, independently, from the
  tokenizer's ordinary ids (every id below ``len(tokenizer)`` that is not a special token);
- ``repeated``: ``FAMILY_TEXTS`` sequences, each one ordinary token (drawn uniformly) repeated T times.

Both drawn families use ``numpy.random.default_rng(FAMILY_SEED)``. With ``bos`` the tokenizer's
BOS id replaces nothing: it is prepended and the sequence keeps T tokens in all (as ``texts`` does).
Sink^eps is ``heads.sink_percentage`` of Gu's score alpha_0 per (text, layer, head), read from
the model's own float32 attention weights (``extract.record``); on the texts that also carry the
SPEC bound it is compared with the float64 recomputation (``max_gu_alpha0_float32_vs_float64``).

``PUBLISHED``: the figures of their Table 1, quoted second-hand (Sink_1^eps, eps = 0.3, T = 64,
percent): GPT2-XL natural / random / repeated; Mistral-7B, LLaMA2-7B and LLaMA3-8B as a range over
the three models for natural and random, and 0.00 for repeated.
"""

from __future__ import annotations

import numpy as np
import torch

from . import extract, heads

FAMILIES = ("natural", "random", "repeated")
FAMILY_TEXTS = 32  # sequences in each drawn family
FAMILY_SEED = 0
PUBLISHED = {
    "GPT2-XL": {"natural": 77.0, "random": 70.3, "repeated": 62.3},
    "Mistral-7B, LLaMA2-7B, LLaMA3-8B": {"natural": (92.5, 99.0), "random": (75.2, 91.2), "repeated": 0.0},
}
PUBLISHED_SOURCE = "Gu et al., ICLR 2025, Table 1 (Sink_1^eps, eps = 0.3, T = 64), quoted second-hand"


def ordinary_ids(tokenizer) -> np.ndarray:
    """The ids a drawn family may use: the tokenizer's whole vocabulary less its special tokens."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    return np.array([i for i in range(len(tokenizer)) if i not in special], dtype=np.int64)


def drawn(tokenizer, tokens: int, bos_id: int | None, count: int = FAMILY_TEXTS,
          seed: int = FAMILY_SEED) -> dict[str, torch.Tensor]:
    """The random and repeated families, [count, tokens] ids each."""
    rng = np.random.default_rng(seed)
    pool = ordinary_ids(tokenizer)
    body = tokens - (bos_id is not None)
    random = pool[rng.integers(0, len(pool), size=(count, body))]
    repeated = np.repeat(pool[rng.integers(0, len(pool), size=(count, 1))], body, axis=1)
    out = {}
    for name, ids in (("random", random), ("repeated", repeated)):
        if bos_id is not None:
            ids = np.concatenate([np.full((count, 1), bos_id), ids], axis=1)
        out[name] = torch.from_numpy(ids)
    return out


def sink_scores(weights: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """From one forward's attention weights (per layer [B, H, T, T]): Gu's alpha_0 [L, H, B] and
    the mean first-token mass over queries >= 1 [L, H, B], in float64."""
    alpha0 = torch.stack([heads.gu_scores(w.to(torch.float64))[..., 0].transpose(0, 1) for w in weights])
    mass = torch.stack([w[:, :, 1:, 0].to(torch.float64).mean(dim=-1).transpose(0, 1) for w in weights])
    return {"gu_alpha0": alpha0, "mass_mean": mass}


def measure(model, ids: torch.Tensor, batch: int, keep=None) -> dict[str, np.ndarray]:
    """Sink scores of ``ids`` [N, T] (``sink_scores``, texts on the last axis), ``batch`` texts per
    forward. ``keep(start, recording)``, if given, sees each forward (to reuse it)."""
    parts = []
    for s in range(0, len(ids), batch):
        rec = extract.record(model, ids[s:s + batch])
        parts.append({k: v.cpu().numpy() for k, v in sink_scores(rec.weights).items()})
        if keep is not None:
            keep(s, rec)
    return {k: np.concatenate([p[k] for p in parts], axis=-1) for k in parts[0]}


def summary(scores: dict[str, np.ndarray]) -> dict[str, float]:
    alpha0 = scores["gu_alpha0"]
    return {**{f"sink_percentage_eps_{e}": heads.sink_percentage(alpha0, e) for e in heads.GU_EPS},
            "first_token_mass_mean": float(scores["mass_mean"].mean()), "sequences": int(alpha0.shape[-1])}
