"""Weight files in, exact numbers out: every format ``sinks certify`` reads, as one ``Weights``.

Formats (files are data, never code):

- the project's JSON (``sinks construct --format json``: exact fraction strings) and npz
  (``allow_pickle=False``), read through ``empirical.weights.network_files``' loaders;
- a ``sinks train`` summary JSON with its ``weights`` (one entry per seed; ``select`` picks one);
- safetensors (keys as in the npz: ``L{l}.W_Q`` [H, d, d] ... ``L{l}.W_O`` [d, H*d], or the
  paper's state-dict keys below);
- a PyTorch state dict of the paper's original code, read with ``torch.load(weights_only=True)``:
  single head ``W_Q.weight``, ``W_K.weight``, ``W_V.weight``, ``W_O.weight`` (each d x d,
  ``nn.Linear`` so y = W x: the project's layout); several layers ``layers.{l}.W_Q.weight``
  [H*d, d] (head h in rows h*d..h*d+d-1; likewise W_K, W_V) and ``layers.{l}.W_O.weight``
  [d, H*d] (head h in columns h*d..h*d+d-1), always residual.

Every entry becomes an exact ``Fraction`` (a float is a dyadic rational), so the certificates
of ``proofs.certify`` work on the very numbers in the file. Wrong shapes, NaN / inf, unknown or
missing keys, a pickle that is not weights-only and every malformed container are ``BadInput``
(one line, exit 2 in the CLI); the containers are read by ``empirical.weights.readers``, which
checks every size a file declares before allocating.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

PAPER_SINGLE = ("W_Q.weight", "W_K.weight", "W_V.weight", "W_O.weight")
MATRICES = ("W_Q", "W_K", "W_V")


@dataclass(frozen=True)
class Loaded:
    label: str  # "seed 3", "weights", ...
    network: Any  # constructions.reference.Network with exact Fractions
    L: int | None = None  # the length the file says the weights were trained at (a training summary)


def _bad(path, what: str):
    from constructions.errors import BadInput

    return BadInput(f"{path}: {what}")


def _array(value, where: str, path):
    """``value`` as a float64 array; anything but a (possibly nested) list of real numbers is bad input."""
    import numpy as np

    try:
        a = np.asarray(value)
    except (ValueError, TypeError, OverflowError, RecursionError):  # ragged or odd nesting
        raise _bad(path, f"{where} is not a rectangular array of numbers") from None
    if a.dtype.kind not in "biuf":
        raise _bad(path, f"{where} is not an array of real numbers (holds {a.dtype})")
    return a.astype(np.float64)


def _matrix(array, shape: tuple[int, int], where: str, path) -> tuple[tuple[Fraction, ...], ...]:
    import numpy as np

    a = _array(array, where, path)
    if a.shape != shape:
        raise _bad(path, f"{where} has shape {list(a.shape)}, expected {list(shape)}")
    if not np.isfinite(a).all():
        raise _bad(path, f"{where} holds NaN or infinite values")
    return tuple(tuple(Fraction(float(v)) for v in row) for row in a)


def _network(kind: str, residual: bool, layers: list[dict[str, Any]], path) -> Any:
    """layers[l] = {W_Q: [H, d, d], W_K, W_V, W_O: [d, H*d]} (array-likes) -> exact Network."""
    from constructions import attention, reference

    if not isinstance(kind, str):
        raise _bad(path, f"the attention kind must be a name, got {kind!r}")
    attention.get(kind)
    if not layers:
        raise _bad(path, "no layers found")
    # H and d from layer 0's W_Q, then W_O against them: an error names the matrix that is wrong
    W_Q = _array(layers[0]["W_Q"], "layer 0 W_Q", path)
    if W_Q.ndim != 3 or W_Q.shape[0] < 1 or W_Q.shape[1] != W_Q.shape[2] or W_Q.shape[1] < 4:
        raise _bad(path, f"layer 0 W_Q has shape {list(W_Q.shape)}, expected [H, d, d] with H >= 1 and d >= 4")
    H, d = W_Q.shape[0], W_Q.shape[1]
    W_O = _array(layers[0]["W_O"], "layer 0 W_O", path)
    if W_O.shape != (d, H * d):
        raise _bad(path, f"layer 0 W_O has shape {list(W_O.shape)}, expected [{d}, {H * d}] (d x H*d, "
                         f"as W_Q is [{H}, {d}, {d}])")
    out = []
    for n, layer in enumerate(layers):
        mats = {}
        for name in MATRICES:
            a = _array(layer[name], f"layer {n} {name}", path)
            if a.ndim != 3 or a.shape[0] != H:
                raise _bad(path, f"layer {n} {name} has shape {list(a.shape)}, expected [{H}, {d}, {d}]")
            mats[name] = tuple(_matrix(a[h], (d, d), f"layer {n} {name} head {h}", path) for h in range(H))
        WO = _matrix(layer["W_O"], (d, H * d), f"layer {n} W_O", path)
        out.append(reference.Layer(mats["W_Q"], mats["W_K"], mats["W_V"], WO))
    return reference.Network(kind, tuple(out), residual)


def _layers_from_flat(arrays: dict[str, Any], path) -> list[dict[str, Any]]:
    """The npz / safetensors layout: L{l}.W_Q [H, d, d] ... L{l}.W_O [d, H*d]."""
    import re

    layers: dict[int, dict[str, Any]] = {}
    for key, value in arrays.items():
        m = re.fullmatch(r"L(\d+)\.(W_Q|W_K|W_V|W_O)", key)
        if not m:
            raise _bad(path, f"unknown key {key!r} (expected L<l>.W_Q / W_K / W_V / W_O, kind, residual)")
        layers.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return _complete(layers, path)


def _complete(layers: dict[int, dict[str, Any]], path) -> list[dict[str, Any]]:
    if sorted(layers) != list(range(len(layers))):
        raise _bad(path, f"layers must be numbered 0..{len(layers) - 1}, got {sorted(layers)}")
    for n, layer in layers.items():
        missing = [k for k in (*MATRICES, "W_O") if k not in layer]
        if missing:
            raise _bad(path, f"layer {n} lacks {', '.join(missing)}")
    return [layers[n] for n in range(len(layers))]


def _is_paper(keys) -> bool:
    return any(k.endswith(".weight") for k in keys)


def paper_layers(state: dict[str, Any], path) -> tuple[list[dict[str, Any]], bool]:
    """The paper's state dict -> (layers in the npz layout, residual)."""
    import re

    if set(PAPER_SINGLE) & set(state):
        extra = sorted(set(state) - set(PAPER_SINGLE))
        if extra:
            raise _bad(path, f"unknown key {extra[0]!r} in the paper's single-head state dict "
                             f"(expected {', '.join(PAPER_SINGLE)})")
        missing = sorted(set(PAPER_SINGLE) - set(state))
        if missing:
            raise _bad(path, f"the paper's single-head state dict lacks {', '.join(missing)}")
        return [{name: _array(state[f"{name}.weight"], f"{name}.weight", path)[None] for name in MATRICES} |
                {"W_O": _array(state["W_O.weight"], "W_O.weight", path)}], False
    layers: dict[int, dict[str, Any]] = {}
    for key, value in state.items():
        m = re.fullmatch(r"layers\.(\d+)\.(W_Q|W_K|W_V|W_O)\.weight", key)
        if not m:
            raise _bad(path, f"unknown key {key!r} in the paper's state dict (expected layers.<l>.W_Q.weight ...)")
        layers.setdefault(int(m.group(1)), {})[m.group(2)] = _array(value, key, path)
    for n, layer in _complete_items(layers, path):
        d = layer["W_O"].shape[0] if layer["W_O"].ndim == 2 else 0
        for name in MATRICES:
            W = layer[name]
            if d < 1 or W.ndim != 2 or W.shape[1] != d or W.shape[0] % d:
                raise _bad(path, f"layers.{n}.{name}.weight has shape {list(W.shape)}, expected [H*{d}, {d}]")
            layer[name] = W.reshape(W.shape[0] // d, d, d)  # head h: rows h*d .. h*d + d - 1
    return _complete(layers, path), True


def _complete_items(layers, path):
    return list(enumerate(_complete(layers, path)))


def _kind(asked: str | None, stated: Any, path) -> str:
    """The attention kind: the file's, else the one asked for, else softmax; both must agree."""
    if stated is not None and asked is not None and str(stated) != asked:
        raise _bad(path, f"the file's attention kind is {str(stated)!r}, but kind {asked!r} was asked for "
                         "(the kind is taken from the file; leave --kind out)")
    return str(stated) if stated is not None else (asked or "softmax")


def _from_arrays(arrays: dict[str, Any], meta: dict[str, Any], kind: str | None, path) -> Any:
    kind = _kind(kind, meta.get("kind"), path)
    if _is_paper(arrays):
        layers, residual = paper_layers(arrays, path)
    else:
        layers = _layers_from_flat(arrays, path)
        residual = meta.get("residual")
        residual = (str(residual).lower() == "true") if residual is not None else len(layers) > 1
    return _network(kind, bool(residual), layers, path)


def load(path, kind: str | None = None, seeds: list[int] | None = None) -> list[Loaded]:
    """Every network in the weight file ``path`` (a training summary holds one per seed)."""
    from pathlib import Path

    from constructions.files import read_json
    from empirical.weights import readers

    path = Path(path)
    if path.is_dir():
        raise _bad(path, "is a folder, not a weight file")
    if not path.is_file():
        raise _bad(path, "file not found")
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = read_json(path)
        if isinstance(data, dict) and "weights" in data and "config" in data:
            return _from_summary(data, seeds, path, kind)
        from empirical.weights.network_files import network_from_json

        net = network_from_json(data, str(path))
        _kind(kind, net.kind, path)
        return [Loaded("weights", net)]
    if suffix == ".npz":
        arrays = readers.read_npz(path)
        meta = {k: _scalar(arrays.pop(k), k, path) for k in ("kind", "residual") if k in arrays}
        arrays.pop("feature_names", None)
        return [Loaded("weights", _from_arrays(arrays, meta, kind, path))]
    if suffix == ".safetensors":
        arrays, meta = readers.read_safetensors(path)
        return [Loaded("weights", _from_arrays(arrays, meta, kind, path))]
    if suffix in (".pt", ".pth", ".bin"):
        arrays, key = readers.read_torch(path)
        label = "weights" if key is None else f"weights (the state dict under checkpoint key {key!r})"
        return [Loaded(label, _from_arrays(arrays, {}, kind, path))]
    raise _bad(path, f"unknown weight format {suffix!r} (json, npz, safetensors, pt / pth / bin)")


def _scalar(a, name: str, path) -> Any:
    if getattr(a, "ndim", None) != 0:
        raise _bad(path, f"{name!r} must be a single value, got an array of shape {list(getattr(a, 'shape', []))}")
    return a.item()


def networks_from_summary(data: dict, source: str = "training summary") -> list[Loaded]:
    """One exact network per seed of a ``sinks train`` summary (its stored weights)."""
    return _from_summary(data, None, source)


def _from_summary(data: dict, seeds: list[int] | None, path, kind: str | None = None) -> list[Loaded]:
    """One network per seed; d, L and the kind come from the summary (its config and weights
    must agree), and ``kind``, if asked for, must be the summary's."""
    weights, config = data["weights"], data["config"]
    if not isinstance(config, dict) or not isinstance(config.get("seeds"), list) or not isinstance(weights, list):
        raise _bad(path, "a training summary needs config.seeds and weights as lists")
    L = config.get("L")
    if L is not None and (type(L) is not int or L < 4):
        raise _bad(path, f"the training summary's config.L must be an integer >= 4, got {L!r}")
    members = list(zip(config["seeds"], weights))
    if len(members) != len(weights) or len(members) != len(config["seeds"]):
        raise _bad(path, "the training summary's weights do not match its seeds")
    for s, w in members:
        _check_member(w, f"weights of seed {s}", path)
        _kind(kind, w["kind"], path)
        for field in ("kind", "d"):
            stated = w.get(field, config.get(field))
            if config.get(field, stated) != stated:
                raise _bad(path, f"seed {s}: the weights' {field} {stated!r} is not the config's {config[field]!r}")
    if seeds is not None:
        unknown = sorted(set(seeds) - {s for s, _ in members})
        if unknown:
            raise _bad(path, f"seed(s) {unknown} not in this summary (it has {[s for s, _ in members]})")
        members = [(s, w) for s, w in members if s in seeds]
    out = []
    for s, w in members:
        net = _network(w["kind"], w["residual"], w["layers"], path)
        if w.get("d", net.d) != net.d:
            raise _bad(path, f"seed {s}: the weights are {net.d} x {net.d}, the summary says d = {w['d']}")
        out.append(Loaded(f"seed {s}", net, L))
    return out


def _check_member(w: Any, where: str, path) -> None:
    """One member's weights as ``model_weights`` writes them: kind, residual, layers of W_*."""
    if not isinstance(w, dict) or not isinstance(w.get("kind"), str) or not isinstance(w.get("residual"), bool):
        raise _bad(path, f"{where}: expected an object with 'kind' (a name), 'residual' (true / false) and 'layers'")
    layers = w.get("layers")
    if not isinstance(layers, list) or not layers:
        raise _bad(path, f"{where}: 'layers' must be a non-empty list")
    for n, layer in enumerate(layers):
        missing = [k for k in (*MATRICES, "W_O") if not isinstance(layer, dict) or k not in layer]
        if missing:
            raise _bad(path, f"{where}: layer {n} lacks {', '.join(missing)}")
