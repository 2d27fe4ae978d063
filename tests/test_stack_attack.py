"""A stack head's bracket [certified minimum, worst input found]: the search
(``empirical.analysis.stack_attack``) against every grid input of tiny stacks and their
certificates, the worst input's exact replay (``proofs.certify.stack.refute``) and the verdict
``refuted`` on a hand-built stack whose deep head does not sink on some input."""

import json

import numpy as np
import pytest
import torch

from empirical.analysis import stack_attack
from proofs.certify.stack import affine_stack, refute
from tests.test_certify_stack import SINKING, WEAK, enumerated_minima, sinking_stack

torch.set_num_threads(1)
STACKS = SINKING[:3] + [WEAK]  # softmax: d = 4, L = 4 and 5, 2 x 2
FLOAT_SLACK = 1e-12  # float64 evaluation of a stack: a few ulps of a mass near 1
REFUTED = (4, 5, 5, "softmax", 4.0)  # layer 1's heads put 0.397 / 0.295 on BOS at some grid input


@pytest.fixture(scope="module")
def searched():
    out = []
    for key in STACKS:
        d, L, seed, kind, beta = key
        net = sinking_stack(d, seed, kind, beta=beta)
        cert = affine_stack.certify_stack(net, L, exact_first=False)
        out.append((key, net, cert, enumerated_minima(net, L), stack_attack.brackets(net, L, cert)))
    return out


def grid_minimum(worst, layer, head):
    return min(v for (n, h, _), v in worst.items() if (n, h) == (layer, head))


def test_worst_inputs_lie_between_the_certificate_and_the_grid_minimum(searched):
    """Every head of four tiny stacks: the certified minimum <= the replayed worst input found <=
    the smallest BOS mass of every grid input (contents on {-1, -1/2, 0, 1/2, 1}, every trigger)
    plus 1e-3: the search reaches the grid's minimum, from continuous starts."""
    gaps = []
    for key, _, cert, worst, br in searched:
        for b in br["heads"]:
            g = grid_minimum(worst, b["layer"], b["head"])
            assert b["certified_min"] <= b["worst_low"] <= b["worst_found"], (key, b)
            # the search's float64 figure lies within float rounding of the exact replay's interval
            assert b["worst_low"] - FLOAT_SLACK <= b["worst_float"] <= b["worst_found"] + FLOAT_SLACK, (key, b)
            gaps.append(b["worst_found"] - g)
    assert max(gaps) < 1e-3, gaps
    assert len(gaps) == 16


def test_a_search_that_climbs_is_caught(monkeypatch):
    """The planted mistake: the step taken up the gradient (the search maximises a_i0). The grid
    check above fails on it."""
    d, L, seed, kind, beta = WEAK
    net = sinking_stack(d, seed, kind, beta=beta)
    worst = enumerated_minima(net, L)
    monkeypatch.setattr(stack_attack, "STEP", -stack_attack.STEP)
    found = stack_attack.attack(net, L)
    assert max(h["worst_float"] - grid_minimum(worst, h["layer"], h["head"]) for h in found["heads"]) > 1e-3


def test_verdicts_follow_the_bracket(searched):
    for _, _, cert, _, br in searched:
        for b in br["heads"]:
            expected = ("certified" if b["certified_min"] >= 0.5 else "refuted" if b["worst_found"] < 0.5 else "unknown")
            assert b["verdict"] == expected
            assert b["width"] == b["worst_found"] - b["certified_min"] >= 0


def test_sink_level_of_the_verdict_is_pinned():
    """1/2 decides certified / refuted: a level halved or doubled flips one of these."""
    assert refute.bracket(0.1, 0.3)["verdict"] == "refuted"  # level 0.25: unknown
    assert refute.bracket(0.6, 0.9)["verdict"] == "certified"  # level 1.0: refuted
    assert refute.bracket(0.3, 0.7)["verdict"] == "unknown"


def test_a_bound_above_a_replayed_input_raises():
    with pytest.raises(ArithmeticError):
        refute.bracket(0.6, 0.4)
    with pytest.raises(ArithmeticError):
        refute.bracket(0.3, 0.2)


def refuted_summary(tmp_path):
    from tests.test_certify_stack import summary_of

    d, L, seed, kind, beta = REFUTED
    net = sinking_stack(d, seed, kind, beta=beta)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(summary_of(net, L, [[0.95, 0.95], [0.95, 0.95]])))
    return net, L, path


def independent_replay(net, contents, j, layer, head, i):
    """a_i0 on the recorded input, the whole network and sequence, in 200-bit Arb balls."""
    from constructions import balls, task
    from proofs.certify.arithmetic import replay

    with balls.precision(200):
        _, patterns = replay.replay(net, task.make_sequence(refute.exact_contents(contents), j))
        a = patterns[layer][head][i][0]
        return balls.down(a), balls.up(a)


def test_a_deep_head_that_does_not_sink_is_refuted_by_its_recorded_input(tmp_path, capsys):
    """``sinks certify`` on a hand-built 2 x 2 stack whose layer-1 heads put < 1/2 on BOS at some
    input: both are refuted, their inputs are in certify.json, and each, read back and replayed
    independently (whole network and sequence, 200 bits), lies inside the recorded
    [worst_low, worst_found], below 1/2."""
    from empirical.pipeline.cli import main

    net, L, path = refuted_summary(tmp_path)
    code = main(["certify", str(path), "--no-measure", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0 and "2 refuted, 0 unknown" in out
    record = json.loads((tmp_path / "o" / "certify.json").read_text())
    heads = record["results"][0]["brackets"]["heads"]
    assert [(b["layer"], b["head"], b["verdict"]) for b in heads] == [(1, 0, "refuted"), (1, 1, "refuted")]
    for b in heads:
        low, high = independent_replay(net, b["contents"], b["trigger"], b["layer"], b["head"], b["query"])
        assert b["worst_low"] <= low and high <= b["worst_found"] < 0.5
    verdicts = [r[-1].split(":")[0] for r in record["results"][0]["table"]]
    assert verdicts == ["sink certified (>= 0.5 on every input)", "sink certified (>= 0.5 on every input)", "refuted", "refuted"]


def test_a_float_only_refutation_is_caught(tmp_path, monkeypatch):
    """The planted mistake: the worst input not replayed, its float BOS mass taken as the bracket's
    end. The recorded end is then a point, which cannot enclose the exact value: caught."""
    from empirical.pipeline.cli import main

    net, L, path = refuted_summary(tmp_path)

    def float_only(net_, contents, j, layer, head, i):
        from empirical.training.model import from_network

        x = stack_attack._sequences(torch.tensor([contents], dtype=torch.float64), torch.tensor([j]), net_.d)
        with torch.no_grad():
            _, cache = from_network(net_, dtype=torch.float64)(x)
        a = float(cache[f"L{layer}.pattern"][0, head, i, 0])
        return a, a

    monkeypatch.setattr(refute, "replay_bos", float_only)
    assert main(["certify", str(path), "--no-measure", "--out", str(tmp_path / "o")]) == 0
    heads = json.loads((tmp_path / "o" / "certify.json").read_text())["results"][0]["brackets"]["heads"]
    caught = 0
    for b in heads:
        low, high = independent_replay(net, b["contents"], b["trigger"], b["layer"], b["head"], b["query"])
        caught += not (b["worst_low"] <= low and high <= b["worst_found"])
    assert caught == len(heads) == 2


def test_classes_cover_every_trigger_position_a_query_can_tell_apart():
    """Query i before the trigger sees no trigger (one class), after it each j in 2..i-1."""
    assert stack_attack.classes(5) == [(1, 4), (2, 4), (3, 4), (3, 2), (4, 2), (4, 3)]
    L = 16
    assert len(stack_attack.classes(L)) == (L - 2) + sum(i - 2 for i in range(3, L))
    assert np.all([2 <= j < L and j != i for i, j in stack_attack.classes(L)])


def test_no_attack_leaves_the_heads_unsearched(tmp_path, capsys):
    from empirical.pipeline.cli import main

    _, _, path = refuted_summary(tmp_path)
    assert main(["certify", str(path), "--no-measure", "--no-attack", "--out", str(tmp_path / "o")]) == 0
    record = json.loads((tmp_path / "o" / "certify.json").read_text())
    assert "brackets" not in record["results"][0] and record["provenance"]["config"]["attack"] is False
    assert [r[-1] for r in record["results"][0]["table"]][2:] == ["no useful bound"] * 2
