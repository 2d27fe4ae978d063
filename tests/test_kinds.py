"""The kinds beyond the paper: exact forms (sympy, mpmath) against their definitions, the torch
forms against the exact ones at extreme scores, and the registry's normalised / can_abstain flags
against what the rows actually do."""

import itertools

import mpmath
import pytest
import sympy
import torch

from constructions import attention
from constructions.errors import NotExpressible

NEW = ("softmax1", "sink_logit", "sigmoid", "gated", "sigmoid_norm", "softpick")
s0, s1, s2, b, g = sympy.symbols("s0 s1 s2 b g", real=True)
S = [s0, s1, s2]
SYMPY = attention.ops("sympy")


def _extras():
    return {"sink": b, "bias": b, "gate": g}


def _definition(name, scores, i):
    """Each kind written straight from constructions/SPEC.md section 6 (sympy), independent of the registry."""
    e = [sympy.exp(s) for s in scores]
    sig = [1 / (1 + sympy.exp(-s)) for s in scores]
    return {
        "softmax1": [v / (1 + sum(e)) for v in e],
        "sink_logit": [v / (sympy.exp(b) + sum(e)) for v in e],
        "sigmoid": [1 / (1 + sympy.exp(-(s + b))) / max(i, 1) for s in scores],
        "gated": [v / sum(e) / (1 + sympy.exp(-g)) for v in e],
        "sigmoid_norm": [v / sum(sig) for v in sig],
        # arXiv:2504.20966, eq. 1, with eps = 1e-8
        "softpick": [sympy.Max(0, v - 1) / (sum(sympy.Abs(w - 1) for w in e) + sympy.Rational(1, 10 ** 8)) for v in e],
    }[name]


@pytest.mark.parametrize("name", NEW)
def test_exact_form_equals_definition_in_sympy(name):
    kind = attention.get(name)
    for i in (0, 1, 2):
        got = kind.exact(S[:i + 1], i, SYMPY, _extras())
        want = _definition(name, S[:i + 1], i)
        assert len(got) == i + 1
        for a, w in zip(got, want):
            assert _same(a - w, i), (name, i, a, w)


def _same(diff, i) -> bool:
    """diff == 0 identically. A Max / Abs of e^s - 1 (softpick) does not simplify for a free real
    s, so each sign pattern is taken apart: s_k = +-log(1 + t_k) with t_k > 0 fixes every sign."""
    if not diff.has(sympy.Max, sympy.Abs):
        return sympy.simplify(diff) == 0
    t = sympy.symbols(f"t0:{i + 1}", positive=True)
    for signs in itertools.product((1, -1), repeat=i + 1):
        case = diff.subs({S[k]: signs[k] * sympy.log(1 + t[k]) for k in range(i + 1)})
        if sympy.simplify(case) != 0:
            return False
    return True


@pytest.mark.parametrize("name", NEW)
def test_registry_flags_match_the_rows(name):
    """normalised: rows sum to one exactly (sympy); can_abstain: some parameters drive a whole
    row's mass below 1e-6 (torch), which a normalised kind can never do."""
    kind = attention.get(name)
    row = kind.exact(S, 2, SYMPY, _extras())
    sums_to_one = sympy.simplify(sum(row) - 1) == 0
    assert sums_to_one == kind.normalised
    scores = torch.full((1, 1, 3, 3), -40.0, dtype=torch.float64)
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    closing = {"sink": torch.tensor(40.0, dtype=torch.float64), "bias": torch.tensor(-40.0, dtype=torch.float64),
               "gate": torch.full((1, 1, 3, 1), -40.0, dtype=torch.float64)}
    total = kind.torch(scores, mask, closing).sum(-1)
    assert bool((total < 1e-6).all()) == kind.can_abstain
    assert kind.prediction and ("no" in kind.prediction.split(":")[0]) == kind.can_abstain


@pytest.mark.parametrize("name", NEW)
def test_torch_form_matches_mpmath_at_extreme_scores(name):
    """float64 torch against 40-digit mpmath on scores up to +-300 (where a naive exp overflows)."""
    kind = attention.get(name)
    mp = attention.ops("mpmath")
    g = torch.Generator().manual_seed(0)
    L = 5
    scores = (torch.rand(2, 1, L, L, generator=g, dtype=torch.float64) - 0.5) * 600
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    sink, bias, gate = 12.5, -3.0, torch.tensor([[-30.0, 2.0, 0.5, 300.0, -1.0]], dtype=torch.float64)
    extras = {"sink": torch.tensor(sink, dtype=torch.float64), "bias": torch.tensor(bias, dtype=torch.float64),
              "gate": gate.reshape(1, 1, L, 1)}
    out = kind.torch(scores, mask, extras)
    assert torch.all(out[..., ~mask] == 0) and torch.isfinite(out).all()
    with mpmath.workdps(40):
        for bi in range(2):
            for i in range(L):
                row = [mpmath.mpf(v) for v in scores[bi, 0, i, :i + 1].tolist()]
                want = kind.exact(row, i, mp, {"sink": mpmath.mpf(sink), "bias": mpmath.mpf(bias),
                                               "gate": mpmath.mpf(gate[0, i].item())})
                for k, w in enumerate(want):
                    assert abs(out[bi, 0, i, k].item() - float(w)) <= 1e-12 * max(1.0, abs(float(w))) + 1e-300


@pytest.mark.parametrize("name", NEW)
def test_fraction_and_z3_backends_refuse_exp_and_sigmoid(name):
    kind = attention.get(name)
    for backend in ("fraction", "z3"):
        ops = attention.ops(backend)
        with pytest.raises(NotExpressible):
            kind.exact([ops.zero, ops.one], 1, ops, {"sink": ops.zero, "bias": ops.zero, "gate": ops.zero})


def test_softmax1_is_sink_logit_at_zero_and_gated_is_softmax_times_gate():
    for i in range(3):
        a = attention.get("softmax1").exact(S[:i + 1], i, SYMPY, {})
        c = attention.get("sink_logit").exact(S[:i + 1], i, SYMPY, {"sink": 0})
        assert all(sympy.simplify(x - y) == 0 for x, y in zip(a, c))
        sm = attention.get("softmax").exact(S[:i + 1], i, SYMPY, {})
        gt = attention.get("gated").exact(S[:i + 1], i, SYMPY, {"gate": g})
        assert all(sympy.simplify(x / y - 1 / (1 + sympy.exp(-g))) == 0 for x, y in zip(gt, sm))


def test_softpick_rows_are_exactly_zero_when_every_score_is_at_most_zero():
    """The abstention softpick's prediction rests on: weights exactly 0 (not just small), in both
    forms, and one positive score takes (e^s - 1)/(e^s - 1 + eps) of the row, the rest 0."""
    kind = attention.get("softpick")
    frac_like = attention.ops("mpmath")
    row = kind.exact([mpmath.mpf(0), mpmath.mpf(-3), mpmath.mpf(-0.5)], 2, frac_like, {})
    assert all(a == 0 for a in row)
    scores = torch.tensor([[[[0.0, 0, 0], [-1.0, -2.0, 0], [-5.0, 0.0, -0.1]]]], dtype=torch.float64)
    out = kind.torch(scores, torch.ones(3, 3, dtype=torch.bool).tril(), {})
    assert torch.equal(out, torch.zeros_like(out))
    t = sympy.Symbol("t", positive=True)  # score log(1 + t) > 0, so e^s - 1 = t
    one = kind.exact([sympy.Integer(0), sympy.log(1 + t)], 1, SYMPY, {})
    assert one[0] == 0 and sympy.simplify(one[1] - t / (t + sympy.Rational(1, 10 ** 8))) == 0


def test_new_kinds_are_registered_and_selectable_by_name():
    assert set(NEW) <= set(attention.names())
    with pytest.raises(Exception, match="valid: .*softmax1.*sink_logit.*sigmoid.*gated.*sigmoid_norm"):
        attention.get("softmax2")


@pytest.mark.parametrize("name", attention.names())
def test_pre_hidden_scores_give_the_same_weights(name):
    """``hidden=True`` (the caller put -inf at the hidden keys, as the model does) gives the same
    weights, and the same gradients, as letting the kind mask the raw scores."""
    kind = attention.get(name)
    g = torch.Generator().manual_seed(1)
    L = 5
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    raw = (torch.randn(2, 3, L, L, generator=g, dtype=torch.float64) * 4).requires_grad_()
    extras = {"sink": torch.tensor(0.7, dtype=torch.float64), "bias": torch.tensor(-0.4, dtype=torch.float64),
              "gate": torch.randn(2, 3, L, 1, generator=g, dtype=torch.float64)}
    hidden = raw.masked_fill(~mask, float("-inf"))
    a, b = kind.weights_torch(raw, mask, extras), kind.weights_torch(hidden, mask, extras, hidden=True)
    assert torch.allclose(a, b, rtol=1e-14, atol=1e-15) and torch.all(b[..., ~mask] == 0)
    weights = torch.randn(a.shape, generator=g, dtype=torch.float64)
    ga, = torch.autograd.grad((a * weights).sum(), raw)
    gb, = torch.autograd.grad((b * weights).sum(), raw)
    assert torch.isfinite(gb).all() and torch.allclose(ga, gb, rtol=1e-12, atol=1e-14)


def test_a_form_without_the_hidden_parameter_gets_zero_scores_at_hidden_keys():
    """A plug-in's torch form knows nothing of -inf scores: ``weights_torch(hidden=True)`` hands it
    0 at the hidden keys, so ``scores * mask`` stays finite and the weights equal the plain call."""
    import dataclasses

    def plain(scores, mask, extras):  # x^2 weights: -inf * 0 would be NaN here
        return (scores * mask) ** 2

    kind = dataclasses.replace(attention.get("relu"), name="plain", torch=plain)
    L = 4
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    raw = torch.randn(2, L, L, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    hidden = raw.masked_fill(~mask, float("-inf"))
    assert torch.equal(kind.weights_torch(hidden, mask, {}, hidden=True), plain(raw, mask, {}))


def test_a_plain_form_sees_queries_by_keys_in_the_models_layout():
    """The model calls kinds on scores [S, B, L, H, L] with mask [L, 1, L]; a plug-in form that
    assumes [..., L, L] (here: the query index from the second-last axis) gets that layout."""
    import dataclasses

    def plain(scores, mask, extras):  # divides row i by max(i, 1), reading i off axis -2
        L = scores.shape[-1]
        return torch.relu(scores) * mask / torch.arange(L, dtype=scores.dtype).clamp(min=1).unsqueeze(-1)

    kind = dataclasses.replace(attention.get("relu"), name="plain", torch=plain)
    L, H = 5, 3
    scores = torch.randn(2, 4, H, L, L, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    want = plain(scores, torch.ones(L, L, dtype=torch.bool).tril(), {})  # [S, B, H, L, L]
    model_layout = scores.transpose(-3, -2).masked_fill(~torch.ones(L, L, dtype=torch.bool).tril().unsqueeze(1),
                                                         float("-inf"))
    got = kind.weights_torch(model_layout, torch.ones(L, L, dtype=torch.bool).tril().unsqueeze(1), {}, hidden=True)
    assert torch.equal(got.transpose(-3, -2), want)
