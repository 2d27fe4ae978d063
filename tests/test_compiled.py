"""The ``compiled`` formulation (empirical/training/compiled): the kernel built for the host, its layer
against the exact evaluator and against autograd of ``bmm`` (float64), its hand-written backward
by gradcheck (through the output, the pattern, both; the first layer's input without a gradient),
its float32 softmax (exp) against float64, the shape checks on the raw pointers it is given, the
build cache, and where it runs ``fused`` instead (other kinds and shapes, no compiler).
tests/test_formulations.py holds it, as chosen, to ``bmm`` in float32 at the 4 x 4 training shape."""

import pytest
import torch

from constructions import attention, native
from empirical.training import formulations as F
from empirical.training import model as M
from empirical.training.compiled import build
from empirical.training.compiled import layer as compiled_layer

import test_formulations
from test_formulations import restore_choice  # noqa: F401 (a fixture)
from test_fused import _grads, _inputs, assert_gradients_equal_bmms, assert_shared_batch_gradients_equal_bmms

KINDS = sorted(build.KINDS)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("sinks-cache")


@pytest.fixture(scope="module", autouse=True)
def built(cache):
    """The kernel at the shapes below (float64 and float32); a skip only where no compiler exists:
    with one, a source that no longer builds fails here instead of running ``fused`` unseen."""
    for L, d, dtype in ((8, 8, torch.float64), (4, 4, torch.float64), (16, 16, torch.float64), (16, 16, torch.float32)):
        if build.library(L, d, dtype, cache) is None:
            if build.compiler() is not None:
                pytest.fail(f"a compiler exists but the kernel did not build: "
                            f"{build.unavailable[(L, d, dtype, *build.host_target())]}")
            pytest.skip(f"the compiled kernel is not available here: {build.unavailable[(L, d, dtype, *build.host_target())]}")


def _kernel(L, d, dtype=torch.float64):
    return build._LOADED[(L, d, dtype, *build.host_target())]


@pytest.mark.parametrize("kind", attention.names())
@pytest.mark.parametrize("layers, heads, ensemble", [(1, 1, None), (2, 3, 2)])
def test_the_compiled_layer_equals_the_exact_reference(kind, layers, heads, ensemble):
    """d = L = 8, a shape the kernel is built for (softmax, ReLU; the other kinds run ``fused``)."""
    test_formulations.test_every_formulation_equals_the_exact_reference("compiled", kind, layers, heads, ensemble, d=8, L=8)


def test_an_ensemble_member_trained_with_the_compiled_layer_equals_its_single_run(restore_choice):  # noqa: F811
    """The formulations' test at d = L = 8, with its tolerances on the unit scale (see there): the
    2e-6 absolute tolerance against ``bmm`` this test had was measured on an Intel host (9e-7 at
    most there; Cephes' exp and the kernel's order of sums round differently from torch's); an AMD
    EPYC host moved a 0.00099 figure by 2.1e-6."""
    small = dict(test_formulations.SMALL, d=8, L=8, eval_trigger=5)
    test_formulations.test_an_ensemble_member_trained_with_each_formulation_equals_its_single_run(
        "compiled", None, small)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
@pytest.mark.parametrize("reads", ["output and pattern", "output", "pattern"])
def test_the_hand_written_backward_passes_gradcheck(kind, residual, x_grad, reads):
    S, B, L, d, H = 2, 3, 4, 4, 2
    xs, Gt, Mt = _inputs(S, B, L, d, H, seed=3)
    weights = torch.randn(S, B, L * H, L, generator=torch.Generator().manual_seed(5), dtype=torch.float64)

    def f(xs, Gt, Mt):
        out, pattern = compiled_layer.layer(_kernel(L, d), kind, xs, Gt, Mt, residual)
        return {"output and pattern": (out, pattern * weights), "output": out, "pattern": pattern * weights}[reads]

    assert torch.autograd.gradcheck(f, (xs.requires_grad_(x_grad), Gt.requires_grad_(), Mt.requires_grad_()))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", ["output", "output and pattern", "pattern"])
def test_gradients_equal_autograd_of_bmm_in_float64(kind, which):
    """The 4 x 4, 5-member training shape; the loss reads the output, the patterns, or both."""
    assert_gradients_equal_bmms("compiled", kind, which)


def test_a_batch_shared_by_every_member_and_a_single_model():
    """x [B, L, d] broadcast to the members (a stride-0 member dimension), and no ensemble at all."""
    assert_shared_batch_gradients_equal_bmms("compiled", L=8, d=8, node="_CompiledLayerBackward")


@pytest.mark.parametrize("L, d", [(4, 32), (32, 32)])
def test_the_extreme_shapes_equal_bmm(L, d, cache):
    """The smallest and largest L and d the source takes (one layer, two heads, float64):
    values, patterns and gradients as ``bmm``'s."""
    assert build.library(L, d, torch.float64, cache) is not None, build.unavailable.get((L, d, torch.float64))
    m = M.AttentionModel("softmax", d, layers=2, heads=2, residual=True, ensemble=2, seeds=range(2), dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(10)
    x = torch.rand(2, 3, L, d, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    (out, cache_c), (ref, cache_b) = m(x, formulation="compiled"), m(x, formulation="bmm")
    assert "_CompiledLayerBackward" in str(out.grad_fn.next_functions)
    assert torch.allclose(out, ref, rtol=1e-12, atol=1e-14) and torch.allclose(cache_c["L1.pattern"], cache_b["L1.pattern"])
    loss = lambda out, cache: out.pow(2).sum()  # noqa: E731
    for g, r in zip(_grads(m, x, "compiled", loss), _grads(m, x, "bmm", loss)):
        assert torch.allclose(g, r, rtol=1e-10, atol=1e-14 * r.abs().max())


NARROWER = {"AVX2": ("-mno-avx512f",), "SSE": ("-mno-avx512f", "-mno-avx2", "-mno-avx", "-mno-fma")}


@pytest.mark.parametrize("host, L, d, dtype", [("AVX2", 16, 16, torch.float32), ("SSE", 16, 16, torch.float64)])
def test_a_narrower_hosts_build_gives_the_same_numbers(host, L, d, dtype, cache):
    """The kernel built without AVX-512 (a row split into 32- or 16-byte parts) against this host's
    build: the same layer to 1e-12 in float64 (float32: 1e-5; FMA contraction and the order of the
    parts' sums differ), forward and backward."""
    if build.host_target():
        pytest.skip(f"${build.TARGET_VARIABLE} sets this run's build; the comparison with the native one runs without it")
    narrow = build.library(L, d, dtype, cache, target=NARROWER[host])
    if narrow is None:
        pytest.skip(f"no {host} build on this host: {build.unavailable[(L, d, dtype, *NARROWER[host])]}")
    native = build.library(L, d, dtype, cache)
    assert narrow.path != native.path  # the flags reach the build (they are in its hash)
    xs, Gt, Mt = _inputs(3, 4, L, d, 2, seed=9, dtype=dtype)
    gout, gpat = torch.randn(xs.shape, dtype=dtype), torch.randn(3, 4, L * 2, L, dtype=dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for kind in KINDS:
        got, want = narrow.forward(kind, True, xs, Gt, Mt), native.forward(kind, True, xs, Gt, Mt)
        got += narrow.backward(kind, True, xs, Gt, Mt, want[0], gout, gpat, True)
        want += native.backward(kind, True, xs, Gt, Mt, want[0], gout, gpat, True)
        for g, w in zip(got, want):
            assert torch.allclose(g, w, rtol=tol, atol=tol * w.abs().max())


@pytest.mark.parametrize("power", [-12, -4, 0, 3, 6])
def test_the_float32_softmax_equals_float64_to_rounding(power):
    """Cephes' exp in float32 against torch in float64 on the same scores: integer contents and
    weights times 2^power make every score exact in float32 (|s| < 2^16 * 2^power), so what
    differs is exp and the normalisation alone, from flat rows (2^-12) to scores of +-4e6 (no
    overflow, no NaN, exact zeros only where the weight is below float32's normal range)."""
    S, B, L, d, H = 1, 64, 16, 16, 4
    g = torch.Generator().manual_seed(7)
    xs = torch.randint(-1, 2, (S, B, L, d), generator=g).float()
    Gt = torch.randint(-3, 4, (S, d, H * d), generator=g).float() * 2.0 ** power
    a, _ = _kernel(16, 16, torch.float32).forward("softmax", False, xs, Gt, torch.zeros(S, H * d, d))
    y = torch.bmm(xs.double().view(S, B * L, d), Gt.double()).view(S * B, L * H, d)
    scores = torch.baddbmm(F.causal_bias(L, H, y), y, xs.double().view(S * B, L, d).transpose(1, 2))
    want = torch.softmax(scores, -1).view(a.shape)
    assert torch.isfinite(a).all()
    err = (a.double() - want).abs()
    assert (err <= 4e-7 * want + 1.2e-38).all()  # a few float32 ulps of each weight
    assert ((a == 0) <= (want < 1.2e-38)).all()


def test_a_tensor_of_the_wrong_shape_is_refused_before_the_kernel_reads_it():
    kernel = _kernel(8, 8)
    xs, Gt, Mt = _inputs(2, 3, 8, 8, 2)
    with pytest.raises(ValueError, match=r"shape \(2, 3, 8, 8\), got torch.float64 \(2, 3, 4, 8\)"):
        kernel.forward("softmax", True, xs[:, :, :4].contiguous(), Gt, Mt)
    with pytest.raises(ValueError, match="float32"):
        kernel.forward("softmax", True, xs.float(), Gt, Mt)
    with pytest.raises(ValueError, match="contiguous"):
        kernel.forward("softmax", True, xs.transpose(2, 3), Gt, Mt)
    a, _ = kernel.forward("softmax", True, xs, Gt, Mt)
    with pytest.raises(ValueError, match=r"\(2, 3, 16, 8\)"):
        kernel.backward("softmax", True, xs, Gt, Mt, a[:, :2].contiguous(), None, None, True)


@pytest.mark.parametrize("kind, L, d, runs", [
    ("softmax", 16, 16, "compiled"), ("relu", 16, 16, "compiled"), ("softmax", 8, 4, "compiled"),
    ("sigmoid_norm", 16, 16, "other"),  # a kind the kernel does not write out
    ("softmax", 6, 16, "other"),  # a length that is not a power of two
])
def test_where_the_compiled_layer_runs(kind, L, d, runs, restore_choice):  # noqa: F811
    m = M.AttentionModel(kind, d, layers=1, heads=2, ensemble=2, seeds=range(2))
    out, _ = m(torch.rand(2, 3, L, d), formulation="compiled")
    node = out.grad_fn.next_functions[0][0]  # under the model's view of the layer's output
    assert (node.name() == "_CompiledLayerBackward") == (runs == "compiled")
    if runs == "other" and kind == "softmax":
        assert "L=6" in build.unavailable[(L, d, torch.float32, *build.host_target())]


def test_without_a_compiler_nothing_is_built_and_the_reason_is_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(build, "compiler", lambda: None)
    monkeypatch.setattr(build, "_LOADED", {})
    assert build.library(8, 8, torch.float64, tmp_path) is None
    assert build.unavailable[(8, 8, torch.float64, *build.host_target())].startswith("no C++ compiler")
    assert not (tmp_path / "compiled").exists()


def test_a_build_is_cached_per_host_and_shape_and_written_whole(monkeypatch, tmp_path):
    monkeypatch.setattr(build, "_LOADED", {})
    assert build.library(8, 8, torch.float64, tmp_path) is not None
    built = [p.name for p in (tmp_path / "compiled").iterdir()]
    assert len(built) == 1 and built[0].startswith("attend-") and built[0].endswith(".so")  # no temporary left
    cxx = build.compiler()

    def name(flags):
        return native.library_path(build.SOURCE, flags, tmp_path, "attend", cxx).name

    names = {name([*build.FLAGS, *extra]) for extra in ([], ["-DLEN=4"], ["-DREAL_DOUBLE"], ["-mno-avx512f"])}
    assert len(names) == 4  # another shape, float type or target is another library
    monkeypatch.setattr(build, "_LOADED", {})

    def no_build(*args):
        raise AssertionError("rebuilt a cached library")

    monkeypatch.setattr(native, "_compile", no_build)
    assert build.library(8, 8, torch.float64, tmp_path) is not None  # loaded from the cache
    here = name(list(build.FLAGS))
    monkeypatch.setattr(native, "cpu_model", lambda: "another CPU")
    assert name(list(build.FLAGS)) != here  # and so is another machine (-march=native)


def test_the_kernel_flags_variable_builds_a_narrower_hosts_kernel(monkeypatch, tmp_path):
    """``$SINKS_KERNEL_FLAGS`` (CI's AVX2 step) reaches the build as ``target``, so the default
    library is the narrower host's, cached under its own name."""
    monkeypatch.setattr(build, "_LOADED", {})
    monkeypatch.setenv(build.TARGET_VARIABLE, "-mno-avx512f")
    assert build.host_target() == ("-mno-avx512f",)
    narrow = build.library(8, 8, torch.float64, tmp_path)
    if narrow is None:
        pytest.skip(f"no AVX2 build on this host: {build.unavailable[(8, 8, torch.float64, '-mno-avx512f')]}")
    assert narrow is build.library(8, 8, torch.float64, tmp_path, target=("-mno-avx512f",))
    monkeypatch.delenv(build.TARGET_VARIABLE)
    assert build.library(8, 8, torch.float64, tmp_path).path != narrow.path


def test_a_failed_build_is_a_reason_not_a_crash(monkeypatch, tmp_path):
    monkeypatch.setattr(build, "_LOADED", {})
    broken = tmp_path / "attend.cpp"
    broken.write_text("this is not C++\n")
    monkeypatch.setattr(build, "SOURCE", broken)
    assert build.library(8, 8, torch.float64, tmp_path) is None
    assert build.unavailable[(8, 8, torch.float64, *build.host_target())].startswith("the build failed")
    assert list((tmp_path / "compiled").iterdir()) == []


def test_a_training_summary_says_which_kernel_ran(restore_choice):  # noqa: F811
    from empirical.training import train as T

    F.use("compiled")
    small = dict(test_formulations.SMALL, d=8, L=8, eval_trigger=5)
    summary = T.train(T.TrainConfig(kind="softmax", layers=1, heads=1, seeds=(0,), max_steps=3, **small), quiet=True)
    kernels = summary["timing"]["formulation"]["kernels"]
    shape = " ".join(["L=8 d=8 float32", *build.host_target()])  # the flags of $SINKS_KERNEL_FLAGS are named
    assert kernels[shape] == build._LOADED[(8, 8, torch.float32, *build.host_target())].path.name
    assert kernels[shape].startswith("attend-")
    F.use("bmm")
    assert "kernels" not in T.train(T.TrainConfig(kind="softmax", layers=1, heads=1, seeds=(0,), max_steps=3, **small),
                                    quiet=True)["timing"]["formulation"]
