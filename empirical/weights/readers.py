"""Untrusted weight containers read with every size checked before anything is allocated.

A malformed file is ``BadInput`` (one line, exit 2 in the CLI), never a traceback, and a file
cannot make the reader allocate more than its own contents decode to: the sizes a file declares
(zip members, npy headers, safetensors shapes and offsets, tensor views) are checked against the
file's size first.

- npz: the zip directory (every member inside the file; a deflated member at most deflate's
  1032:1 ratio) and every member's npy header (no Python objects; shape x item size equal to
  the member's size) are checked, then ``np.load(allow_pickle=False)`` reads it.
- safetensors: the 8-byte header length and the JSON header are parsed here; every tensor's
  dtype, shape and offsets must fit the data section exactly; then ``safe_open`` reads it.
- PyTorch: the zip format only (``torch.save`` since 1.6; the legacy format's storages declare
  their own sizes), its directory checked as for npz, then ``torch.load(weights_only=True)``;
  every tensor must be real and lie inside its own storage (an expanded view would be
  materialised by the float64 copy). A checkpoint that nests one state dict under a key
  (``{"model": state_dict}``) is read from that key, and the caller says so.

Whatever else a parser raises on a malformed file is turned into one line naming the file.
"""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

from constructions.errors import BadInput

DEFLATE_MAX_RATIO = 1032  # deflate cannot expand one compressed byte into more than ~1032
SAFETENSORS_ITEM = {"F64": 8, "F32": 4, "F16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def bad(path, what: str) -> BadInput:
    return BadInput(f"{path}: {what}")


def _first(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else 'no detail'}"


def check_zip(path: Path, what: str) -> list[zipfile.ZipInfo]:
    """The members of the zip at ``path``, each checked to lie inside the file and to declare no
    more bytes than its compressed data can hold."""
    size = path.stat().st_size
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except Exception as e:  # zipfile raises BadZipFile, ValueError, OSError, struct errors...
        raise bad(path, f"not {what} (not a readable zip archive: {_first(e)})") from None
    for info in infos:
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise bad(path, f"zip member {info.filename!r} uses compression method {info.compress_type} "
                            "(only stored or deflated)")
        if info.header_offset + info.compress_size > size:
            raise bad(path, f"zip member {info.filename!r} extends past the end of the file (truncated?)")
        most = info.compress_size if info.compress_type == zipfile.ZIP_STORED else \
            info.compress_size * DEFLATE_MAX_RATIO + 1024
        if info.file_size > most:
            raise bad(path, f"zip member {info.filename!r} declares {info.file_size} bytes from "
                            f"{info.compress_size} stored")
    return infos


# ----------------------------------------------------------------------------------------
# npz


def _npy_header(path: Path, z: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
    import numpy as np

    fmt = np.lib.format
    with z.open(info) as f:
        version = fmt.read_magic(f)
        read = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
        if read is None:
            raise bad(path, f"{info.filename}: npy format version {version} is not read (1.0 and 2.0 are)")
        shape, _, dtype = read(f)
        header = f.tell()
    if dtype.hasobject:
        raise bad(path, f"{info.filename} holds Python objects (a pickle); only numeric arrays are read")
    declared = math.prod(shape) * dtype.itemsize
    if header + declared != info.file_size:
        raise bad(path, f"{info.filename}: its header declares shape {list(shape)} ({declared} bytes), "
                        f"the member holds {info.file_size - header}")


def read_npz(path: Path) -> dict[str, Any]:
    """The arrays of an npz file by name (``.npy`` stripped)."""
    import numpy as np

    infos = check_zip(path, "an npz file")
    try:
        with zipfile.ZipFile(path) as z:
            for info in infos:
                if not info.filename.endswith(".npy"):
                    raise bad(path, f"zip member {info.filename!r} is not an .npy array")
                _npy_header(path, z, info)
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    except BadInput:
        raise
    except Exception as e:  # numpy / zipfile / zlib on a corrupt member
        raise bad(path, f"not a readable npz file without pickles ({_first(e)})") from None


# ----------------------------------------------------------------------------------------
# safetensors


def _safetensors_header(path: Path) -> None:
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise bad(path, "not a safetensors file (shorter than its 8-byte header length)")
        n = int.from_bytes(head, "little")
        if n > size - 8:
            raise bad(path, f"not a safetensors file (its header declares {n} bytes, the file has {size - 8} after it)")
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise bad(path, f"not a safetensors file (header is not JSON: {_first(e)})") from None
    if not isinstance(header, dict):
        raise bad(path, "not a safetensors file (header is not a JSON object)")
    data = size - 8 - n
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise bad(path, "safetensors __metadata__ must map names to strings")
    for name, t in header.items():
        if not isinstance(t, dict) or set(t) != {"dtype", "shape", "data_offsets"}:
            raise bad(path, f"tensor {name!r}: header entry must have dtype, shape and data_offsets")
        item = SAFETENSORS_ITEM.get(t["dtype"])
        if item is None:
            raise bad(path, f"tensor {name!r} has dtype {t['dtype']!r}; read: {', '.join(SAFETENSORS_ITEM)}")
        shape, offsets = t["shape"], t["data_offsets"]
        if not (isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)):
            raise bad(path, f"tensor {name!r}: shape {shape!r} is not a list of sizes")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= data):
            raise bad(path, f"tensor {name!r}: data_offsets {offsets!r} lie outside the {data}-byte data section")
        if offsets[1] - offsets[0] != math.prod(shape) * item:
            raise bad(path, f"tensor {name!r}: shape {shape} of {t['dtype']} needs {math.prod(shape) * item} bytes, "
                            f"its offsets hold {offsets[1] - offsets[0]}")


def read_safetensors(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """(arrays by name, metadata) of a safetensors file."""
    from safetensors import safe_open

    _safetensors_header(path)
    try:
        with safe_open(str(path), framework="numpy") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    except Exception as e:  # SafetensorError and whatever the numpy conversion raises
        raise bad(path, f"not a safetensors file ({_first(e)})") from None


# ----------------------------------------------------------------------------------------
# PyTorch


def _is_state_dict(value: Any) -> bool:
    import torch

    return isinstance(value, dict) and bool(value) and all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in value.items())


def _state_dict(state: Any, path: Path) -> tuple[dict[str, Any], str | None]:
    """(the state dict, the checkpoint key it was nested under or None)."""
    if _is_state_dict(state) or (isinstance(state, dict) and not state):
        return state, None
    if not isinstance(state, dict):
        raise bad(path, f"a PyTorch file must hold a state dict of named tensors, not a {type(state).__name__}")
    nested = [k for k, v in state.items() if _is_state_dict(v)]
    if len(nested) == 1:
        return state[nested[0]], nested[0]
    keys = ", ".join(repr(k) for k in list(state)[:6])
    if nested:
        raise bad(path, f"this checkpoint holds several state dicts (keys {', '.join(map(repr, nested))}): save the "
                        f"one to certify alone, e.g. torch.save(ckpt[{nested[0]!r}], 'weights.pt')")
    raise bad(path, f"a PyTorch file must hold a state dict of named tensors (this one has keys {keys}; "
                    "a checkpoint should nest its state dict under one key such as 'model' or 'state_dict')")


def _float_arrays(state: dict[str, Any], path: Path) -> dict[str, Any]:
    import torch

    out = {}
    for k, t in state.items():
        try:
            if t.is_complex() or t.layout != torch.strided:
                raise bad(path, f"tensor {k!r} is {t.dtype}, {t.layout}: only dense real tensors are read")
            if t.numel() * t.element_size() > t.untyped_storage().nbytes():
                raise bad(path, f"tensor {k!r} of shape {list(t.shape)} is a view larger than its storage "
                                f"({t.untyped_storage().nbytes()} bytes)")
            out[k] = t.detach().to(torch.float64).numpy()
        except BadInput:
            raise
        except Exception as e:  # an odd dtype or storage that will not convert
            raise bad(path, f"tensor {k!r} cannot be read as float64 ({_first(e)})") from None
    return out


def read_torch(path: Path) -> tuple[dict[str, Any], str | None]:
    """(float64 arrays of the state dict by name, the checkpoint key it was nested under)."""
    import torch

    try:
        is_zip = zipfile.is_zipfile(path)
    except Exception:  # a zip end record that is itself malformed: check_zip says how
        is_zip = True
    if not is_zip:
        raise bad(path, "not a weights-only PyTorch zip file (torch.save's format since PyTorch 1.6; the legacy "
                        "format is not read; nothing was unpickled)")
    check_zip(path, "a PyTorch file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError, RuntimeError, KeyError, EOFError, ... on a malformed file
        raise bad(path, f"not a weights-only PyTorch file ({type(e).__name__}: it holds something other than "
                        "tensors, or is not a torch file; nothing was unpickled)") from None
    state, key = _state_dict(state, path)
    return _float_arrays(state, path), key
