"""TransformerLens hooks on the project's models (``empirical.weights.lens``) and the staged forward they
run on (``empirical.training.staged``). The staged forward is tested everywhere; the TransformerLens tests
skip, saying why, where the optional extra ``.[lens]`` is not installed."""

import pytest
import torch

from constructions import attention, task
from empirical.weights import lens
from empirical.training import staged
from empirical.training import stored_weights
from empirical.training.model import AttentionModel
from empirical.training.train import TrainConfig, train

SHAPES = ((1, 1), (2, 2), (4, 4))
TL_KINDS = ("softmax", "relu")
TOL = 1e-6  # absolute; outputs and patterns here are O(1) (at most ~10)
needs_tl = pytest.mark.skipif(not lens.available(), reason=lens.INSTALL_HINT)


def _batch(d=16, L=16, n=32, residual=False, seed=0):
    return task.sample(task.TaskConfig(d=d, L=L, residual=residual), n, torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def _random(kind, layers, heads, d=16, seed=0, ensemble=None):
    """Random weights at a scale where every kind's pattern is far from uniform (std 0.3 / heads,
    not the 0.02 of the initialisation; larger makes random ReLU stacks blow up to ~1e39) and
    extra parameters away from 0."""
    m = AttentionModel(kind, d, layers=layers, heads=heads, residual=layers > 1, ensemble=ensemble,
                       seeds=list(range(ensemble or 1)) if ensemble else seed, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.3 / heads)
    return m


_TRAINED = {}


def _trained(kind, layers, heads):
    """A short real training run (reference optimiser, 150 steps), loaded back from its record."""
    key = (kind, layers, heads)
    if key not in _TRAINED:
        cfg = TrainConfig(kind=kind, layers=layers, heads=heads, lr=3e-3, max_steps=150, seeds=(0,),
                          eval_sequences=8, log_every=150)
        summary = train(cfg, quiet=True)
        _TRAINED[key] = stored_weights.model_from_summary(summary)
    return _TRAINED[key]


# ---- the staged forward (no TransformerLens needed) -------------------------------------------


@pytest.mark.parametrize("kind", attention.names())
@pytest.mark.parametrize("shape", SHAPES)
def test_staged_forward_equals_the_model(kind, shape):
    layers, heads = shape
    for ensemble in (None, 2):
        m = _random(kind, layers, heads, ensemble=ensemble)
        x = _batch(residual=layers > 1).x
        want, cache = m(x)
        seen = {}
        got = staged.run(m, x, lambda name, t: seen.setdefault(name, t))
        assert torch.allclose(got, want, rtol=1e-10, atol=1e-12)
        assert set(seen) == set(staged.hook_names(layers))
        for n in range(layers):
            assert torch.allclose(seen[f"blocks.{n}.attn.hook_pattern"], cache[f"L{n}.pattern"], rtol=1e-10, atol=1e-12)
            assert torch.allclose(seen[f"blocks.{n}.hook_resid_pre"], cache[f"L{n}.input"], rtol=1e-10, atol=1e-12)


def test_weights_round_trip_through_the_run_record():
    cfg = TrainConfig(kind="softmax", layers=2, heads=2, max_steps=3, seeds=(3, 5), eval_sequences=4, log_every=3)
    summary = train(cfg, quiet=True)
    m = stored_weights.model_from_summary(summary)
    # the record's own evaluation: the same model in float64 on the same sequences gives its error
    from empirical.training.train import _eval_batch

    e = _eval_batch(cfg, 4)
    out, _ = m(e.x)
    for s, member in enumerate(summary["members"]):
        assert (out[s] - e.y).abs().max().item() == pytest.approx(member["eval_max_abs_error"], rel=1e-12)
    with pytest.raises(Exception, match="no weights"):
        stored_weights.model_from_summary({k: v for k, v in summary.items() if k != "weights"})


# ---- TransformerLens ------------------------------------------------------------------------


def _models():
    for kind in TL_KINDS:
        for layers, heads in SHAPES:
            yield f"{kind}-{layers}x{heads}-random", lambda k=kind, l=layers, h=heads: _random(k, l, h)
            yield f"{kind}-{layers}x{heads}-trained", lambda k=kind, l=layers, h=heads: _trained(k, l, h)


MODELS = dict(_models())


@needs_tl
@pytest.mark.parametrize("name", list(MODELS))
def test_hooked_outputs_and_patterns_equal_the_plain_model(name):
    m = MODELS[name]()
    b = _batch(residual=m.residual, n=64)
    want, cache = m(b.x)
    h = lens.hooked(m)
    got, tl_cache = h.run_with_cache(b.x)
    assert _diff(got, want) <= TOL
    for n in range(m.n_layers):
        assert _diff(tl_cache[f"blocks.{n}.attn.hook_pattern"], cache[f"L{n}.pattern"]) <= TOL
        assert _diff(tl_cache[f"blocks.{n}.hook_resid_pre"], cache[f"L{n}.input"]) <= TOL
    assert set(tl_cache.keys()) == set(staged.hook_names(m.n_layers))
    assert torch.equal(tl_cache[f"blocks.{m.n_layers - 1}.hook_resid_post"], got)


@needs_tl
@pytest.mark.parametrize("name", list(MODELS))
def test_zeroing_a_heads_pattern_equals_zeroing_its_output_block(name):
    m = MODELS[name]()
    b = _batch(residual=m.residual, n=64)
    layer, head = m.n_layers - 1, m.n_heads - 1

    def zero_head(pattern, hook):
        pattern = pattern.clone()
        pattern[..., head, :, :] = 0  # [*E, B, H, L, L]
        return pattern

    patched = lens.hooked(m).run_with_hooks(b.x, fwd_hooks=[(f"blocks.{layer}.attn.hook_pattern", zero_head)])
    other = _copy(m)
    with torch.no_grad():
        d = m.d
        other.layers[layer].W_O[..., head * d:(head + 1) * d] = 0  # [*E, d, H*d]
    want, _ = other(b.x)
    assert _diff(patched, want) <= TOL
    plain, _ = m(b.x)
    assert _diff(patched, plain) > 1e-3  # the head mattered: not a vacuous check


def _diff(a, b) -> float:
    return (a - b).abs().max().item()


def _copy(m):
    import copy

    return copy.deepcopy(m)


@needs_tl
def test_activation_patching_restores_the_clean_run():
    """Patch the clean run's residual stream into a corrupted input at one layer: the output is the
    clean output exactly from there on (the standard patching experiment)."""
    m = _trained("softmax", 2, 2)
    h = lens.hooked(m)
    clean, corrupt = _batch(residual=True, n=16, seed=1).x, _batch(residual=True, n=16, seed=2).x
    clean_out, clean_cache = h.run_with_cache(clean)
    name = "blocks.1.hook_resid_pre"
    patched = h.run_with_hooks(corrupt, fwd_hooks=[(name, lambda t, hook: clean_cache[name])])
    assert torch.equal(patched, clean_out)
    assert not torch.equal(h(corrupt), clean_out)


def test_hooked_without_transformer_lens_is_bad_input(monkeypatch):
    monkeypatch.setattr(lens, "available", lambda: False)
    with pytest.raises(Exception, match=r"pip install -e '.\[lens\]'"):
        lens.hooked(_random("softmax", 1, 1))


# ---- the README's example -----------------------------------------------------------------------

README_EXAMPLE_MARK = "<!-- the example tests/test_lens.py runs -->"


def _readme_example() -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "empirical" / "weights" / "README.md").read_text()
    block = text.split(README_EXAMPLE_MARK, 1)[1]
    assert block.lstrip().startswith("```python"), "the marked example must be the python block right after the mark"
    return block.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_example_is_complete():
    """It makes its own model and input before it uses them (no undefined names), also where
    TransformerLens is absent."""
    import ast

    import importlib

    tree = ast.parse(_readme_example())
    assigned = [t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)]
    assert assigned.index("model") < assigned.index("lens") and assigned.index("x") < assigned.index("lens")
    for node in ast.walk(tree):  # every name it imports is where it says (the rooms move modules)
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            assert all(hasattr(module, a.name) for a in node.names), ast.unparse(node)


@needs_tl
def test_the_readme_example_runs(capsys):
    exec(compile(_readme_example(), "empirical/weights/README.md (TransformerLens example)", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "layer 0 BOS mass at query 3, per head:" in out
    change = float(out.split("largest change of the output:")[1].split()[0])
    assert change > 1e-3  # zeroing head 1 of layer 1 changed the output: the hook ran
