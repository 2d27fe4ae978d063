"""The trigger bounds' three inner loops as compiled code (``dual.c``), with the numpy code as the
reference and the fallback: the dual per key, the screen per (cell, point), and the search over
the refined grid (``trigger.grid.bound_over``).

``dual.c`` is compiled once per host with the C compiler (``$CC``, else ``gcc``, else ``cc``) by
``constructions.native`` (cached by a hash of the source, flags, compiler and CPU; written
atomically) with ``-O3 -march=native -ffp-contract=off``: no fast-math, no fused multiply-adds,
so every operation is the rounded operation of the numpy code and the same a-priori rounding
allowance holds. Without a compiler, or when the build fails, ``kernels()`` is None with the
reason in ``unavailable`` and the callers run numpy (the same bounds, slower);
``SINKS_NATIVE=off`` forces numpy. ``tests/test_native.py`` holds the two to each other.
"""

from __future__ import annotations

import ctypes
import math
import os
from pathlib import Path

import numpy as np

from constructions import native

SOURCE = Path(__file__).with_name("dual.c")
FLAGS = ("-std=c11", "-O3", "-march=native", "-ffp-contract=off", "-shared", "-fPIC")
OFF_ENV = "SINKS_NATIVE"

_LOADED: dict[str, "Kernels | None"] = {}
unavailable: dict[str, str] = {}

_D = ctypes.c_void_p  # every array is passed as the address of contiguous float64 data


def _p(a: np.ndarray | None):
    return None if a is None else a.ctypes.data


def _c(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


_SLICES: dict[tuple[float, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _slices(U: float, slices: int):
    """edges, y = e^edges and the slices' middle y: the same numbers as trigger.dual's (cached)."""
    key = (float(U), int(slices))
    if key not in _SLICES:
        edges = np.linspace(-U, U, slices + 1)
        y = np.exp(edges)
        _SLICES[key] = (edges, y, (y[:-1] + y[1:]) / 2)
        if len(_SLICES) > 4096:
            _SLICES.clear()
    return _SLICES[key]


class Kernels:
    """``dual_min`` and ``screen_cells`` of one built library (arrays checked and made contiguous
    float64 before their pointers are passed)."""

    def __init__(self, path: Path):
        self.path, self.lib = path, ctypes.CDLL(str(path))
        i, L, d = ctypes.c_int, ctypes.c_long, ctypes.c_double
        self.lib.dual_min.argtypes = [L, i, i, i, i, _D, d, _D, _D, _D, _D, _D, _D, _D, _D, _D, _D]
        self.lib.dual_min.restype = None
        self.lib.screen_cells.argtypes = [i, L, i, i] + [_D] * 20 + [_D]
        self.lib.screen_cells.restype = d
        I = ctypes.POINTER(ctypes.c_int)
        self.lib.bound_over.argtypes = [i, _D, _D, _D, _D, _D, _D, d, d, d, i, _D, _D, I, _D, I]
        self.lib.bound_over.restype = d

    def dual_min(self, beta, eps, alpha0, alpha1, g, h, Y, Tn, Tp, multipliers: bool):
        """trigger.dual.dual_min's (best [B], size [B], mu [B, S] or None)."""
        beta, alpha0, alpha1, g, h = _c(beta), _c(alpha0), _c(alpha1), _c(g), _c(h)
        Y, Tn, Tp = _c(Y), _c(Tn), _c(Tp)
        B, n = g.shape
        S = Y.shape[-2]
        beta_per = beta.ndim == 2 and beta.shape[0] == B and B > 1
        slices_per = Y.shape[0] == B and B > 1
        ok = (n <= 64 and h.shape == (B, n) and alpha0.shape == alpha1.shape == (B,) and beta.shape[-1] == n
              and Y.shape == Tn.shape == Tp.shape and Y.shape[-1] == 2 and Y.shape[0] in (1, B))
        if not ok:
            raise ValueError(f"dual_min: shapes alpha {alpha1.shape}, g {g.shape}, h {h.shape}, beta {beta.shape}, Y {Y.shape}")
        if beta.ndim == 2 and not beta_per:
            beta = _c(beta[0])
        best, size = np.empty(B), np.empty(B)
        mu = np.empty((B, S)) if multipliers else None
        self.lib.dual_min(B, n, S, int(beta_per), int(slices_per), _p(beta), float(eps), _p(alpha0), _p(alpha1),
                          _p(g), _p(h), _p(Y), _p(Tn), _p(Tp), _p(best), _p(size), _p(mu))
        return best, size, mu

    def screen_cells(self, Xa, Xb, L, mu, lam_ref, arrays: dict, row: np.ndarray, U: float, slices: int):
        """Row._cells's per (cell, point) bounds [C, P] (before the allowance) and the largest size
        met (without the own-key part)."""
        L = _c(L)
        C, P = L.shape
        n = arrays["betaT"].shape[0]
        edges, y, ym = _slices(U, slices)
        mu = _c(mu)
        if mu.shape != (2, C, slices) or arrays["betaT"].shape != (n, P):
            raise ValueError(f"screen_cells: shapes L {L.shape}, mu {mu.shape}, betaT {arrays['betaT'].shape}")
        out = np.empty((C, P))
        parts = [_c(arrays[k]) for k in ("Wlo", "Whi", "w0lo", "w0hi", "wolo", "wohi", "vo", "to", "betaT", "vC", "hh")]
        size = self.lib.screen_cells(C, P, n, slices, _p(_c(Xa)), _p(_c(Xb)), _p(L), _p(mu),
                                     _p(None if lam_ref is None else _c(lam_ref)), *(_p(a) for a in parts),
                                     _p(_c(row)), _p(y), _p(edges), _p(ym), _p(out))
        if size < 0:
            raise MemoryError("screen_cells: out of memory")
        return out, float(size)


    def bound_over(self, values: np.ndarray, widths, kappa, adds, tail, room: float, target: float, leaf: float,
                   hot_max: int):
        """trigger.grid._search's (figure, hot [(value, refined-grid index)], where or None)."""
        values, widths, kappa, adds, tail = _c(values), _c(widths), _c(kappa), _c(adds), _c(tail)
        n = values.ndim
        if not (widths.shape == kappa.shape == adds.shape == (n,) and tail.shape == (n + 1,) and n <= 64
                and all(1 <= s <= 64 for s in values.shape)):
            raise ValueError(f"bound_over: shapes values {values.shape}, widths {widths.shape}, tail {tail.shape}")
        shape = np.array(values.shape, dtype=np.int64)
        hot_vals, hot_idx, where = np.empty(hot_max), np.empty((hot_max, n), dtype=np.intc), np.empty(n, dtype=np.intc)
        count, found = ctypes.c_int(0), ctypes.c_int(0)
        figure = self.lib.bound_over(n, _p(shape), _p(values), _p(widths), _p(kappa), _p(adds), _p(tail), float(room),
                                     float(target), float(leaf), int(hot_max), _p(hot_vals), _p(hot_idx),
                                     ctypes.byref(count), _p(where), ctypes.byref(found))
        if math.isnan(figure):
            raise MemoryError("bound_over: out of memory")
        hot = [(float(hot_vals[e]), tuple(int(g) for g in hot_idx[e])) for e in range(count.value)]
        return figure, hot, tuple(int(g) for g in where) if found.value else None


def kernels() -> Kernels | None:
    """The compiled kernels for this host (built on first use), or None (the reason in ``unavailable``)."""
    if os.environ.get(OFF_ENV, "").lower() in ("off", "0", "no"):
        unavailable["dual"] = f"{OFF_ENV}=off"
        return None
    if "dual" not in _LOADED:
        path, why = native.build(SOURCE, FLAGS, native.cache_dir() / "certify", "dual", language="c")
        _LOADED["dual"] = Kernels(path) if path else None
        if why:
            unavailable["dual"] = why
    return _LOADED["dual"]


def record() -> dict:
    """What this process used, for a result's provenance."""
    k = _LOADED.get("dual")
    return {"dual": k.path.name if k else f"numpy ({unavailable.get('dual', 'not built yet')})"}
