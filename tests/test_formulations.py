"""The formulations of the layer's products (empirical.training.formulations): each equals the exact
reference evaluator (float64) and the reference formulation bmm (float32, values and gradients);
an ensemble member trained with each equals its single run; the host's choice (margin, cache,
environment, bad names)."""

import dataclasses
import json

import pytest
import torch

from constructions import attention, reference, task
from constructions.errors import BadInput
from empirical.training import fastest
from empirical.training import formulations as F
from empirical.training import model as M
from empirical.training import train as T

from test_train import assert_same_numbers

NAMES = list(F.FORMULATIONS)
AUTOMATIC = [n for n, f in F.FORMULATIONS.items() if f.automatic]


def _random_model(kind, d, layers, heads, ensemble, dtype, scale=0.7, seed=0):
    m = M.AttentionModel(kind, d, layers=layers, heads=heads, residual=layers > 1, ensemble=ensemble,
                         seeds=list(range(ensemble or 1)), dtype=dtype)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for p in m.parameters():  # larger than the 0.02 init so every kind's nonlinearity matters
            p.copy_(torch.randn(p.shape, generator=g, dtype=dtype) * scale)
    return m


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", attention.names())
@pytest.mark.parametrize("layers, heads, ensemble", [(1, 1, None), (2, 3, 2)])
def test_every_formulation_equals_the_exact_reference(name, kind, layers, heads, ensemble, d=5, L=6):
    cfg = task.TaskConfig(d=d, L=L, residual=layers > 1)
    m = _random_model(kind, cfg.d, layers, heads, ensemble, torch.float64, seed=layers + heads)
    batch = task.sample(cfg, 3, torch.Generator().manual_seed(2), dtype=torch.float64)
    out, cache = m(batch.x, formulation=name)
    for e in range(ensemble or 1):
        net = M.to_network(m, member=None if ensemble is None else e)
        for b in range(batch.x.shape[0]):
            Y, patterns = reference.forward(net, batch.x[b].tolist(), "float")
            got = out[b] if ensemble is None else out[e, b]
            assert torch.allclose(got, torch.tensor(Y, dtype=torch.float64), atol=1e-12, rtol=1e-10)
            for n in range(layers):
                p = cache[f"L{n}.pattern"]
                p = p[b] if ensemble is None else p[e, b]
                assert torch.allclose(p, torch.tensor(patterns[n], dtype=torch.float64), atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind, dtype, tol", [
    ("softmax", torch.float32, 1e-4), ("sigmoid_norm", torch.float32, 1e-4),
    # ReLU is not differentiable at 0: a score within rounding of 0 takes the other branch in
    # float32, so its gradients are compared in float64, where no score is that close.
    ("relu", torch.float64, 1e-10),
])
def test_every_formulation_gives_bmms_values_and_gradients(name, kind, dtype, tol):
    """The training shape (4 x 4, 5 members): only the order of roundings differs."""
    m = _random_model(kind, 16, 4, 4, 5, dtype, scale=0.1)
    gens = [torch.Generator().manual_seed(s) for s in range(5)]
    batch = task.sample_members(task.TaskConfig(residual=True), 16, gens, dtype=dtype)
    results = {}
    for form in ("bmm", name):
        m.zero_grad()
        out, cache = m(batch.x, formulation=form)
        (out - batch.y).pow(2).mean().backward()
        results[form] = (out.detach(), cache["L3.pattern"].detach(), [p.grad.clone() for p in m.parameters()])
    ref, got = results["bmm"], results[name]
    assert torch.allclose(got[0], ref[0], rtol=tol / 10, atol=tol / 100)
    assert torch.allclose(got[1], ref[1], rtol=tol / 10, atol=tol / 1000)
    for g, r in zip(got[2], ref[2]):  # each gradient as a whole (float32 sums cancel in the first layers)
        assert (g - r).norm() <= tol * r.norm()


SMALL = dict(d=6, L=6, eval_trigger=3, lr=3e-3, eval_sequences=20, log_every=10)


@pytest.fixture
def restore_choice(monkeypatch, tmp_path):
    """Each test starts with nothing chosen and an empty cache; the suite's choice comes back."""
    saved = (list(F._CURRENT), list(F._HOW))
    monkeypatch.setenv(F.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(F.ENV, raising=False)
    F._CURRENT.clear()
    F._HOW.clear()
    yield
    F._CURRENT[:], F._HOW[:] = saved


@pytest.mark.parametrize("name", AUTOMATIC)
def test_an_ensemble_member_trained_with_each_formulation_equals_its_single_run(name, restore_choice, small=SMALL,
                                                                                to_bmm=(1e-4, 1e-4)):
    """Member 2 of three against seed 2 alone, then against ``bmm``'s run of seed 2, 25 float32 steps.

    The tolerances, to first order, with u = 2^-24 (float32), T = 25 steps, lr = 3e-3, and
    every figure (loss, error, weight) on the unit scale (O(1) terms; a mean near zero by
    cancellation, such as a vacuous bound's -0.005, carries its terms' absolute error, so the
    absolute tolerance equals the relative one):
    - A sum of n terms rounded in two orders differs by at most 2 gamma_n ~ 2 n u of the sum of
      its terms' magnitudes (Higham, Thm 3.1). Adam's step lr m/(sqrt(v) + eps) is at most lr in
      size (Kingma and Ba: (1 - beta1) = 0.1 < sqrt(1 - beta2) = 0.22), and a relative change rho
      of the gradient moves m and sqrt(v) by rho each, the step by at most 2 rho lr.
    - Member against single run: one product differs, MKL's batched 8 x 8 product rounds
      differently for 3 members than for 1 on an AMD EPYC host (W_Q and W_K's gradients differ in
      the last bit from step 1; bit-equal at d = 4, 6, 12, 16): rho <= 2 * 8u, so a weight moves by
      at most T * 2 rho * lr = 25 * 32u * 3e-3 = 1.4e-7, and a figure whose weight gradient has an
      l1 norm up to 7 moves by 1e-6 (measured: at most 1.1e-8, on AVX2 and AVX-512 builds).
    - Against ``bmm``: every reduction in another order (and Cephes' exp against torch's), about
      20 rounded reductions of length <= 8 in series per step over the two layers, forward and
      backward: rho <= 20 * 16u = 1.9e-5, a weight moves by at most 25 * 2 rho * 3e-3 = 2.9e-6,
      and the same l1 norm gives 2e-5; 1e-4 leaves a factor 5 for the reductions' count (measured:
      1.2e-6 for ``values``, 2.1e-6 for ``compiled`` at d = 8, on an AMD EPYC host).
    First order only: where sqrt(v) is at the scale of Adam's eps a rounding-scale gradient can
    turn a step, which no such bound covers; this test then fails, as it should. CI runs it under
    the AVX2 settings as well (``.ci/run``)."""
    F.use(name)
    cfg = T.TrainConfig(kind="softmax", layers=2, heads=2, seeds=(0, 1, 2), max_steps=25, **small)
    whole = T.train(cfg, quiet=True)
    alone = T.train(dataclasses.replace(cfg, seeds=(2,)), quiet=True)
    assert whole["timing"]["formulation"]["name"] == name
    view = lambda s, n: {"member": s["members"][n], "weights": s["weights"][n]}  # noqa: E731
    assert_same_numbers(view(alone, 0), view(whole, 2), rel=1e-6, abs_=1e-6)
    F.use("bmm")
    reference_run = T.train(dataclasses.replace(cfg, seeds=(2,)), quiet=True)
    assert_same_numbers(view(alone, 0), view(reference_run, 0), *to_bmm)  # the same training, rounded differently


def test_another_formulation_is_chosen_only_when_15_percent_faster():
    assert F.CHOICE_MARGIN == 0.15
    assert F.choose({"bmm": 1.0, "values": 0.80, "heads": 1.3}) == "values"  # a 2x margin (0.30) keeps bmm
    assert F.choose({"bmm": 1.0, "values": 0.90, "heads": 1.3}) == "bmm"  # half the margin (0.075) would switch
    assert F.choose({"bmm": 1.0, "heads": 1.2}) == "bmm"


def test_the_host_measures_once_caches_and_exports_its_choice(restore_choice, monkeypatch):
    calls = []

    def fake_measure():
        calls.append(1)
        return {"bmm": 1.0, "heads": 0.5, "values": 0.9}

    monkeypatch.setattr(fastest, "measure", fake_measure)
    assert fastest.choose_for_host("cpu") == ("heads", "measured")
    assert F.current() == "heads" and calls == [1]
    import os

    assert os.environ[F.ENV] == "heads"  # a sweep's workers inherit it
    cached = json.loads(F.cache_path().read_text())
    assert cached[F.host_key()]["formulation"] == "heads"
    # A new process on this host: the cache answers, nothing is measured.
    F._CURRENT.clear()
    monkeypatch.delenv(F.ENV)
    assert fastest.choose_for_host("cpu") == ("heads", "cache") and calls == [1]
    # The environment wins over the cache; a GPU is not measured.
    F._CURRENT.clear()
    monkeypatch.setenv(F.ENV, "values")
    assert fastest.choose_for_host("cpu") == ("values", "environment")
    F._CURRENT.clear()
    monkeypatch.delenv(F.ENV)
    F.cache_path().unlink()
    assert fastest.choose_for_host("cuda") == ("bmm", "default") and calls == [1]


def test_a_changed_kernel_or_kernel_flags_measure_the_host_again(monkeypatch, tmp_path):
    """The cached choice is keyed by the compiled kernel's source and ``$SINKS_KERNEL_FLAGS`` too:
    a host that chose ``bmm`` or ``fused`` before the kernel got faster measures again."""
    from empirical.training.compiled import build

    monkeypatch.delenv(build.TARGET_VARIABLE, raising=False)
    before = F.host_key()
    monkeypatch.setenv(build.TARGET_VARIABLE, "-mno-avx512f")
    assert F.host_key() != before
    monkeypatch.delenv(build.TARGET_VARIABLE)
    edited = tmp_path / "attend.cpp"
    edited.write_bytes(build.SOURCE.read_bytes() + b"\n// edited\n")
    monkeypatch.setattr(build, "SOURCE", edited)
    assert F.host_key() != before


def test_a_bad_formulation_name_is_bad_input(restore_choice, monkeypatch, tmp_path, capsys):
    from empirical.pipeline import cli

    monkeypatch.setenv(F.ENV, "fastest-please")
    with pytest.raises(BadInput, match="unknown formulation 'fastest-please'.*valid: bmm"):
        F.current()
    F._CURRENT.clear()
    out = tmp_path / "run.json"
    assert cli.main(["train", "--d", "6", "--L", "6", "--eval-trigger", "3", "--max-steps", "2",
                     "--eval-sequences", "5", "--quiet", "--device", "cpu", "--out", str(out)]) == 2
    assert not out.exists() and "unknown formulation" in capsys.readouterr().err


def test_the_measurement_times_every_automatic_formulation():
    seconds = fastest.measure(rounds=1, layers=1, heads=2, members=2, batch=4, steps=1)
    assert set(seconds) == set(AUTOMATIC) and all(0 < s < 10 for s in seconds.values())


def test_a_sweep_of_training_jobs_settles_the_formulation_once_in_its_driver(restore_choice, monkeypatch, tmp_path):
    """The driver measures (here: a stand-in) and its workers inherit the choice: no worker measures."""
    from empirical.pipeline.sweep import Job, run_sweep

    monkeypatch.setattr(fastest, "measure", lambda: {"bmm": 1.0, "values": 0.5, "heads": 2.0})
    jobs = [Job("empirical.train:train_job", T.TrainConfig(max_steps=2, **SMALL), (s,)) for s in (0, 1)]
    outcome = run_sweep(jobs, tmp_path / "runs", backend="process", workers=2)
    assert outcome.ok
    for job in jobs:
        assert outcome.records[job.run_id]["result"]["timing"]["formulation"] == {"name": "values",
                                                                                  "chosen_by": "environment"}
