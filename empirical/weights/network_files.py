"""The project's own weight files of an exact network (``sinks construct --format json|npz``).

``network_to_json`` keeps every entry exact as a fraction string ("1/3"); ``load_network`` reads
such a file back into an exact ``reference.Network`` and ``load_model`` (the one loader into
torch) goes on through ``empirical.training.model.from_network``. ``write_network_npz`` writes
float arrays (read back with ``allow_pickle=False``).

Torch is imported inside the function that needs it, so the exact pieces stay light.
"""

from __future__ import annotations

import io
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from constructions import reference, task
from constructions.errors import BadInput
from constructions.files import read_json, write_atomic, write_json

FORMAT = "sinks-network/1"
MATRICES = ("W_Q", "W_K", "W_V")


# ----------------------------------------------------------------------------------------
# Exact JSON.


def _exact_str(v: Any) -> str:
    """An exact rational as "p/q" (or "p"); anything irrational is refused, not rounded."""
    try:
        import sympy

        if isinstance(v, sympy.Basic):
            if not v.is_Rational:
                raise BadInput(f"weight {v} is not a rational number; JSON keeps exact rationals only")
            return str(v)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, bool) or not isinstance(v, (int, Fraction, float)):
        raise BadInput(f"weight {v!r} is not a number")
    return str(Fraction(v))


def _matrix_json(M: reference.Matrix) -> list[list[str]]:
    return [[_exact_str(v) for v in row] for row in M]


def network_to_json(net: reference.Network, meta: Mapping[str, Any] | None = None) -> dict:
    """The network as a JSON-able dict with exact fraction strings."""
    return {
        "format": FORMAT,
        "kind": net.kind,
        "residual": net.residual,
        "d": net.d,
        "meta": dict(meta or {}),
        "layers": [
            {**{name: [_matrix_json(M) for M in getattr(layer, name)] for name in MATRICES},
             "W_O": _matrix_json(layer.W_O),
             "extras": [{k: (_matrix_json([v])[0] if isinstance(v, (list, tuple)) else _exact_str(v))
                         for k, v in layer.head_extras(h).items()} for h in range(layer.heads)]
             if layer.extras else []}
            for layer in net.layers
        ],
    }


# "p", "p/q" or a plain decimal: no exponent, whose "1e99999999" would build a huge integer
FRACTION_TEXT = re.compile(r"[+-]?(\d+(/\d+)?|\d*\.\d+)")


def _fraction(text: Any, where: str) -> Fraction:
    if not isinstance(text, str):
        raise BadInput(f"{where}: expected a fraction string, got {str(text)[:40]!r}")
    if not FRACTION_TEXT.fullmatch(text):
        raise BadInput(f"{where}: {text[:40]!r} is not a fraction (p, p/q or a decimal)")
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):  # q = 0, or more digits than Python converts
        raise BadInput(f"{where}: {text[:40]!r} is not a fraction") from None


def _matrix_from(rows: Any, where: str) -> reference.Matrix:
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        raise BadInput(f"{where}: expected a list of rows")
    return tuple(tuple(_fraction(v, f"{where}[{r}][{c}]") for c, v in enumerate(row)) for r, row in enumerate(rows))


def network_from_json(data: Any, source: str = "network") -> reference.Network:
    """An exact ``reference.Network`` from ``network_to_json``'s dict; malformed data is bad input."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BadInput(f"{source}: not a {FORMAT} file")
    layers_data = data.get("layers")
    if not isinstance(layers_data, list) or not layers_data:
        raise BadInput(f"{source}: 'layers' must be a non-empty list")
    layers = []
    for n, ld in enumerate(layers_data):
        if not isinstance(ld, dict):
            raise BadInput(f"{source}: layer {n} is not an object")
        heads = {name: tuple(_matrix_from(M, f"{source}: layer {n} {name}[{h}]")
                             for h, M in enumerate(ld.get(name) or [])) for name in MATRICES}
        extras_data = ld.get("extras") or []
        if not isinstance(extras_data, list) or not all(isinstance(e, dict) for e in extras_data):
            raise BadInput(f"{source}: layer {n} 'extras' must be a list of objects (one per head)")
        extras = tuple(
            {k: (tuple(_fraction(x, f"{source}: layer {n} {k}") for x in v) if isinstance(v, list)
                 else _fraction(v, f"{source}: layer {n} {k}")) for k, v in e.items()}
            for e in extras_data)
        layers.append(reference.Layer(heads["W_Q"], heads["W_K"], heads["W_V"],
                                      _matrix_from(ld.get("W_O"), f"{source}: layer {n} W_O"), extras))
    residual = data.get("residual")
    if not isinstance(residual, bool):
        raise BadInput(f"{source}: 'residual' must be true or false")
    if not isinstance(data.get("kind"), str):
        raise BadInput(f"{source}: 'kind' must be the name of an attention kind")
    return reference.Network(data["kind"], tuple(layers), residual)


def write_network_json(path: str | Path, net: reference.Network, meta: Mapping[str, Any] | None = None) -> Path:
    return write_json(path, network_to_json(net, meta))


def load_network(path: str | Path) -> reference.Network:
    """Read a weight file written by ``write_network_json`` back into exact Fractions."""
    return network_from_json(read_json(path), str(path))


def load_model(path: str | Path, device: str = "cpu", dtype: Any = None):
    """THE loader: a JSON weight file -> exact network -> torch ``AttentionModel``."""
    import torch

    from empirical.training.model import from_network

    return from_network(load_network(path), device=device, dtype=dtype or torch.float64)


# ----------------------------------------------------------------------------------------
# Float arrays.


def network_arrays(net: reference.Network) -> dict[str, Any]:
    """Float64 numpy arrays per layer ("L0.W_Q" [H, d, d], "L0.W_O" [d, H*d]) plus metadata."""
    import numpy as np

    arrays: dict[str, Any] = {"kind": np.array(net.kind), "residual": np.array(net.residual),
                              "feature_names": np.array(task.feature_names(net.d))}
    for n, layer in enumerate(net.layers):
        for name in MATRICES:
            arrays[f"L{n}.{name}"] = np.array([[[float(v) for v in row] for row in M]
                                               for M in getattr(layer, name)], dtype=np.float64)
        arrays[f"L{n}.W_O"] = np.array([[float(v) for v in row] for row in layer.W_O], dtype=np.float64)
    return arrays


def write_network_npz(path: str | Path, net: reference.Network) -> Path:
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **network_arrays(net))
    return write_atomic(path, lambda f: f.write(buffer.getvalue()), mode="wb")
