"""``empirical.lm.crosscheck`` against the probe's own output on a tiny random Llama: the probe
command writes ``probe.json`` for a saved tiny model, each cross-check recomputes its figures
without the probe's code and must agree, and must disagree on a planted defect. The tolerance
rules are pinned (the factor 2 both ways)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from empirical.lm import load
from tests.test_lm_probe import _tokenizer_folder, tiny_llama

needs_lm = pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")


@pytest.fixture(scope="module")
def probe_out(tmp_path_factory):
    """A probe run of a tiny random Llama (BOS first, every head ablated on every text)."""
    from empirical.pipeline import cli

    root = tmp_path_factory.mktemp("crosscheck")
    folder = root / "tiny"
    tiny_llama(layers=3).save_pretrained(folder)
    _tokenizer_folder(folder)
    texts = root / "texts.txt"
    gen = np.random.default_rng(0)
    texts.write_text("\n".join(" ".join(f"w{i}" for i in gen.integers(2, 48, 14)) for _ in range(6)) + "\n")
    out = root / "out"
    assert cli.main(["probe", str(folder), "--texts", str(texts), "--tokens", "12", "--bos", "--ablation-texts", "4",
                     "--screen-texts", "0", "--bound-texts", "5", "--family-texts", "6", "--batch", "3",
                     "--threads", "1", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def run(probe_out):
    from empirical.lm.crosscheck import source

    return source.open_run(probe_out)


@needs_lm
def test_families_agree_and_a_score_without_query_0_does_not(run, monkeypatch):
    from empirical.lm.crosscheck import checks

    pairs = checks.families(run)
    assert [p.agrees for p in pairs] == [True] * 3, [p.line() for p in pairs]
    assert len({p.probe for p in pairs}) > 1  # the families differ: the check compares something
    plain = checks.alpha0

    def without_query_0(model, ids, batch=17):  # planted: Gu's sum over queries 1..T-1 only
        T = ids.shape[1]
        with torch.no_grad():
            att = model.model(input_ids=ids, output_attentions=True).attentions
        return torch.stack([a[..., 1:, 0].double().sum(-1) / T for a in att], dim=1).numpy()

    monkeypatch.setattr(checks, "alpha0", without_query_0)
    assert not all(p.agrees for p in checks.families(run))
    monkeypatch.setattr(checks, "alpha0", plain)


@needs_lm
def test_an_ablation_agrees_and_skipping_the_renormalisation_does_not(run):
    from empirical.lm.crosscheck import checks

    changes = {r["name"]: r["ablation"]["removed"]["loss_change"] for r in run.record["heads"]}
    biggest = max(changes, key=lambda k: abs(changes[k]))
    for head in (biggest, "L0H0"):
        pairs = checks.ablation(run, head, texts=4, reference_texts=2)
        assert [p.agrees for p in pairs] == [True, True], [p.line() for p in pairs]
    assert abs(changes[biggest]) > 1e-3  # large enough that the defect below moves it past the tolerance
    bad = checks.ablation(run, biggest, texts=4, reference_texts=2, renormalise=False)[0]
    assert not bad.agrees, bad.line()


@needs_lm
def test_dormancy_agrees_and_a_doubled_dormant_fraction_does_not(run, monkeypatch):
    from empirical.lm.crosscheck import checks

    pairs = checks.dormancy(run)
    assert all(p.agrees for p in pairs), [p.line() for p in pairs]
    assert 0 < pairs[0].probe < 1  # some pairs dormant, some not
    monkeypatch.setattr(checks, "DORMANT_FRACTION", 2 * checks.DORMANT_FRACTION)
    assert not checks.dormancy(run)[0].agrees


# ---- the tolerance rules, pinned --------------------------------------------------------------


def test_threshold_margin_is_twice_the_rounding_gap():
    """An entry 1.5 gaps from the threshold is ambiguous, one 3 gaps away is not: halving SAFETY
    drops the first, doubling it takes in the second."""
    from empirical.lm.crosscheck import tolerance

    ref = np.array([0.3 + 1.5e-6, 0.3 - 1.5e-6, 0.3 + 3e-6, 0.3 - 3e-6])
    sure, maybe = tolerance.above(ref, 0.3, 1e-6)
    assert sure.tolist() == [False, False, True, False] and maybe.tolist() == [True, True, True, False]
    assert tolerance.percentage_interval(ref, 0.3, 1e-6) == (25.0, 75.0)
    assert tolerance.percentage_interval(ref, 0.3, 0.0) == (50.0, 50.0)  # no gap: one point


def test_loss_tolerance_is_twice_the_summed_gaps_with_a_float32_floor():
    from empirical.lm.crosscheck import tolerance

    assert tolerance.loss_tolerance(1e-6, 2e-6, 3.0) == pytest.approx(6e-6, rel=1e-12)
    assert tolerance.loss_tolerance(0.0, 0.0, 3.0) == float(np.spacing(np.float32(3.0)))
    p = tolerance.within("x", 1.0 + 5e-6, 1.0, tolerance.loss_tolerance(1e-6, 2e-6, 3.0))
    assert p.agrees and not tolerance.within("x", 1.0 + 7e-6, 1.0, 6e-6).agrees


def test_ratio_interval_takes_the_extremes():
    """Four heads: A sure member with the property, B sure member without, C possible member that
    may have it, D sure member that may have it. Smallest: A of {A, B, C, D}; largest: {A, C, D} of
    {A, B, C, D}."""
    from empirical.lm.crosscheck import tolerance

    sure_in, maybe_in = np.array([1, 1, 0, 1], bool), np.array([1, 1, 1, 1], bool)
    sure_yes, maybe_yes = np.array([1, 0, 0, 0], bool), np.array([1, 0, 1, 1], bool)
    assert tolerance.ratio_interval(sure_in, maybe_in, sure_yes, maybe_yes) == (0.25, 0.75)


# ---- the command ------------------------------------------------------------------------------


@needs_lm
def test_command_prints_the_pairs_and_writes_its_record(probe_out, tmp_path, capsys):
    from empirical.lm.crosscheck.__main__ import main

    record = tmp_path / "x.json"
    assert main(["ablation", str(probe_out), "--head", "L1H2", "--texts", "4", "--reference-texts", "1",
                 "--json", str(record)]) == 0
    out = capsys.readouterr().out
    assert "L1H2 removed" in out and "agrees" in out and "DISAGREES" not in out
    data = json.loads(record.read_text())
    assert data["pairs"][0]["agrees"] and data["provenance"]["versions"]["torch"]


@needs_lm
@pytest.mark.parametrize("args, needle", [
    (["ablation", "{out}", "--head", "X1"], "--head must look like"),
    (["ablation", "{out}", "--head", "L0H0", "--texts", "2"], "give --texts 4"),
    (["dormancy", "{missing}"], "no probe.json"),
])
def test_bad_input_is_one_line_and_exit_2(probe_out, tmp_path, capsys, args, needle):
    from empirical.lm.crosscheck.__main__ import main

    argv = [a.format(out=probe_out, missing=tmp_path / "none") for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


@needs_lm
def test_a_changed_model_file_is_refused(probe_out, tmp_path):
    from constructions.errors import BadInput
    from empirical.lm.crosscheck import source

    record = json.loads((probe_out / "probe.json").read_text())
    name = next(iter(record["model"]["files"]))
    with pytest.raises(BadInput, match="sha256 differs"):
        source.load_model({name: "0" * 64})


# ---- what the cross-check found -----------------------------------------------------------------


def _row_with_mass_one():
    """One head, query 1 of 3 keys: float32 first-token weight exactly 1, the others tiny but exact."""
    w = torch.zeros(1, 1, 3, 3)
    w[0, 0, 0, 0] = 1.0
    w[0, 0, 1, :2] = torch.tensor([1.0, 1e-9])
    w[0, 0, 2] = torch.tensor([1.0, 1e-9, 3e-9])
    return w


def test_the_crosscheck_renormalises_a_row_whose_float32_mass_is_one():
    from empirical.lm.crosscheck import attention

    out = attention.remove_first(0, 0)(0, _row_with_mass_one())
    assert out[0, 0, 1].tolist() == [0.0, 1.0, 0.0]
    assert torch.allclose(out[0, 0, 2], torch.tensor([0.0, 0.25, 0.75]))


def test_the_probe_renormalises_a_row_whose_float32_mass_is_one():
    """The defect this cross-check found (SmolLM2 L18H8's removed change read 2.66 nats where the
    renormalised row gives 3.81): ``bos_edits.remove_bos`` took the other keys' mass as
    total - a_i0, which is 0 in float32 when a_i0 rounds to 1; it now sums them."""
    from empirical.training import bos_edits

    out = bos_edits.remove_bos(_row_with_mass_one(), 0)
    assert torch.allclose(out[0, 0, 2], torch.tensor([0.0, 0.25, 0.75]))
