"""Beyond the paper, trained (small d = L = 8 to keep the suite fast): a normalised kind (sigmoid_norm) is predicted and observed to sink;
a kind that can abstain (softmax1) is observed not to need BOS while softmax cannot do without
it; the table's verdict logic (a failing prediction is reported as failing); names by CLI/config."""

import pytest
import torch

from constructions import attention, task
from constructions.errors import BadInput
from empirical.analysis import beyond_runs
from empirical.pipeline.cli import main
from empirical.pipeline.parts import beyond as part




def _summary(run, seeds=(0,)):
    return beyond_runs.summarise(run, beyond_runs.train_run(run, seeds))


def test_sigmoid_norm_is_predicted_and_observed_to_sink():
    kind = attention.get("sigmoid_norm")
    assert kind.normalised and not kind.can_abstain
    text, check = part.predict("sigmoid_norm", "reference")
    run = beyond_runs.BeyondRun("sigmoid_norm", "reference", max_steps=2500, eval_sequences=100, d=8, L=8)
    s = _summary(run)
    assert s["converged"] == 1 and s["error_max"] < 0.01
    assert s["sink_min"] > part.SINK and check(s), s  # BOS mass at non-trigger queries


def test_a_kind_that_can_abstain_does_not_need_bos_and_softmax_does():
    """Without BOS (position 0 an ordinary content token) softmax1 reaches the stop rule with
    ~no mass on position 0 and ~no row mass at non-trigger queries; softmax cannot."""
    assert attention.get("softmax1").can_abstain
    s1 = _summary(beyond_runs.BeyondRun("softmax1", "no_bos", max_steps=2500, eval_sequences=100, d=8, L=8))
    assert s1["converged"] == 1 and s1["error_max"] < 0.01
    assert s1["sink_mean"] < 0.01 and s1["row_mass_mean"] < 0.01
    sm = _summary(beyond_runs.BeyondRun("softmax", "no_bos", max_steps=300, eval_sequences=100, d=8, L=8))
    assert sm["converged"] == 0 and sm["error_median"] > 0.1
    assert part.predict("softmax1", "no_bos")[1](s1) and part.predict("softmax", "no_bos")[1](sm)


def test_variant_train_config_trains_at_L_and_evaluates_at_eval_L():
    cfg = beyond_runs.BeyondRun("relu", "length64").train_config((0, 1))
    assert cfg.task().L == 16 and cfg.task().trigger is None
    assert cfg.task(trigger=7).L == 64 and cfg.task(trigger=7).trigger is None  # random triggers at 64
    nb = beyond_runs.BeyondRun("softmax", "no_bos").train_config((0,))
    assert nb.task(trigger=7) == task.TaskConfig(trigger=7, bos=False)
    assert beyond_runs.BeyondRun("softmax", "triggers3").train_config((0,)).task(trigger=7).triggers == 3
    assert not cfg.bound_applies


def _fake(sink_min, converged, sink_mean=None, seeds=3):
    return {"label": "x", "seeds": seeds, "sink_mean": sink_min if sink_mean is None else sink_mean,
            "sink_min": sink_min, "row_mass_mean": 1.0, "error_median": 0.3, "error_max": 0.4,
            "converged": converged, "steps_mean": 100.0}


def test_table_reports_a_failing_prediction_as_failing():
    runs = {("softmax", "reference", 1, 1): _fake(0.5, 3),  # did NOT sink: prediction fails
            ("sigmoid_norm", "reference", 1, 1): _fake(0.99, 3),
            ("softmax", "gaussian", 1, 1): _fake(0.2, 3)}
    rows, claims = part.kind_rows(runs, {})
    held = {r[0]: r[-1] for r in rows}
    assert held["softmax"] == "NO" and held["sigmoid_norm"] == "yes" and held["relu"] == "—"
    verdicts = {c["claim"].split(":")[0]: c["verdict"] for c in claims}
    assert verdicts["softmax (predicted"] == "not met" and verdicts["sigmoid_norm (predicted"] == "observed"
    v_rows, v_claims = part.variant_rows(runs)
    assert [r[-1] for r in v_rows] == ["NO"] and v_claims[0]["verdict"] == "not met"  # a measurement


def test_a_kind_judged_only_by_its_construction_is_not_called_observed():
    curve = [{"gap": 16.0, "max_error": 1e-6, "max_bos_mass": 1e-7}]
    good = {"softmax1": {"verified": True, "limit_L": 5, "curve": curve}}
    _, claims = part.kind_rows({}, good, kinds=("softmax1",))
    assert [c["verdict"] for c in claims] == ["verified exactly"]  # no training ran for it
    _, claims = part.kind_rows({("softmax1", "no_bos", 1, 1): _fake(0.0, 2)}, good, kinds=("softmax1",))
    assert [c["verdict"] for c in claims] == ["observed"]
    bad = {"softmax1": {"verified": False, "limit_L": 5, "curve": curve}}
    _, claims = part.kind_rows({}, bad, kinds=("softmax1",))
    assert [c["verdict"] for c in claims] == ["failed"]  # the construction failed its own check


def test_a_kind_claim_says_what_was_judged_and_what_was_observed():
    """softmax1 "no sink needed" is judged by its no-BOS runs; its with-BOS runs park mass on BOS,
    and the claim says so. relu's failure without BOS is predicted, for the divisor's reason."""
    runs = {("softmax1", "reference", 1, 1): _fake(0.996, 3, sink_mean=0.997), ("softmax1", "no_bos", 1, 1): _fake(0.0, 2),
            ("relu", "reference", 1, 1): _fake(0.0, 3), ("relu", "no_bos", 1, 1): _fake(0.0, 0)}
    soft, relu = part.kind_rows(runs, {}, kinds=("softmax1", "relu"))[1]
    assert soft["verdict"] == "observed" and "without BOS training reaches the stop rule" in soft["claim"]
    assert "trained heads put 0.997 on BOS" in soft["claim"] and "reported, not judged" in soft["claim"]
    assert relu["verdict"] == "observed" and "with BOS no seed sinks" in relu["claim"]
    assert "divisor max(i, 1) counts position 0 as BOS" in relu["claim"]


def test_relu_and_sigmoid_are_predicted_not_to_solve_no_bos_exactly():
    text, check = part.predict("relu", "no_bos")
    assert "divisor" in text
    assert check(_fake(0.0, 0)) and not check(_fake(0.0, 2))
    assert part.predict("softmax1", "reference")[1] is None  # reported, not judged


@pytest.mark.parametrize("argv, message", [
    (["beyond", "--kinds", "softermax"], "unknown attention kind 'softermax'; valid: softmax, relu, softmax1"),
    (["beyond", "--variants", "nobos"], "unknown task variant 'nobos'; valid: reference, no_bos, triggers3"),
    (["beyond", "--shapes", "2by2"], "LAYERSxHEADS"),
])
def test_cli_rejects_unknown_names_with_the_valid_ones(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_plans_from_config_files_are_validated(tmp_path):
    from constructions import files

    plan = files.config_from_dict(part.Plan, {"kinds": ["gated"], "variants": ["retrieval"], "shapes": [[2, 2]]})
    assert plan.shapes == ((2, 2),) and plan.jobs()[0].config.variant == "retrieval"
    with pytest.raises(BadInput, match="unknown task variant 'length32'"):
        files.config_from_dict(part.Plan, {"kinds": ["gated"], "variants": ["length32"]})
    with pytest.raises(BadInput, match="unknown field"):
        files.config_from_dict(part.Plan, {"kinds": ["gated"], "variants": ["reference"], "colour": 1})
    for variant in beyond_runs.VARIANTS:  # every named variant builds a valid training config
        beyond_runs.BeyondRun("softmax", variant).train_config((0,)).task(trigger=7)


def test_smt_column_reads_the_smt_parts_stored_record(tmp_path):
    """The smt part's per-kind verdicts, as ``sinks reproduce`` stores them (extra output under
    "details"), reach the beyond table's SMT column."""
    from constructions import files
    from empirical.pipeline import reproduce

    output = {"claims": [], "kinds": {"softpick": {"status": "counterexample"}}}
    _, _, details = reproduce.validate_output(output)
    files.write_json(tmp_path / "smt.json", {"part": "smt", "details": details})
    kinds = part.stored_smt_kinds(tmp_path)
    assert part.smt_cell("softpick", kinds).startswith("SAT, replayed: no sink needed")
    assert part.stored_smt_kinds(tmp_path / "nowhere") == {}
