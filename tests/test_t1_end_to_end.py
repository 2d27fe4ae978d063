"""T1 in full on trained weights: the worst-case setting gives heads whose
certified worst-case error is inside T1 (b)'s range, and T1's bounds are checked against the
certified minima, a check that can fail. Tiny settings (d = 6, L = 6) keep it to seconds."""

import dataclasses

import pytest

from empirical.pipeline.parts import t1_end_to_end as E
from empirical.analysis import worst_case
from empirical.analysis.certificates import certify_network
from empirical.weights.formats import networks_from_summary
from proofs.certify.head import t1

TINY = worst_case.WorstCaseConfig(d=6, L=6, steps=150, refresh=30, eval_sequences=200, eval_trigger=3,
                                 reference_lr=3e-3, lr=3e-3)


@pytest.fixture(scope="module")
def tiny():
    summary = worst_case.worst_case_job(TINY, (0,))
    return summary, certify_network(networks_from_summary(summary)[0].network, TINY.L)


def test_t1b_end_to_end_on_a_worst_case_head(tiny):
    """The test that can fail: T1 (b)'s bound 1 - f_all(eta_up) above a certified minimum whose
    witness replays below it would refute T1; below every certified minimum, T1 is consistent."""
    _, cert = tiny
    e, table = cert["eta"], cert["t1"]
    assert e["eta_lo"] <= e["eta_up"] <= float(t1.ALL_MAX)  # inside T1 (b)'s range, certified
    assert table["bounds"]["all_applies"] and table["bounds"]["pre_applies"]
    assert table["overall"] == "consistent"
    for row in table["rows"]:
        assert row["t1_bound"] is not None and row["certified_min"] >= row["t1_bound"]
    assert cert["min_bos_nontrigger"] > 0.99


def test_the_reference_head_of_the_same_seed_is_outside_t1b(tiny):
    """What the fine-tuning buys: the reference run alone (the stop rule on one random batch)
    leaves the certified worst-case error above 1/120 at this size too."""
    summary, cert = tiny
    member = summary["members"][0]
    ref = {"config": {"seeds": [0]}, "weights": [member["reference_weights"]]}
    ref_cert = certify_network(networks_from_summary(ref)[0].network, TINY.L)
    assert ref_cert["eta"]["eta_lo"] > float(t1.ALL_MAX) > cert["eta"]["eta_up"]
    assert member["reference_converged"] and member["reference_steps"] < TINY.reference_max_steps


def test_the_setting_is_deterministic_and_registered():
    from empirical.pipeline.sweep import Job, resolve_fn

    short = dataclasses.replace(TINY, steps=6, refresh=3, reference_max_steps=20)
    a, b = worst_case.worst_case_job(short, (1,)), worst_case.worst_case_job(short, (1,))
    assert a["weights"] == b["weights"] and a["members"][0]["history"] == b["members"][0]["history"]
    assert resolve_fn(E.JOB_FN) is worst_case.worst_case_job
    assert Job(E.JOB_FN, short, (1,)).run_id == Job(E.JOB_FN, short, (1,)).run_id
    assert [round(worst_case.learning_rate(TINY, s), 12) for s in (0, TINY.steps)] == [TINY.lr, TINY.lr_end]


def test_report_tables_claims_and_figure(tiny, tmp_path):
    summary, _ = tiny
    out = E.report(tmp_path, summary)
    seeds, positions = out["tables"]
    assert len(seeds["rows"]) == 1 and seeds["rows"][0][seeds["columns"].index("T1 check")] == "consistent"
    assert len(positions["rows"]) == sum(1 for i in range(1, TINY.L) for c in ("before", "after")
                                         if (c == "before" and i <= TINY.L - 2) or (c == "after" and i >= 3))
    claim, ratio = out["claims"]
    assert claim["verdict"] == "verified exactly" and claim["figures"] == [E.FIGURE]
    assert (tmp_path / E.FIGURE).read_bytes()[:4] == b"\x89PNG"
    assert ratio["verdict"] == E.ratio_verdict([out["details"]["results"][0]["certificate"]["eta"]["ratio"]])
    # the witness-slice bound: the witness lies in its slice, and the slice is part of every input
    eta, fq = out["details"]["results"][0]["certificate"]["eta"], out["details"]["results"][0]["fixed_query"]
    assert (fq is None) == (eta["case"] != "trigger")
    if fq is not None:
        # (eta_up's own bound at the trigger may lie below the slice's: both are upper bounds)
        assert eta["eta_lo"] <= fq["bound"] <= eta.get("eta_up_box", eta["eta_up"]) and fq["ratio"] == fq["bound"] / eta["eta_lo"]
        column = seeds["columns"].index("bound / eta_lo over the witness's trigger position and content")
        assert seeds["rows"][0][column] == E._fmt(fq["ratio"], 3)


def test_ratio_level_is_pinned():
    """RATIO_MAX (1.1) decides the eta-bracket claim; pinned on its margin 0.1: a ratio 0.7 margins
    above 1 passes (it would fail at half the margin), 1.5 margins fails (it would pass at twice)."""
    assert E.RATIO_MAX == 1.1
    margin = E.RATIO_MAX - 1
    assert E.ratio_verdict([1 + 0.7 * margin, 1.0]) == "verified exactly"
    assert E.ratio_verdict([1 + 1.5 * margin, 1.0]) == "not met"
    assert E.ratio_verdict([None]) == "not met"  # eta_lo = 0: no bracket at all
