"""``sinks certify --recheck marabou``: Marabou as a second verifier of a head's certified BOS mass
(proofs/marabou). The verdict logic and the models' layout are tested everywhere; the tests that
run Marabou skip where the optional extra is not installed."""

from fractions import Fraction

import numpy as np
import pytest

from constructions import reference, softmax_head, task
from proofs.certify.arithmetic import heads
from proofs.certify.head import sink
from proofs.marabou import encode, recheck

needs_marabou = pytest.mark.skipif(not recheck.available(),
                                   reason="maraboupy not installed (optional extra: pip install '.[marabou]')")


def small_head(d: int = 5, seed: int = 0, scale: float = 0.25, gap: int = 8) -> reference.Network:
    """A dense softmax head with dyadic weights (every score reads content) that sinks like a trained
    one: BOS's score ``gap`` above the others at a content query, below them at the trigger."""
    rng = np.random.default_rng(seed)
    W = lambda: [[Fraction(round(float(v) * 64), 64) for v in row] for row in rng.normal(0, scale, (d, d))]  # noqa: E731
    W_Q, W_K = W(), W()
    W_Q[0][task.content_flag(d)] += gap
    W_Q[0][task.TRIGGER_FLAG] -= gap
    W_K[0][task.BOS_FLAG] += 1
    return reference.single_head("softmax", W_Q, W_K, W(), reference.identity(d, Fraction(0), Fraction(1)))


def test_verdicts_and_thresholds():
    assert recheck.verdict("below certificate", "unsat") == "agree"
    assert recheck.verdict("below certificate", "sat") == "DISAGREE"
    assert recheck.verdict("below witness", "sat") == "agree"
    assert recheck.verdict("below witness", "unsat") == "DISAGREE"
    assert recheck.verdict("below witness", "unknown") == "unknown"
    t = recheck.thresholds("before", 0.99, 0.991)
    assert t["below certificate"] < 0.99 < 0.991 < t["below witness"] < 1
    t = recheck.thresholds("trigger", 0.02, 0.019)
    assert t["below certificate"] > 0.02 > 0.019 > t["below witness"] > 0


@pytest.mark.parametrize("i, case", [(3, "before"), (4, "after"), (3, "trigger")])
def test_a_model_is_laid_out_as_the_certificate_lays_out_its_witness(i, case):
    d, L = 6, 6
    q, k = [Fraction(1, 2), Fraction(-1), Fraction(1, 4)], [Fraction(1), Fraction(-1, 2), Fraction(0)]
    roles = encode.roles(i, case)
    got = recheck.sequence(L, i, case, q, [k] * len(roles), roles)
    assert got == sink.witness_sequence(d, L, i, case, np.array([float(v) for v in q]), np.array([float(v) for v in k]))


def _inputs(n: int, keys: int, rng):
    """Vertices and random points of the input box: (query content, key contents)."""
    for _ in range(12):
        pick = (lambda: rng.choice([-1.0, 1.0], n)) if rng.random() < 0.5 else (lambda: rng.uniform(-1, 1, n))
        yield pick(), [pick() for _ in range(keys)]


def _float_bos_weight(h, i: int, case: str, c, keys, roles) -> float:
    """a_i0 in float64 at the input (query content c, key contents), for the threshold of the test."""
    d = h.d
    token = lambda flag, content: np.r_[np.eye(d)[flag][:2], content, np.eye(d)[flag][-1]]  # noqa: E731
    flag = {"content": task.content_flag(d), "trigger": task.TRIGGER_FLAG}
    x = token(flag["trigger" if case == "trigger" else "content"], c)
    others = [np.eye(d)[task.BOS_FLAG]] + [token(flag[r], k) for r, k in zip(roles, keys)] + [x]
    s = np.array([x @ h.M @ y for y in others])
    return float(1 / np.exp(s - s[0]).sum())


@needs_marabou
@pytest.mark.parametrize("i, case", [(1, "before"), (3, "before"), (3, "after"), (4, "after"), (2, "trigger"), (4, "trigger")])
def test_the_piecewise_linear_encoding_holds_at_every_input(i, case):
    """The over-approximation: every input's true values (scores, products, exp) satisfy every
    constraint of the pl encoding, so an unsat of the encoding is an unsat of the head. The
    threshold is the input's own BOS weight, so the chords' fine grid is where the input's terms are."""
    h = heads.head_maps(small_head())
    rng = np.random.default_rng(i)
    roles = encode.roles(i, case)
    for box in (None, np.array([[-1.0, 0.0], [0.25, 1.0]])):
        for c, keys in _inputs(h.n, len(roles), rng):
            if box is not None:
                c = np.clip(c, box[:, 0], box[:, 1])
            a = _float_bos_weight(h, i, case, c, keys, roles)
            t = a * (1 - 1e-9) if case == "trigger" else a * (1 + 1e-9)  # the input meets it, barely
            q = encode.build(h.M, h.d, 5, i, case, t, "pl", box)
            assert encode.violations(q, c, keys) == [], (c, keys)


def _queries(net, L):
    return sink.certify_head(net, L)["queries"]


@needs_marabou
@pytest.mark.parametrize("net, L", [(softmax_head.build(4, 3), 4), (small_head(), 4)], ids=["bos-gap d4 L4", "dense d5 L4"])
def test_marabou_agrees_with_every_certificate_and_witness(net, L):
    out = recheck.recheck_head(net, L, _queries(net, L), timeout_s=10)
    assert out["tally"]["DISAGREE"] == 0
    assert out["tally"]["agree"] == len(out["rows"]) == 2 * len(sink.cases(L))
    for row in out["rows"]:
        if row["answer"] == "sat":  # a model counts only replayed exactly on the question's side
            assert (row["model_bos"][1] <= row["threshold"]) if row["case"] != "trigger" else \
                (row["model_bos"][0] >= row["threshold"])


@needs_marabou
def test_a_planted_wrong_certificate_and_a_planted_wrong_witness_disagree():
    """A certified minimum raised above the witness: Marabou finds an input below it (replayed);
    a witness lowered below the true minimum: Marabou answers unsat where the witness said sat."""
    net, L = small_head(), 4
    queries = [q for q in _queries(net, L) if (q["position"], q["case"]) in ((2, "before"), (2, "trigger"))]
    planted = []
    for q in queries:
        a = q["witness_low"] if q["case"] != "trigger" else q["witness_high"]
        wrong = a + 0.5 * (1 - a) if q["case"] != "trigger" else a / 2
        planted.append({**q, "certified": wrong, "witness_low": q["certified"] - 0.5 * (1 - q["certified"]),
                        "witness_high": q["certified"] * 1.5})
    rows = recheck.recheck_head(net, L, planted, timeout_s=10, native=False)["rows"]
    assert [r["verdict"] for r in rows] == ["DISAGREE"] * 4, rows


def _certify(tmp_path, capsys, net, L):
    from empirical.pipeline import cli
    from empirical.weights.network_files import write_network_json

    path = write_network_json(tmp_path / "w.json", net)
    code = cli.main(["certify", str(path), "--L", str(L), "--no-measure", "--recheck", "marabou",
                     "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    import json

    return code, out, json.loads((tmp_path / "o" / "certify.json").read_text())["results"][0]["recheck"]


def test_without_maraboupy_the_recheck_says_not_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(recheck, "available", lambda: False)
    code, out, record = _certify(tmp_path, capsys, softmax_head.build(4, 3), 4)
    assert code == 0 and "Marabou: not run (maraboupy not installed" in out and record["ran"] is False


@needs_marabou
def test_sinks_certify_recheck_marabou_prints_and_records_the_table(tmp_path, capsys):
    code, out, record = _certify(tmp_path, capsys, softmax_head.build(4, 3), 4)
    assert code == 0, out
    assert "recheck by Marabou" in out and "10 questions agree, 0 unknown, 0 DISAGREE" in out
    assert record["ran"] and len(record["rows"]) == 10
