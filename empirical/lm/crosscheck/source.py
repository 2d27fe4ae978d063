"""What a probe run read, rebuilt without the probe's code: its ``probe.json``, the model file it
records (sha256 checked, loaded with plain transformers in float32 with eager attention), the
token ids of its texts (tokenised here, checked against the run's texts hash) and Gu et al.'s
drawn families (drawn here by the rule ``probe.json`` states: seed 0, uniform over the
tokenizer's non-special ids, BOS prepended when the run used one)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch

from constructions.errors import BadInput

FAMILY_SEED = 0  # the seed the probe states for its drawn families


@dataclass
class ProbeRun:
    record: dict[str, Any]
    model: Any
    tokenizer: Any
    ids: torch.Tensor  # [N, T] the run's texts, as this module tokenises them

    @property
    def summary(self) -> dict[str, Any]:
        return self.record["summary"]


def read_record(out: str | Path) -> dict[str, Any]:
    """``probe.json`` of a probe output folder (or the file itself); bad input if unreadable."""
    path = Path(out)
    path = path / "probe.json" if path.is_dir() else path
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"no probe.json at {path}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(f"{path} is not a probe.json: {e}") from None


def open_run(out: str | Path) -> ProbeRun:
    record = read_record(out)
    for key in ("model", "texts", "summary"):
        if key not in record:
            raise BadInput(f"probe.json has no {key!r}: not a probe output")
    model, tokenizer = load_model(record["model"]["files"])
    ids = token_ids(tokenizer, record["texts"])
    return ProbeRun(record, model, tokenizer, ids)


def load_model(files: dict[str, str]):
    """The model of the recorded weight files (a GGUF file, or a folder's safetensors), each
    file's sha256 checked against the record first."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF reader's bar: stderr carries only the one-line errors
    for name, digest in files.items():
        if not Path(name).is_file():
            raise BadInput(f"the probe's model file {name} is not on disk")
        if _sha256(Path(name)) != digest:
            raise BadInput(f"{name} is not the file the probe read (sha256 differs)")
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()  # stderr carries only the one-line errors

    first = Path(next(iter(files)))
    kwargs: dict[str, Any] = {"local_files_only": True}
    if first.suffix == ".gguf":
        kwargs["gguf_file"] = first.name
    tokenizer = AutoTokenizer.from_pretrained(first.parent, **kwargs)
    model = AutoModelForCausalLM.from_pretrained(first.parent, attn_implementation="eager", dtype="float32", **kwargs)
    return model.eval(), tokenizer


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def raw_texts(texts: dict[str, Any]) -> list[str]:
    """The run's texts: its ``--texts`` file, or the shipped set (read as data, not through the
    probe's code), one a line, blank lines skipped."""
    if texts["source"] == "default":
        text = resources.files("empirical.lm").joinpath("data/probe_texts.txt").read_text(encoding="utf-8")
    else:
        try:
            text = Path(texts["source"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise BadInput(f"the probe's texts file {texts['source']} cannot be read: {e}") from None
    return [line for line in text.splitlines() if line.strip()]


def token_ids(tokenizer, texts: dict[str, Any]) -> torch.Tensor:
    """[N, T]: each text's ids without special tokens, the run's BOS id first if it had one, cut
    to T; bad input unless their hash is the run's (so both read the same sequences)."""
    lines, T, bos = raw_texts(texts), texts["tokens"], texts["bos"]
    rows = [(([bos] if bos is not None else []) + list(tokenizer(t, add_special_tokens=False)["input_ids"]))[:T]
            for t in lines]
    blob = json.dumps({"texts": tuple(lines), "ids": tuple(map(tuple, rows)), "bos": bos}, ensure_ascii=False)
    if hashlib.sha256(blob.encode()).hexdigest() != texts["hash"]:
        raise BadInput("the texts tokenised here are not the probe's (hash differs)")
    return torch.tensor(rows)


def drawn_families(tokenizer, tokens: int, bos: int | None, count: int, seed: int = FAMILY_SEED) -> dict[str, torch.Tensor]:
    """Gu et al.'s random and repeated families [count, tokens]: ordinary ids drawn uniformly
    (all ids below len(tokenizer) less the special ones), random first, then one id per
    repeated sequence, from one generator; BOS prepended (then tokens - 1 drawn) if given."""
    special = set(tokenizer.all_special_ids)
    pool = np.array([i for i in range(len(tokenizer)) if i not in special], dtype=np.int64)
    rng = np.random.default_rng(seed)
    body = tokens - (bos is not None)
    random = pool[rng.integers(0, len(pool), size=(count, body))]
    repeated = np.repeat(pool[rng.integers(0, len(pool), size=(count, 1))], body, axis=1)
    head = np.full((count, 1 if bos is not None else 0), bos if bos is not None else 0, dtype=np.int64)
    return {name: torch.from_numpy(np.concatenate([head, x], axis=1)) for name, x in
            (("random", random), ("repeated", repeated))}
