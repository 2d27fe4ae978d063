"""How a layer's products are written, and which way this host runs fastest.

``empirical.training.model``'s layer computes, per sequence and head (``empirical/training/model.py`` derives it),

    s_ik = (G_h x_i) . x_k,   a_i = kind(s_i),   out_i = sum_h M_h sum_k a_ik x_k

with G_h = W_K^T W_Q and M_h = W_O^h W_V^h. The same numbers can be computed with different
products, and which is fastest depends on the host's BLAS: the per-sequence products are tiny
(16 x 16 blocks), and a BLAS tuned for one CPU vendor can run them at a quarter of its large-matrix
speed on another (measured: 12.5 against 51 GFLOP/s on an AMD EPYC host with MKL). Every
formulation below takes the layer and its input xs [S, B, L, d] and returns the output
[S, B*L, d] and the pattern [S, B, H, L, L] (query x key):

- ``bmm``: x G^T for all heads and members ([S, B*L, d] x [S, d, H*d]); scores per sequence with
  the heads stacked in the rows ([S*B, L*H, d] x [S*B, d, L], the causal -inf bias added inside
  the product by ``baddbmm``); z = a x per sequence; out = z M^T. Scores laid out
  [S, B, L, H, L], so no product needs a permute copy. The reference formulation.
- ``heads``: the per-sequence products batched over (member, sequence, head): [S*B*H, L, d] x
  [S*B*H, d, L] and back (16 x 16 blocks; the inputs repeated per head, z permuted for M).
- ``values``: values first: v = x M^T for all heads ([S, B*L, d] x [S, d, H*d]), then
  out = sum over (head, key) of a v per sequence ([S*B, L, H*L] x [S*B, H*L, d]): the second
  per-sequence product contracts over 64, not 16 (v permuted to (head, key) order).
- ``fused``: ``bmm``'s products member by member inside one ``torch.autograd.Function`` with a
  hand-written backward (``empirical/training/fused.py``: a member's tensors stay in cache between
  products, no zero gradient for the unused pattern, no autograd bookkeeping); softmax and ReLU
  where a member's pattern fills a block (the 4 x 4 reference shape); anything else runs ``bmm``.
- ``compiled``: the whole layer, forward and backward, as one C++ kernel built for the host and
  the shape on first use (``empirical/training/compiled``: GCC vector extensions, ``-march=native``, L
  and d fixed at compile time, loaded with ctypes; a sequence's rows stay in vector registers and
  no intermediate but the pattern goes through memory); softmax and ReLU on the CPU at L, d in
  4..32 (powers of two); anything else, or a host without a C++ compiler, runs ``fused``.
- ``einsum``: the contractions of ``bmm`` written as ``torch.einsum`` (torch plans them).
- ``broadcast``: scores and z as broadcast multiply-and-sum, no BLAS at all.

All of them are exact rewritings: in float64 each equals the exact evaluator to ~1e-15, and in
float32 they differ from ``bmm`` only by the order of roundings (``tests/test_formulations.py``).

Which one runs (``current()``): ``$SINKS_FORMULATION`` if set; else the choice cached for this
host (CPU model, logical CPUs, torch version and build, one thread) in
``$SINKS_CACHE_DIR`` (default ``~/.cache/attention-sinks-verified``)``/formulation.json``; else
``bmm``. Training measures before its first step when nothing is set or cached
(``empirical.training.fastest.choose_for_host``: a 4 x 4, 5-member float32 forward and backward of each
automatic formulation, interleaved rounds, process CPU time, each one's fastest round; about 3 s)
and caches the choice. ``choose`` keeps ``bmm`` unless another formulation is at least
``CHOICE_MARGIN`` faster, so noise cannot flip the choice from run to run. ``broadcast`` and
``einsum`` are measured by the benchmark but never chosen automatically (the first is many times
slower everywhere it was measured; the second runs ``bmm``'s kernels). Training records the name in
its summary, and a sweep of training jobs settles the name in its driver and exports it to
``$SINKS_FORMULATION``, which the worker processes inherit, so that every job uses the same one
(a run's members must not depend on which worker trained them; on a Ray cluster of different
hosts, set it in the workers' environment).
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from constructions import native
from constructions.errors import BadInput

ENV = "SINKS_FORMULATION"
CACHE_ENV = native.CACHE_ENV
DEFAULT = "bmm"
CHOICE_MARGIN = 0.15  # another formulation is chosen only when >= 15 % faster than bmm


# ----------------------------------------------------------------------------------------
# The causal mask and bias (shared by every formulation).

_MASKS: dict[tuple, torch.Tensor] = {}


def causal_mask(L: int, device: torch.device) -> torch.Tensor:
    """The [L, L] causal mask (True where key <= query), built once per length and device."""
    key = (L, str(device))
    if key not in _MASKS:
        _MASKS[key] = torch.ones(L, L, dtype=torch.bool, device=device).tril()
    return _MASKS[key]


def causal_bias(L: int, H: int, like: torch.Tensor) -> torch.Tensor:
    """0 where key <= query, -inf elsewhere, as [1, L*H, L] rows (query, head) for ``baddbmm``
    (H = 1: [1, L, L]); built once per length, heads, device and dtype."""
    key = (L, H, str(like.device), like.dtype)
    if key not in _MASKS:
        hidden = ~causal_mask(L, like.device).unsqueeze(1)  # [L, 1, L]
        bias = torch.zeros(L, 1, L, dtype=like.dtype, device=like.device).masked_fill(hidden, float("-inf"))
        _MASKS[key] = bias.expand(L, H, L).reshape(1, L * H, L)
    return _MASKS[key]


# ----------------------------------------------------------------------------------------
# The formulations. ``layer``: an ``empirical.training.model.AttentionLayer``; xs [S, B, L, d].


def _bmm(layer, xs: torch.Tensor, residual: bool):
    S, B, L, d = xs.shape
    H = layer.heads
    Gt, Mt = layer.maps()
    rows = xs.reshape(S * B, L, d)
    y = torch.bmm(xs.reshape(S, B * L, d), Gt)  # [S, B*L, H*d] = [S*B, L*H, d]
    scores = torch.baddbmm(causal_bias(L, H, xs), y.reshape(S * B, L * H, d), rows.transpose(1, 2))
    pattern = _weights(layer, scores.view(S, B, L, H, L), xs)
    z = torch.bmm(pattern.reshape(S * B, L * H, L), rows).view(S, B * L, H * d)  # [S*B, L*H, d]
    out = torch.baddbmm(xs.reshape(S, B * L, d), z, Mt) if residual else torch.bmm(z, Mt)  # [S, B*L, d]
    return out, pattern.transpose(-3, -2)  # [S, B, H, L, L], a view


def _weights(layer, scores: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
    """The kind's weights on scores [S, B, L, H, L] (keys last, already hidden)."""
    mask = causal_mask(scores.shape[-1], scores.device).unsqueeze(1)  # [L, 1, L]
    return layer.kind.weights_torch(scores, mask, layer.kind_extras(xs), hidden=True)


def _heads(layer, xs: torch.Tensor, residual: bool):
    S, B, L, d = xs.shape
    H = layer.heads
    Gt, Mt = layer.maps()
    y = torch.bmm(xs.reshape(S, B * L, d), Gt).view(S, B, L, H, d)
    yh = y.transpose(2, 3).reshape(S * B * H, L, d)  # (member, sequence, head) blocks
    rows = xs.unsqueeze(2).expand(S, B, H, L, d).reshape(S * B * H, L, d)
    scores = torch.baddbmm(causal_bias(L, 1, xs), yh, rows.transpose(1, 2)).view(S, B, H, L, L)
    mask = causal_mask(L, xs.device)
    extras = {k: v.transpose(-3, -2) for k, v in layer.kind_extras(xs).items()}  # [S, B, H, L or 1, 1]
    pattern = layer.kind.weights_torch(scores, mask, extras, hidden=True)  # [S, B, H, L, L]
    z = torch.bmm(pattern.reshape(S * B * H, L, L), rows).view(S, B, H, L, d)
    z = z.transpose(2, 3).reshape(S, B * L, H * d)
    out = torch.baddbmm(xs.reshape(S, B * L, d), z, Mt) if residual else torch.bmm(z, Mt)
    return out, pattern


def _values(layer, xs: torch.Tensor, residual: bool):
    S, B, L, d = xs.shape
    H = layer.heads
    Gt, Mt = layer.maps()
    rows = xs.reshape(S * B, L, d)
    y = torch.bmm(xs.reshape(S, B * L, d), Gt)
    scores = torch.baddbmm(causal_bias(L, H, xs), y.reshape(S * B, L * H, d), rows.transpose(1, 2))
    pattern = _weights(layer, scores.view(S, B, L, H, L), xs)  # [S, B, L, H, L]
    Mv = Mt.view(S, H, d, d).transpose(1, 2).reshape(S, d, H * d)  # v_k^h = M_h x_k for all heads
    v = torch.bmm(xs.reshape(S, B * L, d), Mv).view(S * B, L, H, d).transpose(1, 2).reshape(S * B, H * L, d)
    a = pattern.reshape(S * B, L, H * L)  # query x (head, key)
    out = torch.baddbmm(rows, a, v) if residual else torch.bmm(a, v)  # [S*B, L, d]
    return out.view(S, B * L, d), pattern.transpose(-3, -2)


def _einsum(layer, xs: torch.Tensor, residual: bool):
    S, B, L, d = xs.shape
    H = layer.heads
    Gt, Mt = layer.maps()
    y = torch.einsum("snd,sdh->snh", xs.reshape(S, B * L, d), Gt).reshape(S, B, L * H, d)
    scores = torch.einsum("sbqd,sbkd->sbqk", y, xs) + causal_bias(L, H, xs)
    pattern = _weights(layer, scores.view(S, B, L, H, L), xs)
    z = torch.einsum("sbqk,sbkd->sbqd", pattern.reshape(S, B, L * H, L), xs).reshape(S, B * L, H * d)
    out = torch.einsum("snh,shd->snd", z, Mt)
    return (out + xs.reshape(S, B * L, d) if residual else out), pattern.transpose(-3, -2)


def _broadcast(layer, xs: torch.Tensor, residual: bool):
    S, B, L, d = xs.shape
    H = layer.heads
    Gt, Mt = layer.maps()
    rows = xs.reshape(S * B, 1, L, d)
    y = torch.bmm(xs.reshape(S, B * L, d), Gt).reshape(S * B, L * H, 1, d)
    scores = (y * rows).sum(-1) + causal_bias(L, H, xs)  # [S*B, L*H, L]
    pattern = _weights(layer, scores.view(S, B, L, H, L), xs)
    z = (pattern.reshape(S * B, L * H, L, 1) * rows).sum(-2).view(S, B * L, H * d)
    out = torch.baddbmm(xs.reshape(S, B * L, d), z, Mt) if residual else torch.bmm(z, Mt)
    return out, pattern.transpose(-3, -2)


def _fused(layer, xs: torch.Tensor, residual: bool):
    from empirical.training import fused

    S, B, L, d = xs.shape
    H = layer.heads
    if not fused.supports(layer.kind.name) or not fused.pays(B, L * H, L):
        return _bmm(layer, xs, residual)
    Gt, Mt = layer.maps()
    out, pattern = fused.layer(layer.kind.name, xs, Gt, Mt, causal_bias(L, H, xs)[0], residual)
    return out, pattern.view(S, B, L, H, L).transpose(-3, -2)


def _compiled(layer, xs: torch.Tensor, residual: bool):
    from empirical.training.compiled import build, layer as compiled_layer

    S, B, L, d = xs.shape
    kernel = None
    if layer.kind.name in build.KINDS and xs.device.type == "cpu":
        kernel = build.library(L, d, xs.dtype, cache_path().parent)
    if kernel is None:
        return _fused(layer, xs, residual)
    Gt, Mt = layer.maps()
    out, pattern = compiled_layer.layer(kernel, layer.kind.name, xs, Gt, Mt, residual)
    return out, pattern.view(S, B, L, layer.heads, L).transpose(-3, -2)


@dataclass(frozen=True)
class Formulation:
    name: str
    layer: Callable  # (layer, xs [S, B, L, d], residual) -> (out [S, B*L, d], pattern [S, B, H, L, L])
    automatic: bool  # a candidate of the start-up choice
    summary: str


FORMULATIONS = {f.name: f for f in (
    Formulation("bmm", _bmm, True, "per-sequence products with the heads stacked in the rows ([S*B, L*H, d])"),
    Formulation("heads", _heads, True, "per-sequence products per head ([S*B*H, L, d]: 16 x 16 blocks)"),
    Formulation("values", _values, True, "values first, then one product over (head, key) per sequence"),
    Formulation("fused", _fused, True, "one autograd function per layer, one member's block of sequences at a time "
                "(softmax, ReLU; other kinds: bmm)"),
    Formulation("compiled", _compiled, True, "the whole layer, forward and backward, as a kernel compiled for the host "
                "and shape (empirical/training/compiled; softmax, ReLU on CPU; otherwise fused)"),
    Formulation("einsum", _einsum, False, "bmm's contractions as torch.einsum"),
    Formulation("broadcast", _broadcast, False, "per-sequence products as broadcast multiply-and-sum"),
)}


def record(name: str) -> dict:
    """What a result should say about how ``name`` ran in this process beyond its name: for
    ``compiled``, the kernels built or loaded per shape, or why none was (and ``fused`` ran)."""
    if name != "compiled":
        return {}
    from empirical.training.compiled import build

    return {"kernels": build.record()}


def get(name: str) -> Formulation:
    if name not in FORMULATIONS:
        raise BadInput(f"unknown formulation {name!r} (from ${ENV}); valid: {', '.join(FORMULATIONS)}")
    return FORMULATIONS[name]


# ----------------------------------------------------------------------------------------
# Which one runs.

_CURRENT: list[str] = []  # the resolved name, once
_HOW: list[str] = []


def current() -> str:
    """The formulation every layer uses in this process (resolved on first use)."""
    if not _CURRENT:
        resolve()
    return _CURRENT[0]


def resolve() -> tuple[str, str]:
    """(name, how it was chosen: "environment", "cache" or "default") for this process,
    exported to $SINKS_FORMULATION for its child processes. Nothing is measured here:
    ``empirical.training.fastest.choose_for_host`` measures (training calls it before its first step)."""
    if _CURRENT:
        return _CURRENT[0], _HOW[0]
    name, how = os.environ.get(ENV), "environment"
    if name:
        get(name)
    else:
        name, how = _cached(), "cache"
        if name is None:
            name, how = DEFAULT, "default"
    _set(name, how)
    return name, how


def _set(name: str, how: str) -> None:
    _CURRENT[:], _HOW[:] = [name], [how]
    os.environ[ENV] = name


def use(name: str, how: str = "set") -> None:
    """Make ``name`` the formulation of this process (and of the processes it starts)."""
    get(name)
    _set(name, how)


def choose(seconds: dict[str, float], margin: float = CHOICE_MARGIN) -> str:
    """The fastest of ``seconds`` (name -> time of the same work) if it beats ``bmm`` by at least
    ``margin`` (a fraction of bmm's time), else ``bmm``."""
    best = min(seconds, key=seconds.get)
    if DEFAULT in seconds and seconds[best] > (1 - margin) * seconds[DEFAULT]:
        return DEFAULT
    return best


def host_key() -> str:
    """What the choice depends on: the CPU, the torch build, one thread, and the compiled kernel
    (its source and ``$SINKS_KERNEL_FLAGS``: a host that chose before a faster kernel measures again)."""
    import hashlib

    from empirical.training.compiled import build

    blas = "mkl" if torch.backends.mkl.is_available() else "other"
    kernel = hashlib.sha256(build.SOURCE.read_bytes() + " ".join(build.host_target()).encode()).hexdigest()[:12]
    return (f"{native.cpu_model()}|{os.cpu_count()}|{platform.machine()}|torch {torch.__version__}|{blas}|1 thread"
            f"|kernel {kernel}")


def cache_path() -> Path:
    return native.cache_dir() / "formulation.json"


def _cached() -> str | None:
    try:
        data = json.loads(cache_path().read_text())
        name = data[host_key()]["formulation"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return name if name in FORMULATIONS else None


def store(name: str) -> None:
    """Add this host's choice to the cache file (atomically; a cache that cannot be written is
    skipped: the next process measures again)."""
    from constructions.files import write_json

    path = cache_path()
    try:
        data = json.loads(path.read_text())
        data = data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        data = {}
    data[host_key()] = {"formulation": name, "measured": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, data)
    except OSError:
        pass
