"""Files are data: atomic writes, safe reads, and the provenance every result records.

Lives in the base package so that ``proofs`` and ``empirical`` share one implementation.
Nothing here unpickles: JSON, and npz with ``allow_pickle=False``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from .errors import BadInput


def write_atomic(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "w") -> Path:
    """Write through ``write(fileobj)`` into a temporary file beside ``path``, then rename.

    A reader never sees a half-written file; an interrupted write leaves no partial output.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; results are ordinary files
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON (dataclasses become dicts)."""
    text = json.dumps(to_jsonable(obj), indent=2, sort_keys=False) + "\n"
    return write_atomic(path, lambda f: f.write(text))


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file; a missing, unreadable or malformed file is bad input naming the file
    (nesting too deep to parse and integers beyond Python's 4300-digit limit included)."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"file not found: {path}") from None
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror or e}") from None
    except RecursionError:
        raise BadInput(f"malformed JSON in {path}: nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, the integer digit limit
        raise BadInput(f"malformed JSON in {path}: {str(e)[:160]}") from None


def to_jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 1) == 0:
        return obj.item()  # numpy / torch scalars
    return obj


def config_from_dict(cls: type, data: Any, what: str = "config") -> Any:
    """Build the frozen dataclass ``cls`` from a dict, rejecting unknown or mistyped fields."""
    if not isinstance(data, dict):
        raise BadInput(f"{what} must be a JSON object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise BadInput(f"{what} has unknown field(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    try:
        return cls(**data)
    except TypeError as e:
        raise BadInput(f"{what}: {e}") from None


def versions() -> dict[str, str]:
    """Versions of Python and of the numeric packages that are importable (none is imported
    here if it was not already: torch stays unloaded for commands that do not need it)."""
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    from importlib import metadata

    for pkg in ("torch", "numpy", "sympy", "z3-solver", "mpmath", "python-flint", "attention-sinks-verified"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def provenance(config: Any = None, seed: Any = None, device: str = "cpu") -> dict[str, Any]:
    """What every result file records: its config, seed, versions and device."""
    return {"config": to_jsonable(config), "seed": seed, "device": device, "versions": versions()}
