"""Build ``attend.cpp`` for this host and one shape, once, and load it with ``ctypes``.

The library is compiled with the host's C++ compiler (``$CXX``, else ``g++``, else ``c++``) for
its own CPU (``-march=native``) with the sequence length and width fixed (``-DLEN -DDIM``: the
loops over keys and features become whole vector registers, of the host's width), and cached as
``<cache>/compiled/attend-<hash>.so`` by ``constructions.native`` (the hash covers the source,
the flags, the compiler's version, the host and the shape: a changed source or another machine
builds anew; the build is written whole, then renamed). Without a compiler, or for a shape the source does not take (L and d
powers of two from 4 to 32), ``library`` returns None with the reason in ``unavailable``, and the
``compiled`` formulation runs ``fused`` instead. The cache holds code: only this module's own
builds are loaded from it, by the name their hash gives them.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import torch

from constructions import native

SOURCE = Path(__file__).with_name("attend.cpp")
SIZES = (4, 8, 16, 32)  # L and d the source takes (vector extensions: powers of two)
# -mprefer-vector-width=512: GCC's default caps the loops it vectorises itself at 256 bits even
# where AVX-512 is there (the kernel's own vector types follow the host: attend.cpp's NATIVE);
# -ffp-contract=fast: multiply-adds as FMAs (the order of roundings changes, as in any BLAS).
FLAGS = ("-std=c++17", "-O3", "-march=native", "-mprefer-vector-width=512", "-ffp-contract=fast",
         "-fno-math-errno", "-shared", "-fPIC", "-Wno-psabi")
KINDS = {"softmax": 0, "relu": 1}
TARGET_VARIABLE = "SINKS_KERNEL_FLAGS"

_LOADED: dict[tuple, "Kernel | None"] = {}
unavailable: dict[tuple, str] = {}  # (L, d, dtype, *target flags) -> why no library


def record() -> dict:
    """What this process built or loaded, for a result's provenance: the library per shape (its
    file name carries the hash of source, flags, compiler, CPU and shape) or why there is none."""
    name = lambda key: " ".join([f"L={key[0]}", f"d={key[1]}", str(key[2]).removeprefix("torch."), *key[3:]])  # noqa: E731
    out = {name(k): v.path.name for k, v in _LOADED.items() if v is not None}
    out.update({name(k): f"not built: {why}" for k, why in unavailable.items() if _LOADED.get(k) is None})
    return out


def compiler() -> str | None:
    return native.compiler("c++")


class Kernel:
    """The two entry points of one built library, on contiguous CPU tensors of its dtype and
    shape (checked: the library reads raw pointers)."""

    def __init__(self, path: Path, L: int, d: int, dtype: torch.dtype):
        self.lib, self.path, self.L, self.d, self.dtype = ctypes.CDLL(str(path)), path, L, d, dtype
        P, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        self.lib.layer_forward.argtypes = [i32, i64, i64, i32, i32] + [P] * 5
        self.lib.layer_backward.argtypes = [i32, i64, i64, i32, i32] + [P] * 10

    def forward(self, kind: str, residual: bool, x, Gt, Mt):
        """x [S, B, L, d], Gt [S, d, H*d], Mt [S, H*d, d] -> pattern [S, B, L*H, L], out [S, B, L, d]."""
        S, B, H = self._check(x, Gt, Mt)
        a, out = x.new_empty(S, B, self.L * H, self.L), torch.empty_like(x)
        self.lib.layer_forward(KINDS[kind], S, B, H, int(residual), *(_ptr(t) for t in (x, Gt, Mt, a, out)))
        return a, out

    def backward(self, kind: str, residual: bool, x, Gt, Mt, a, gout, gpat, want_x: bool):
        """-> gx (None unless ``want_x``), gGt, gMt (None when ``gout`` is None: the loss read only
        the pattern); gout [S, B, L, d] or None, gpat (the pattern's gradient, like a) or None."""
        S, B, H = self._check(x, Gt, Mt)
        for t, like in ((a, (S, B, self.L * H, self.L)), (gout, x.shape), (gpat, (S, B, self.L * H, self.L))):
            if t is not None:
                self._same(t, like)
        gx = torch.empty_like(x) if want_x else None
        gGt, gMt = torch.empty_like(Gt), torch.empty_like(Mt) if gout is not None else None
        GtT, MtT = Gt.transpose(1, 2).contiguous(), Mt.transpose(1, 2).contiguous()
        self.lib.layer_backward(KINDS[kind], S, B, H, int(residual),
                                *(_ptr(t) for t in (x, Gt, GtT, MtT, a, gout, gpat, gx, gGt, gMt)))
        return gx, gGt, gMt

    def _check(self, x, Gt, Mt) -> tuple[int, int, int]:
        S, B = x.shape[:2]
        H = Gt.shape[-1] // self.d
        for t, like in ((x, (S, B, self.L, self.d)), (Gt, (S, self.d, H * self.d)), (Mt, (S, H * self.d, self.d))):
            self._same(t, like)
        return S, B, H

    def _same(self, t: torch.Tensor, shape) -> None:
        if tuple(t.shape) != tuple(shape) or t.dtype != self.dtype or not t.is_contiguous() or t.device.type != "cpu":
            raise ValueError(f"the compiled kernel (L={self.L}, d={self.d}, {self.dtype}) needs a contiguous CPU "
                             f"tensor of shape {tuple(shape)}, got {t.dtype} {tuple(t.shape)} on {t.device}")


def _ptr(t: torch.Tensor | None):
    return None if t is None else ctypes.c_void_p(t.data_ptr())


def library(L: int, d: int, dtype: torch.dtype, cache_dir: Path, target: tuple[str, ...] = ()) -> Kernel | None:
    """The kernel for sequences of L rows of width d in ``dtype`` (float32 or float64), built
    into ``cache_dir / "compiled"`` on first use; None (reason in ``unavailable``) if it cannot be.
    ``target``: flags after ``-march=native``, by default ``host_target()`` (the tests build
    ``-mno-avx512f`` to hold the narrower hosts' code to the same numbers)."""
    target = tuple(target) or host_target()
    key = (L, d, dtype) + target
    if key not in _LOADED:
        _LOADED[key] = _load(L, d, dtype, Path(cache_dir) / "compiled", target)
    return _LOADED[key]


def host_target() -> tuple[str, ...]:
    """Extra flags from ``$SINKS_KERNEL_FLAGS`` (e.g. ``-mno-avx512f``): the build of a narrower
    host on this one, so CI runs the AVX2 host's numbers on an AVX-512 machine (its vector paths round
    differently, and the tests that compare formulations' floats must hold there too)."""
    return tuple(os.environ.get(TARGET_VARIABLE, "").split())


def _load(L, d, dtype, folder: Path, target: tuple[str, ...] = ()) -> Kernel | None:
    key = (L, d, dtype) + target
    if L not in SIZES or d not in SIZES or dtype not in (torch.float32, torch.float64):
        unavailable[key] = f"the source takes L and d in {SIZES} and float32 or float64, not L={L}, d={d}, {dtype}"
        return None
    if compiler() is None:
        unavailable[key] = "no C++ compiler (set $CXX, or install g++)"
        return None
    flags = [*FLAGS, *target, f"-DLEN={L}", f"-DDIM={d}"] + (["-DREAL_DOUBLE"] if dtype == torch.float64 else [])
    path, why = native.build(SOURCE, flags, folder, "attend", "c++")
    if path is None:
        unavailable[key] = why
        return None
    return Kernel(path, L, d, dtype)
