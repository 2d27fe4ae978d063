"""Training: configs, determinism, ensemble members equal single runs, freezing, and short runs that
sink (softmax) or put zero weight on non-trigger rows (ReLU)."""

import dataclasses
import json

import pytest
import torch

from constructions.errors import BadInput
from empirical.host import device as D
from empirical.training import train as T



# Small and quick: d = 6, L = 6, a larger learning rate; converges in a few hundred steps.
SMALL = dict(d=6, L=6, eval_trigger=3, lr=3e-3, eval_sequences=200, log_every=100)


def assert_same_numbers(a, b, rel, abs_=1e-8):
    """Nested JSON values equal: ints, bools and strings exactly, floats to ``rel`` / ``abs_``."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same_numbers(a[k], b[k], rel, abs_)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_numbers(x, y, rel, abs_)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=rel, abs=abs_), (a, b)
    else:
        assert a == b


def _strip(summary):
    """Everything but wall times and provenance (versions, machine)."""
    out = {k: v for k, v in summary.items() if k not in ("timing", "provenance")}
    return json.loads(json.dumps(out))


@pytest.fixture(scope="module")
def trained():
    """Two short runs to the stop rule, softmax and ReLU, two seeds each."""
    return {kind: T.train(T.TrainConfig(kind=kind, seeds=(0, 1), max_steps=3000, **SMALL), quiet=True)
            for kind in ("softmax", "relu")}


def test_defaults_follow_spec_section_4():
    one, stack = T.TrainConfig(), T.TrainConfig(layers=4, heads=4)
    assert (one.lr, one.residual, one.betas, one.batch, one.tol) == (1e-3, False, (0.9, 0.95), 128, 5e-3)
    assert (stack.lr, stack.residual) == (1e-4, True)
    assert (one.d, one.L, one.eval_sequences, one.eval_trigger, one.max_steps) == (16, 16, 1000, 7, 50_000)


@pytest.mark.parametrize("fields, message", [
    (dict(kind="cosine"), "unknown attention kind"),
    (dict(layers=0), "layers"),
    (dict(heads=1.5), "heads"),
    (dict(lr=-1.0), "lr"),
    (dict(betas=(0.9,)), "betas"),
    (dict(tol=0), "tol"),
    (dict(seeds=()), "seeds"),
    (dict(seeds=(1, 1)), "repeated"),
    (dict(seeds=(-1,)), "seeds"),
    (dict(d=3), "'d'"),
    (dict(L=8, eval_trigger=8), "eval_trigger"),
    (dict(max_steps=0), "max_steps"),
])
def test_bad_configs_are_bad_input(fields, message):
    with pytest.raises(BadInput, match=message):
        T.TrainConfig(**fields)


def test_config_from_json_rejects_unknown_fields_and_round_trips():
    cfg = T.TrainConfig(kind="relu", layers=2, heads=2, seeds=(3, 4))
    again = T.TrainConfig.from_dict(json.loads(json.dumps(dataclasses.asdict(cfg))))
    assert again == cfg
    with pytest.raises(BadInput, match="unknown field"):
        T.TrainConfig.from_dict({"kind": "softmax", "learning_rate": 1e-3})


def test_resolve_device():
    assert D.resolve_device("cpu") == "cpu"
    assert D.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(BadInput, match="unknown device"):
        D.resolve_device("tpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(BadInput, match="no CUDA"):
            D.resolve_device("cuda")


def test_same_seed_same_numbers():
    cfg = T.TrainConfig(seeds=(5,), max_steps=25, **{**SMALL, "eval_sequences": 30})
    assert _strip(T.train(cfg, quiet=True)) == _strip(T.train(cfg, quiet=True))


def test_ensemble_member_equals_the_single_run_of_its_seed():
    cfg = T.TrainConfig(kind="softmax", layers=2, heads=2, seeds=(0, 7, 3), max_steps=30,
                        **{**SMALL, "eval_sequences": 20})
    together = T.train(cfg, quiet=True)
    alone = T.train(dataclasses.replace(cfg, seeds=(7,)), quiet=True)
    a, b = together["members"][1], alone["members"][0]
    assert (a["seed"], a["steps"]) == (b["seed"], b["steps"]) == (7, 30)
    assert a["eval_mse"] == pytest.approx(b["eval_mse"], rel=1e-4)
    for la, lb in zip(a["layers"], b["layers"]):
        for ha, hb in zip(la, lb):
            assert ha["bos_nontrigger_mean"] == pytest.approx(hb["bos_nontrigger_mean"], rel=1e-4)
    losses_a = [h["loss"][1] for h in together["history"]]
    losses_b = [h["loss"][0] for h in alone["history"]]
    assert losses_a == pytest.approx(losses_b, rel=1e-4)
    # A different seed really is a different run.
    assert together["members"][0]["eval_mse"] != pytest.approx(b["eval_mse"], rel=1e-3)


def test_a_stopped_member_never_moves_again(trained):
    """Members stop at different steps; after its stop a member's weights never change: its BOS
    mass on the fixed history set is bit for bit the same at every later history point, and its
    evaluation is that of the single run of its seed, which ends at that step: the same stopping
    step exactly, floats to 1e-3 relative (an ensemble of 2 and a single model round differently in
    the last bit, and 400 training steps amplify that to ~1e-5 here)."""
    summary = trained["softmax"]
    steps = [m["steps"] for m in summary["members"]]
    assert steps[0] != steps[1]
    first = steps.index(min(steps))
    after = [h["bos_nontrigger_mean"][0][first] for h in summary["history"] if h["step"] >= steps[first]]
    assert len(after) > 1 and all(a == after[0] for a in after)
    later = [h["bos_nontrigger_mean"][0][1 - first] for h in summary["history"] if h["step"] >= steps[first]]
    assert len({json.dumps(v) for v in later}) > 1  # the other member still trains
    alone = T.train(T.TrainConfig(kind="softmax", seeds=(summary["config"]["seeds"][first],), max_steps=3000,
                                  **SMALL), quiet=True)
    assert_same_numbers(alone["members"][0], summary["members"][first], rel=1e-3, abs_=1e-6)


def test_softmax_run_sinks_and_the_bound_holds(trained):
    summary = trained["softmax"]
    for member in summary["members"]:
        assert member["converged"] and member["final_batch_max_abs_error"] < 5e-3
        head = member["layers"][0][0]
        assert head["bos_nontrigger_mean"] > 0.99
        assert head["bos_trigger_mean"] < 0.05
        b = head["bound"]
        assert b["violations"] == 0 and b["min_slack"] >= -1e-9
        assert b["bound_min"] <= head["bos_nontrigger_min"] + 1e-9
        assert b["bound_mean"] > 0.9  # the certified bound is close to 1 on a trained head
    # History: the sink mass and the bound are recorded along training.
    first, last = summary["history"][0], summary["history"][-1]
    assert last["bos_nontrigger_mean"][0][0][0] > first["bos_nontrigger_mean"][0][0][0]
    assert all(b <= m + 1e-9 for b, m in zip(last["bound_min"], [1.0, 1.0]))


def test_relu_run_puts_exactly_zero_weight_on_non_trigger_rows(trained):
    for member in trained["relu"]["members"]:
        assert member["converged"]
        head = member["layers"][0][0]
        assert head["row_nontrigger_max"] == 0.0  # every weight of every non-trigger row is 0
        assert head["bos_nontrigger_mean"] == 0.0
        assert "bound" not in head  # ReLU rows are not on the simplex: no certified bound


def test_summary_is_json_with_provenance_and_patterns(trained):
    summary = trained["softmax"]
    text = json.dumps(summary, allow_nan=False)
    assert "provenance" in summary and summary["provenance"]["device"] == "cpu"
    assert summary["provenance"]["seed"] == [0, 1]
    mean = summary["patterns"]["mean"]  # [S][layers][H][L][L]
    assert (len(mean), len(mean[0]), len(mean[0][0]), len(mean[0][0][0])) == (2, 1, 1, 6)
    assert len(text) < 2_000_000


def test_summary_records_where_the_time_went_in_wall_and_cpu_seconds_and_the_load(trained):
    t = trained["softmax"]["timing"]
    split, total = t["split"], t["total"]
    assert set(split) == {"formulation", "training", "history", "evaluation", "bound", "weights"}
    assert t["formulation"] == {"name": "bmm", "chosen_by": "environment"}  # tests/conftest.py sets it
    assert trained["softmax"]["provenance"]["formulation"] == "bmm"
    assert all(v["wall_s"] >= 0 and v["cpu_s"] >= 0 for v in split.values())
    assert split["training"]["wall_s"] == round(t["seconds"], 3) and split["training"]["cpu_s"] > 0
    assert split["bound"]["cpu_s"] <= split["evaluation"]["cpu_s"] + 1e-3  # the bound is part of the evaluation
    phases = sum(split[k]["wall_s"] for k in ("formulation", "training", "history", "evaluation", "weights"))
    assert phases <= total["wall_s"] + 1e-2 and total["cpu_s"] >= split["training"]["cpu_s"]
    assert total["load_start"] is not None and total["load_mean"] is not None
    assert t["machine"]["owned_cores"] >= 1 and t["machine"]["cpu"]


def test_a_stack_bounds_the_first_200_sequences_unless_asked(tmp_path):
    from empirical.pipeline import cli

    assert T.TrainConfig().bound_sequences == 1000  # one head: T1's bound on every sequence
    assert T.TrainConfig(layers=2, heads=2).bound_sequences == T.STACK_BOUND_SEQUENCES == 200
    assert T.TrainConfig(heads=2, eval_sequences=50).bound_sequences == 50
    assert T.TrainConfig(layers=2, bound_sequences=1000).bound_sequences == 1000
    out = tmp_path / "run.json"
    assert cli.main(["train", "--d", "6", "--L", "6", "--eval-trigger", "3", "--layers", "2", "--max-steps", "2",
                     "--eval-sequences", "20", "--bound-sequences", "7", "--quiet", "--device", "cpu",
                     "--out", str(out)]) == 0
    assert json.loads(out.read_text())["config"]["bound_sequences"] == 7


def test_capped_run_is_not_called_converged():
    summary = T.train(T.TrainConfig(seeds=(0,), max_steps=5, **{**SMALL, "eval_sequences": 20}), quiet=True)
    member = summary["members"][0]
    assert not member["converged"] and member["steps"] == 5


def test_cli_train_writes_a_summary_and_rejects_bad_input(tmp_path, capsys):
    from empirical.pipeline import cli

    out = tmp_path / "run.json"
    rc = cli.main(["train", "--d", "6", "--L", "6", "--eval-trigger", "3", "--seeds", "0", "--max-steps", "3",
                   "--eval-sequences", "10", "--quiet", "--device", "cpu", "--out", str(out)])
    assert rc == 0 and json.loads(out.read_text())["config"]["max_steps"] == 3
    printed = capsys.readouterr().out
    assert "NOT converged" in printed and "time: training" in printed and "s CPU, load" in printed
    assert cli.main(["train", "--kind", "cosine", "--out", str(tmp_path / "bad.json")]) == 2
    assert cli.main(["train", "--device", "warp-drive", "--out", str(tmp_path / "bad.json")]) == 2
    assert not (tmp_path / "bad.json").exists()
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["softmax1", "sink_logit", "sigmoid", "gated", "sigmoid_norm"])
def test_every_registered_kind_trains(kind):
    from constructions import attention

    if kind not in attention.names():
        pytest.skip(f"kind {kind} is not registered")
    cfg = T.TrainConfig(kind=kind, d=5, L=5, eval_trigger=3, seeds=(0, 1), max_steps=3, eval_sequences=8)
    summary = T.train(cfg, quiet=True)
    head = summary["members"][1]["layers"][0][0]
    assert 0 <= head["bos_nontrigger_mean"] and ("bound" in head) == attention.get(kind).normalised
    json.dumps(summary, allow_nan=False)


def test_figures_are_drawn_from_saved_json(trained, tmp_path):
    from constructions import files
    from empirical.training import figures

    saved = {}
    for kind, summary in trained.items():
        files.write_json(tmp_path / f"{kind}.json", summary)
        saved[kind] = files.read_json(tmp_path / f"{kind}.json")
    paths = [
        figures.pattern_maps([saved["softmax"], saved["relu"]], tmp_path / "maps.png"),
        figures.head_grid(saved["softmax"], tmp_path / "grid.png"),
        figures.sink_vs_step(saved["softmax"], tmp_path / "steps.png"),
        figures.error_vs_bos([saved["softmax"]], tmp_path / "error.png"),
    ]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_training_part_turns_runs_into_claims_and_tables(trained):
    from empirical.pipeline import reproduce
    from empirical.pipeline.parts import training as part

    summaries = {("softmax", 1, 1): trained["softmax"], ("relu", 1, 1): trained["relu"]}
    output = {"claims": part._claims(summaries, {}),
              "tables": [part._runs_table(summaries), part._heads_table(summaries)]}
    claims, tables, _ = reproduce.validate_output(json.loads(json.dumps(output)))
    verdicts = {c["claim"].split(":")[0] + c["claim"][-20:]: c["verdict"] for c in claims}
    assert list(verdicts.values()) == ["observed", "verified numerically", "observed", "observed"], verdicts
    assert len(tables[0]["rows"]) == 2 and len(tables[1]["rows"]) == 2
    # A run capped before the stop rule is never called converged, and its claim is not "observed".
    capped = json.loads(json.dumps(trained["relu"]))
    for m in capped["members"]:
        m["converged"] = False
    assert all(c["verdict"] == "unknown" for c in part._t3_relu(capped, {}))
    assert "not converged" in part._steps_cell(capped)
