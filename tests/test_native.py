"""The trigger bounds' compiled inner loops (proofs/certify/arithmetic/dual.c, loaded by proofs.certify.arithmetic.native)
against their numpy reference, and the shared build cache (constructions.native): the same numbers
(to rounding), the same bounds through the public functions, numpy when there is no compiler or
SINKS_NATIVE=off, and a build keyed by source, flags and host."""

import numpy as np
import pytest

from constructions import native as build
from proofs.certify.arithmetic import native
from proofs.certify.head.trigger import dual as td


def kernels_or_skip():
    k = native.kernels()
    if k is None:
        pytest.skip(f"no compiled kernels here: {native.unavailable.get('dual')}")
    return k


def _batch(rng, B, n, per_element):
    beta = rng.normal(0, 1e-3, (B if per_element else 1, n)) * (rng.random((B if per_element else 1, n)) > 0.15)
    return beta, rng.normal(0, 0.05, B), rng.normal(0, 1e-3, (B, n)), rng.normal(0, 1e-3, (B, n))


def _numpy_and_compiled(monkeypatch, f):
    monkeypatch.setenv(native.OFF_ENV, "off")
    reference = f()
    monkeypatch.delenv(native.OFF_ENV)
    return reference, f()


@pytest.mark.parametrize("per_element", [False, True])
def test_the_compiled_dual_equals_numpy(per_element, monkeypatch):
    kernels_or_skip()
    rng = np.random.default_rng(0)
    for _ in range(60):
        n, S = int(rng.integers(1, 14)), int(rng.integers(1, 5))
        beta, alpha, g, h = _batch(rng, 30, n, per_element)
        U = float(np.abs(beta).sum(1).max() * 1.5 + 1e-4)
        Y, Tn, Tp = td.slice_ends(U, S)
        if per_element:  # per-element slices and an alpha0, as the single-key bound passes them
            Y, Tn, Tp = (np.repeat(a, 30, axis=0) * (1 + 0.01 * rng.random((30, 1, 1))) for a in (Y, Tn, Tp))
        a0 = rng.normal(0, 0.01, 30) if per_element else np.zeros(30)
        (best, size, mu), (cbest, csize, cmu) = _numpy_and_compiled(
            monkeypatch, lambda: td.dual_min(beta, 1e-15, a0, alpha, g, h, Y, Tn, Tp, True, True))
        assert np.allclose(cbest, best, rtol=0, atol=1e-13 * (1 + np.abs(best).max()))
        assert np.allclose(csize, size, rtol=1e-12)
        assert cmu.shape == mu.shape  # the multipliers may differ where candidates tie (same value)


def test_the_compiled_screen_equals_numpy(monkeypatch):
    from tests.test_trigger_vertices import position_and_row

    kernels_or_skip()
    P, row = position_and_row(d=6, j=4, seed=3, scale=0.05)
    fitted, _ = row.fit(0, 4)
    idx = np.arange(len(row.pts))
    out = {}
    for mode in ("on", "off"):
        monkeypatch.setenv(native.OFF_ENV, mode)
        out[mode] = (row.screen(idx, fitted), row.screen(idx, fitted, steps=6))
    for a, b in zip(out["on"], out["off"]):
        assert np.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_the_compiled_grid_search_equals_numpy_bit_for_bit(monkeypatch):
    """trigger_grid.bound_over in C does the numpy search's operations in its order, so the figure,
    the hot entries (ties in the order found) and where are identical, not merely close: random
    grids of 1-8 axes, values with ties, every kind of target and leaf size; then the public
    function with and without the kernels."""
    from proofs.certify.head.trigger import grid as tg

    k = kernels_or_skip()
    rng = np.random.default_rng(5)
    for trial in range(120):
        n = int(rng.integers(1, 9))
        values = rng.random(tuple(int(x) for x in rng.integers(1, 5, n)))
        if trial % 3 == 0:
            values = np.round(values * 4) / 4  # ties, which the order of the hot entries must keep
        widths, kappa = rng.random(n) + 0.1, rng.random(n) * 0.1
        adds, room = kappa * widths ** 2 / 4, tg.allowance(values, widths, kappa)
        tail = np.concatenate([np.cumsum(adds[::-1])[::-1], [0.0]])
        for target in (-np.inf, float(np.quantile(values, 0.7)), float(values.max()) + 1):
            for leaf in (1, 9, 2 ** 14):
                assert k.bound_over(values, widths, kappa, adds, tail, room, target, leaf, tg.HOT_ENTRIES) == \
                    tg._search(values, widths, kappa, adds, tail, room, target, leaf)
    values, widths, kappa = rng.random((3, 2, 4, 2)), np.array([0.5, 2.0, 0.25, 2.0]), rng.random(4) * 0.05
    (f0, hot0, at0), (f1, hot1, at1) = _numpy_and_compiled(
        monkeypatch, lambda: tg.bound_over(values, widths, kappa, float(np.quantile(values, 0.8)), leaf=9))
    assert f0 == f1 and np.array_equal(hot0, hot1) and at0 == at1


def test_without_the_kernels_numpy_gives_the_bound(monkeypatch):
    monkeypatch.setenv(native.OFF_ENV, "off")
    assert native.kernels() is None and native.unavailable["dual"] == f"{native.OFF_ENV}=off"


def test_no_compiler_is_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "")
    monkeypatch.setattr(build, "compiler", lambda language="c++": None)
    path, why = build.build(native.SOURCE, native.FLAGS, tmp_path, "dual", language="c")
    assert path is None and why.startswith("no C compiler")
    assert not any(tmp_path.iterdir())


def test_a_build_is_cached_by_source_flags_and_host(monkeypatch, tmp_path):
    if build.compiler("c") is None:
        pytest.skip("no C compiler")
    path, why = build.build(native.SOURCE, native.FLAGS, tmp_path, "dual", language="c")
    assert why is None and path.exists() and [p.name for p in tmp_path.iterdir()] == [path.name]  # written whole

    def no_build(*args):
        raise AssertionError("rebuilt a cached library")

    monkeypatch.setattr(build, "_compile", no_build)
    assert build.build(native.SOURCE, native.FLAGS, tmp_path, "dual", language="c") == (path, None)
    cc = build.compiler("c")
    assert build.library_path(native.SOURCE, [*native.FLAGS, "-DX"], tmp_path, "dual", cc) != path
    monkeypatch.setattr(build, "cpu_model", lambda: "another CPU")
    assert build.library_path(native.SOURCE, native.FLAGS, tmp_path, "dual", cc) != path


def test_a_failed_build_is_a_reason(tmp_path):
    if build.compiler("c") is None:
        pytest.skip("no C compiler")
    broken = tmp_path / "broken.c"
    broken.write_text("this is not C\n")
    path, why = build.build(broken, native.FLAGS, tmp_path / "out", "broken", language="c")
    assert path is None and why.startswith("the build failed")
