"""``sinks certify SUMMARY --stack-method box|zonotope|both|linear|directional|joint``: a stack's certificate by
either method or both side by side, on a tiny 3-layer stack; the record says config, seed, versions."""

import json

from empirical.analysis import certificates
from empirical.pipeline import cli
from empirical.training import stored_weights

D, L = 4, 5


def summary_file(tmp_path, kind="softmax", seed=0):
    from empirical.training.model import AttentionModel

    model = AttentionModel(kind, D, layers=3, heads=1, residual=True, ensemble=1, seeds=[seed])
    summary = {"config": {"seeds": [seed], "L": L, "d": D, "kind": kind, "layers": 3, "heads": 1},
               "weights": stored_weights.model_weights(model)}
    path = tmp_path / f"{kind}-3x1.json"
    path.write_text(json.dumps(summary))
    return path


def certify(capsys, *args):
    code = cli.main(["certify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_both_methods_certify_a_3_layer_stack_and_the_record_says_config_seed_versions(tmp_path, capsys):
    path = summary_file(tmp_path, seed=5)
    code, out, err = certify(capsys, str(path), "--stack-method", "both", "--out", str(tmp_path / "o"))
    assert code == 0, err
    record = json.loads((tmp_path / "o" / "certify.json").read_text())
    prov = record["provenance"]
    assert prov["config"]["stack_method"] == "both" and prov["seed"] == [5] and prov["device"] == "cpu"
    assert {"python", "numpy"} <= set(prov["versions"])
    result = record["results"][0]
    box, zono = result["certificate"], result["zonotope"]
    assert (box["stack_method"], zono["stack_method"]) == ("box", "zonotope")
    assert [(h["layer"], h["head"]) for h in zono["heads"]] == [(0, 0), (1, 0), (2, 0)]
    assert len(zono["stream_radius_after_trigger"]["per_layer"]) == 3
    assert "box: CPU time" in out and "zonotope: CPU time" in out and "entering each layer" in out
    for k, row in enumerate(result["table"]):
        # a certified minimum over every input cannot lie above the smallest BOS mass measured
        _, mean, low, b, z, _ = row
        assert row[3:5] == [box["heads"][k]["min_bos_certified"], zono["heads"][k]["min_bos_certified"]]
        assert b <= low + 1e-12 and z <= low + 1e-12 and low <= mean


def test_zonotope_alone_replaces_the_box_and_a_non_softmax_stack_is_bad_input(tmp_path, capsys):
    path = summary_file(tmp_path)
    code, _, err = certify(capsys, str(path), "--stack-method", "zonotope", "--no-measure", "--out", str(tmp_path / "o"))
    assert code == 0, err
    result = json.loads((tmp_path / "o" / "certify.json").read_text())["results"][0]
    assert result["certificate"]["stack_method"] == "zonotope" and "zonotope" not in result
    sigmoid = summary_file(tmp_path, kind="sigmoid_norm")
    code, out, err = certify(capsys, str(sigmoid), "--stack-method", "zonotope", "--out", str(tmp_path / "p"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "softmax only" in err
    assert not (tmp_path / "p").exists() and out == ""


def test_the_verdict_is_the_larger_of_the_two_sound_bounds():
    def cert(*mins):
        return {"sink_level": 0.5, "heads": [{"layer": 0, "head": h, "min_bos_certified": m, "per_position": [None, m]}
                                             for h, m in enumerate(mins)]}

    rows = certificates.stack_rows(cert(0.4, 0.6), None, cert(0.6, 0.4))
    assert [r[3:5] for r in rows] == [[0.4, 0.6], [0.6, 0.4]]
    assert all(r[5].startswith("sink certified") for r in rows)
    assert certificates.stack_rows(cert(0.4), None, cert(0.45))[0][5] == "no useful bound"
    assert certificates.first_below(cert(0.4, 0.6)) == [("L0H0", 1, 0.4, 0.4)]


import pytest


@pytest.mark.parametrize("method", ["linear", "directional", "joint"])
def test_linear_method_certifies_below_the_measured_minimum(tmp_path, capsys, method):
    path = summary_file(tmp_path, seed=5)
    code, out, err = certify(capsys, str(path), "--stack-method", method, "--out", str(tmp_path / "o"))
    assert code == 0, err
    result = json.loads((tmp_path / "o" / "certify.json").read_text())["results"][0]
    assert result["certificate"]["stack_method"] == method and f"{method}: CPU time" in out
    for row in result["table"]:
        _, mean, low, bound = row[:4]
        assert bound <= low + 1e-12 and low <= mean


def test_joint_nodes_reach_the_certificate_and_bad_values_are_refused(tmp_path, capsys):
    path = summary_file(tmp_path, seed=5)
    code, out, err = certify(capsys, str(path), "--stack-method", "joint", "--joint-nodes", "3", "--out", str(tmp_path / "o"))
    assert code == 0, err
    result = json.loads((tmp_path / "o" / "certify.json").read_text())
    assert "(3 boxes a search)" in result["results"][0]["certificate"]["method"]
    assert result["provenance"]["config"]["joint_nodes"] == 3
    for args in (["--stack-method", "joint", "--joint-nodes", "0"], ["--stack-method", "directional", "--joint-nodes", "5"]):
        code, out, err = certify(capsys, str(path), *args, "--out", str(tmp_path / "bad"))
        assert code == 2 and "--joint-nodes" in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "bad").exists()
