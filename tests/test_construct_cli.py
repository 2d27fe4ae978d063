"""``sinks construct``: labelled matrices, exact JSON round trip into torch, npz, heat maps, bad input."""

import json
from fractions import Fraction

import pytest

from constructions import relu_head, softmax_head, task
from empirical.pipeline import cli
from empirical.weights.network_files import load_model, load_network, network_from_json

PNG = b"\x89PNG\r\n\x1a\n"


def construct(capsys, *args):
    code = cli.main(["construct", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_relu_prints_labelled_matrices_and_pattern(capsys):
    code, out, err = construct(capsys, "relu", "--d", "6", "--L", "8", "--trigger", "4")
    assert code == 0, err
    for title in ("W_Q (layer 0, head 0)", "W_K (layer 0, head 0)", "W_V (layer 0, head 0)", "W_O (layer 0, head 0"):
        assert title in out
    W_K = out[out.index("W_K (layer"):out.index("W_V (layer")].splitlines()
    assert W_K[1].split() == task.feature_names(6)  # columns labelled by feature
    assert [line.split()[0] for line in W_K[2:8]] == task.feature_names(6)  # rows too
    assert W_K[2].split() == ["BOS", "0", "1", "0", "0", "0", "1"]  # key reads trigger + content flags
    # the trigger query at 4 spreads 1/4 over keys 1..4, every other row is zero, BOS column zero
    q4 = next(line for line in out.splitlines() if line.startswith("q4"))
    assert q4.split()[1:] == ["0", "1/4", "1/4", "1/4", "1/4", "0", "0", "0"]
    q5 = next(line for line in out.splitlines() if line.startswith("q5"))
    assert set(q5.split()[1:]) == {"0"}
    assert "max |output - target| on this example: 0" in out


def test_softmax_beta_10_prints_sink_pattern(capsys):
    code, out, err = construct(capsys, "softmax", "--beta", "10", "--d", "5", "--L", "6", "--trigger", "3")
    assert code == 0, err
    W_Q = out[out.index("W_Q (layer"):out.index("W_K (layer")]
    bos_row = next(line for line in W_Q.splitlines() if line.startswith("BOS"))
    assert bos_row.split()[1:] == ["10", "-10", "0", "0", "10"]
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line[:2] in ("q1", "q3")}
    assert float(rows["q1"][0]) > 0.9999 and float(rows["q3"][0]) < 1e-4  # sink off the trigger, none at it


def test_relu_stack_prints_every_layer(capsys):
    code, out, _ = construct(capsys, "relu", "--layers", "2", "--heads", "2")
    assert code == 0
    assert "W_Q (layer 1, head 1): all zero" in out and "W_O (layer 1, head 0: columns 0..5): all zero" in out
    assert out.count("attention pattern") == 4


@pytest.mark.parametrize("construction, extra, expected", [
    ("softmax", ("--beta", "5/2"), lambda: softmax_head.build(6, Fraction(5, 2))),
    ("relu", ("--layers", "2", "--heads", "3"), lambda: relu_head.build_stack(6, 2, 3)),
])
def test_json_round_trips_exactly_into_torch(capsys, tmp_path, construction, extra, expected):
    import torch

    from empirical.training.model import from_network

    code, out, err = construct(capsys, construction, *extra, "--format", "json", "--out", str(tmp_path))
    assert code == 0, err
    data = json.loads((tmp_path / "construction.json").read_text())
    assert all(isinstance(v, str) for row in data["layers"][0]["W_Q"][0] for v in row)
    net = load_network(tmp_path / "construction.json")
    assert net == expected()  # exact Fractions, same structure
    model = load_model(tmp_path / "construction.json")
    x = task.sample(task.TaskConfig(d=6, L=16, residual=net.residual), 8, torch.Generator().manual_seed(0)).x
    reference_model = from_network(expected())
    with torch.no_grad():
        assert torch.equal(model(x.double())[0], reference_model(x.double())[0])
    for name in ("weights.png", "pattern.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)


def test_json_on_stdout_parses_back(capsys):
    code, out, _ = construct(capsys, "relu", "--format", "json")
    assert code == 0
    assert network_from_json(json.loads(out)) == relu_head.build(6)


def test_npz_loads_without_pickle(capsys, tmp_path):
    import numpy as np

    code, _, err = construct(capsys, "softmax", "--beta", "3", "--d", "4", "--format", "npz", "--out", str(tmp_path))
    assert code == 0, err
    with np.load(tmp_path / "construction.npz", allow_pickle=False) as z:
        assert str(z["kind"]) == "softmax" and z["L0.W_Q"].shape == (1, 4, 4) and z["L0.W_O"].shape == (4, 4)
        assert z["L0.W_Q"][0, 0].tolist() == [3.0, -3.0, 0.0, 3.0]
        assert list(z["feature_names"]) == task.feature_names(4)


@pytest.mark.parametrize("args, needle", [
    (("nope",), "unknown construction"),
    (("relu", "--d", "3"), "'d'"),
    (("softmax", "--beta", "0"), "--beta"),
    (("softmax", "--beta=-1/2"), "--beta"),
    (("softmax", "--beta", "ten"), "--beta"),
    (("softmax", "--layers", "2"), "single head"),
    (("relu", "--format", "xml"), "--format"),
    (("relu", "--format", "npz"), "--out"),
    (("relu", "--L", "3"), "'L'"),
])
def test_bad_input_exit_2(capsys, tmp_path, args, needle):
    code, out, err = construct(capsys, *args, "--out", str(tmp_path / "out")) if "npz" not in args else \
        construct(capsys, *args)
    assert code == 2
    assert err.count("\n") == 1 and needle in err and err.startswith("sinks: error:")
    assert not (tmp_path / "out").exists()  # nothing written


def test_unwritable_out_is_bad_input_without_files(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = construct(capsys, "relu", "--format", "json", "--out", str(blocker / "sub"))
    assert code == 2 and "not a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_construct_table_does_not_load_torch():
    import subprocess
    import sys

    code = ("import sys, io, contextlib; from empirical.pipeline import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()): cli.main(['construct', 'softmax'])\n"
            "print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "False", r.stdout + r.stderr


@pytest.mark.parametrize("content, needle", [
    ("{", "malformed JSON"),
    ('{"format": "other"}', "not a sinks-network/1 file"),
    ('{"format": "sinks-network/1", "kind": "relu", "residual": false, '
     '"layers": [{"W_Q": [[["x"]]], "W_K": [[["0"]]], "W_V": [[["0"]]], "W_O": [["0"]]}]}', "not a fraction"),
    ('{"format": "sinks-network/1", "kind": "nope", "residual": false, '
     '"layers": [{"W_Q": [[["0"]]], "W_K": [[["0"]]], "W_V": [[["0"]]], "W_O": [["0"]]}]}', "unknown attention kind"),
])
def test_loader_rejects_malformed_weight_files(tmp_path, content, needle):
    from constructions.errors import BadInput

    path = tmp_path / "w.json"
    path.write_text(content)
    with pytest.raises(BadInput, match=needle):
        load_network(path)
