"""``sinks certify``: every weight format loads and certifies; bad files exit 2 with no output."""

import json
import math
import pickle

import numpy as np

from constructions import softmax_head
from empirical.pipeline import cli
from empirical import weights
from empirical.training import stored_weights
from empirical.weights.network_files import network_arrays, write_network_json, write_network_npz

D, L, BETA = 5, 6, 3


def certify(capsys, *args):
    code = cli.main(["certify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def family_min(L=L):
    e = math.exp(BETA)
    return e / (e + L - 1)


def read(out_dir):
    return json.loads((out_dir / "certify.json").read_text())


def test_project_json_certifies_to_the_closed_form(tmp_path, capsys):
    path = write_network_json(tmp_path / "w.json", softmax_head.build(D, BETA))
    code, out, err = certify(capsys, str(path), "--L", str(L), "--out", str(tmp_path / "o"))
    assert code == 0, err
    cert = read(tmp_path / "o")["results"][0]["certificate"]
    assert abs(cert["min_bos_nontrigger"] - family_min()) <= 1e-10
    assert abs(cert["eta"]["eta_up"] - float(softmax_head.max_error(BETA, L))) <= 1e-9
    assert "T1 at eta_up" in out and (tmp_path / "o" / "certify.png").read_bytes()[:4] == b"\x89PNG"
    res = read(tmp_path / "o")["results"][0]
    assert res["measured"]["sequences"] == 1000 and len(res["table"]) == len(
        [q for q in cert["queries"] if q["case"] != "trigger"])
    assert "versions" in read(tmp_path / "o")["provenance"]


def test_npz_and_safetensors_load_the_same_network(tmp_path):
    from safetensors.numpy import save_file

    net = softmax_head.build(D, BETA)
    npz = write_network_npz(tmp_path / "w.npz", net)
    arrays = {k: v for k, v in network_arrays(net).items() if k.startswith("L")}
    save_file(arrays, str(tmp_path / "w.safetensors"), metadata={"kind": "softmax", "residual": "false"})
    a = weights.load(npz)[0].network
    b = weights.load(tmp_path / "w.safetensors")[0].network
    assert a == b and a.kind == "softmax" and not a.residual
    assert a.layers[0].W_Q == net.layers[0].W_Q


def paper_single(net):
    import torch

    layer = net.layers[0]
    t = lambda m: torch.tensor([[float(v) for v in row] for row in m], dtype=torch.float32)  # noqa: E731
    return {"W_Q.weight": t(layer.W_Q[0]), "W_K.weight": t(layer.W_K[0]), "W_V.weight": t(layer.W_V[0]),
            "W_O.weight": t(layer.W_O)}


def test_paper_single_head_state_dict_certifies(tmp_path, capsys):
    import torch

    torch.save(paper_single(softmax_head.build(D, BETA)), tmp_path / "model.pt")
    code, out, err = certify(capsys, str(tmp_path / "model.pt"), "--L", str(L), "--no-measure", "--out", str(tmp_path / "o"))
    assert code == 0, err
    cert = read(tmp_path / "o")["results"][0]["certificate"]
    assert cert["type"] == "single head" and abs(cert["min_bos_nontrigger"] - family_min()) <= 1e-10


def test_paper_multi_layer_state_dict_splits_heads_by_rows(tmp_path, capsys):
    import torch

    d, H = 4, 2
    g = torch.Generator().manual_seed(0)
    state = {}
    for l in range(2):
        for name in ("W_Q", "W_K", "W_V"):
            state[f"layers.{l}.{name}.weight"] = torch.randn(H * d, d, generator=g) * 0.5
        state[f"layers.{l}.W_O.weight"] = torch.randn(d, H * d, generator=g) * 0.5
    torch.save(state, tmp_path / "stack.pt")
    net = weights.load(tmp_path / "stack.pt")[0].network
    assert net.residual and len(net.layers) == 2 and net.layers[0].heads == H
    W = state["layers.1.W_K.weight"].double()
    assert [[float(v) for v in row] for row in net.layers[1].W_K[1]] == W[d:2 * d].tolist()  # head 1 = rows d..2d-1
    code, out, err = certify(capsys, str(tmp_path / "stack.pt"), "--L", "5", "--no-measure", "--out", str(tmp_path / "o"))
    assert code == 0, err
    heads = read(tmp_path / "o")["results"][0]["certificate"]["heads"]
    assert len(heads) == 4 and "heads with a sink certified" in out
    assert "vacuous" not in out  # a random head below the level is "no sink certified", not a vacuous bound


def test_training_summary_certifies_each_seed(tmp_path, capsys):
    from empirical.training.model import AttentionModel

    model = AttentionModel("softmax", D, ensemble=2, seeds=[3, 4])
    summary = {"config": {"seeds": [3, 4]}, "weights": stored_weights.model_weights(model)}
    (tmp_path / "s.json").write_text(json.dumps(summary))
    loaded = weights.load(tmp_path / "s.json")
    assert [x.label for x in loaded] == ["seed 3", "seed 4"]
    assert [float(v) for v in loaded[1].network.layers[0].W_V[0][0]] == model.layers[0].W_V[1, 0, 0].double().tolist()
    code, out, err = certify(capsys, str(tmp_path / "s.json"), "--seeds", "4", "--L", str(L), "--no-measure",
                             "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "== seed 4" in out and "== seed 3" not in out
    code, _, err = certify(capsys, str(tmp_path / "s.json"), "--seeds", "9", "--out", str(tmp_path / "p"))
    assert code == 2 and "seed(s) [9]" in err and not (tmp_path / "p").exists()


class NotWeights:
    pass


def bad_files(tmp_path):
    import torch

    good = paper_single(softmax_head.build(D, BETA))
    files = {}
    files["shape.pt"] = {**good, "W_K.weight": torch.zeros(D, D + 1)}
    files["nan.pt"] = {**good, "W_V.weight": torch.full((D, D), float("nan"))}
    files["unknown.pt"] = {**good, "extra.weight": torch.zeros(D, D)}
    for name, state in files.items():
        torch.save(state, tmp_path / name)
    torch.save({"model": NotWeights()}, tmp_path / "pickle.pt")
    (tmp_path / "raw.pt").write_bytes(pickle.dumps(NotWeights()))
    np.savez(tmp_path / "obj.npz", L0=np.array([object()], dtype=object))
    np.savez(tmp_path / "keys.npz", **{"L0.W_Q": np.zeros((1, D, D)), "junk": np.zeros(3)})
    (tmp_path / "w.txt").write_text("1 2 3")
    (tmp_path / "bad.json").write_text("{not json")
    return {"shape.pt": "shape", "nan.pt": "NaN", "unknown.pt": "unknown key", "pickle.pt": "weights-only",
            "raw.pt": "weights-only", "obj.npz": "pickle", "keys.npz": "unknown key", "w.txt": "unknown weight format",
            "bad.json": "malformed JSON"}


def test_bad_files_exit_2_with_one_line_and_no_output(tmp_path, capsys):
    expected = bad_files(tmp_path)
    for name, words in expected.items():
        out_dir = tmp_path / f"out-{name}"
        code, out, err = certify(capsys, str(tmp_path / name), "--out", str(out_dir))
        assert code == 2, (name, err)
        assert len(err.strip().splitlines()) == 1 and words in err, (name, err)
        assert not out_dir.exists(), name


def test_a_wrong_shape_is_blamed_on_its_own_matrix(tmp_path, capsys):
    """W_Q gives H and d ([H, d, d]) and W_O is checked against it ([d, H*d]): the one line names
    the matrix whose shape is wrong, not the other."""
    arrays = {k: v for k, v in network_arrays(softmax_head.build(16, BETA)).items()}  # H = 1, d = 16
    np.savez(tmp_path / "flat_q.npz", **{**arrays, "L0.W_Q": arrays["L0.W_Q"][0]})  # W_Q [16, 16], W_O fine
    np.savez(tmp_path / "wide_o.npz", **{**arrays, "L0.W_O": np.zeros((16, 32))})  # W_Q fine, W_O [16, 32]
    said = {}
    for name in ("flat_q.npz", "wide_o.npz"):
        code, out, err = certify(capsys, str(tmp_path / name), "--out", str(tmp_path / f"out-{name}"))
        assert code == 2 and not out and len(err.strip().splitlines()) == 1, (name, err)
        said[name] = err
    assert "layer 0 W_Q has shape [16, 16], expected [H, d, d]" in said["flat_q.npz"]
    assert "W_O" not in said["flat_q.npz"]
    assert "layer 0 W_O has shape [16, 32], expected [16, 16]" in said["wide_o.npz"]


def test_relu_head_is_certified_sink_free_and_unsupported_kinds_are_bad_input(tmp_path, capsys):
    from constructions import abstaining_heads, relu_head

    path = write_network_json(tmp_path / "relu.json", relu_head.build(D))
    code, out, err = certify(capsys, str(path), "--L", str(L), "--no-measure", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert read(tmp_path / "o")["results"][0]["certificate"]["max_bos_weight"] == 0.0
    path = write_network_json(tmp_path / "s1.json", abstaining_heads.build_softmax1(D, 4))
    code, _, err = certify(capsys, str(path), "--L", str(L), "--out", str(tmp_path / "p"))
    assert code == 2 and "on the simplex" in err and not (tmp_path / "p").exists()


def test_a_summary_is_certified_at_its_own_length_and_an_other_L_is_a_stated_override(tmp_path, capsys):
    """d, L and the kind come from the summary (trained at L = 6 here); --L 7 is
    certified as an override that the output and certify.json state; a --kind that disagrees
    with the file's is bad input."""
    from empirical.training.model import AttentionModel

    model = AttentionModel("softmax", D, ensemble=1, seeds=[3])
    summary = {"config": {"seeds": [3], "L": 6, "d": D, "kind": "softmax"}, "weights": stored_weights.model_weights(model)}
    (tmp_path / "s.json").write_text(json.dumps(summary))
    code, out, err = certify(capsys, str(tmp_path / "s.json"), "--no-measure", "--out", str(tmp_path / "a"))
    assert code == 0, err
    record = read(tmp_path / "a")
    assert record["results"][0]["certificate"]["L"] == 6 and not record["length"]["override"]
    assert out.startswith("length: L = 6 (from the training summary)") and "L = 6," in out
    code, out, err = certify(capsys, str(tmp_path / "s.json"), "--L", "7", "--no-measure", "--out", str(tmp_path / "b"))
    assert code == 0, err
    record = read(tmp_path / "b")
    assert record["results"][0]["certificate"]["L"] == 7
    assert record["length"] == {"L": 7, "source": "--L", "trained_L": 6, "override": True,
                                "says": out.splitlines()[0]}
    assert "OVERRIDE: these weights were trained at L = 6" in out
    code, _, err = certify(capsys, str(tmp_path / "s.json"), "--kind", "relu", "--out", str(tmp_path / "c"))
    assert code == 2 and "kind is 'softmax'" in err and not (tmp_path / "c").exists()
    summary["config"]["d"] = D + 1
    (tmp_path / "bad.json").write_text(json.dumps(summary))
    code, _, err = certify(capsys, str(tmp_path / "bad.json"), "--out", str(tmp_path / "d"))
    assert code == 2 and "not the config's 6" in err


def test_a_file_without_a_length_is_certified_at_the_reference_16(tmp_path, capsys):
    path = write_network_json(tmp_path / "w.json", softmax_head.build(D, BETA))
    code, out, err = certify(capsys, str(path), "--no-measure", "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert read(tmp_path / "o")["results"][0]["certificate"]["L"] == 16
    assert out.startswith("length: L = 16 (from the reference default)")


def test_a_checkpoint_nesting_one_state_dict_is_read_from_its_key_and_says_so(tmp_path, capsys):
    """A checkpoint {"model": state_dict} (beside optimizer state and an epoch) is read
    from "model" and the output names the key; two nested state dicts, or none, are bad input
    that says what to extract."""
    import torch

    state = paper_single(softmax_head.build(D, BETA))
    torch.save({"model": state, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-3}]}, "epoch": 7},
               tmp_path / "ckpt.pt")
    code, out, err = certify(capsys, str(tmp_path / "ckpt.pt"), "--L", str(L), "--no-measure",
                             "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "== weights (the state dict under checkpoint key 'model')" in out
    assert read(tmp_path / "o")["results"][0]["label"] == "weights (the state dict under checkpoint key 'model')"
    torch.save({"model": state, "ema": state}, tmp_path / "two.pt")
    code, _, err = certify(capsys, str(tmp_path / "two.pt"), "--out", str(tmp_path / "p"))
    assert code == 2 and "several state dicts (keys 'model', 'ema')" in err and "torch.save(ckpt['model']" in err
    torch.save({"epoch": 7, "note": "no weights"}, tmp_path / "none.pt")
    code, _, err = certify(capsys, str(tmp_path / "none.pt"), "--out", str(tmp_path / "q"))
    assert code == 2 and "keys 'epoch', 'note'" in err and "'state_dict'" in err
