"""Every threshold that decides an SMT verdict is pinned: each test below fails when its
threshold is loosened or tightened by a factor of 2.

- the replay's error check (max error <= eps on every sequence),
- the counterexample's BOS-mass check (replayed BOS mass < theta at the class),
- the margin re-solve (a SAT at eps is re-solved at MARGIN * eps before the replay).
"""

from __future__ import annotations

from fractions import Fraction as F

from proofs.smt import session
from proofs.smt.hardkill import RLIMIT, SAFETY_S
from proofs.smt.classes import enumerate_classes
from proofs.smt.instance import reference_instance
from proofs.smt.replay import HeadParams, LayerModel, class_bos_mass, replay
from proofs.smt.search import search_counterexample

EPS = F(1, 100)
WORK = {"timeout_s": SAFETY_S, "rlimit": RLIMIT}  # a z3 work limit: the same verdict on every machine


def _perturbed(model: LayerModel, delta: F) -> LayerModel:
    """The exact head with content type 1's value moved by delta in coordinate 2 (its one-hot
    coordinate): the error becomes exactly (largest weight on a type-1 key) * delta."""
    head = model.heads[0]
    values = {b: list(v) for b, v in head.values.items()}
    values[1][2] += delta
    return LayerModel(model.kind, [HeadParams(head.scores, values, head.extras)], model.exact)


def test_replay_error_check_is_pinned():
    """An exact ReLU head (error 0) perturbed so that its exact error is e: replayed at eps with
    e = 3/4 eps it passes (fails if the check were tightened to eps/2), with e = 3/2 eps it fails
    (passes if loosened to 2 eps)."""
    inst = reference_instance(2, 4, 0)
    found = search_counterexample(inst, None, "scores", kind="relu", sink_cap=0, **WORK)
    assert found.status == "solution" and found.replay.max_error == "0"
    unit = F(replay(inst, _perturbed(found.model, F(1))).max_error)  # error per unit of delta (exact)
    assert unit > 0
    for ratio, ok in ((F(3, 4), True), (F(3, 2), False)):
        rep = replay(inst, _perturbed(found.model, ratio * EPS / unit), eps=EPS)
        assert F(rep.max_error) == ratio * EPS and rep.ok is ok, (ratio, rep.max_error)


def test_counterexample_bos_mass_check_is_pinned():
    """The replayed length-2 counterexample has BOS mass m at its class. Confirmed as a
    counterexample against theta = 3/2 m (not if the check were tightened to theta/2), rejected
    (candidate) against theta = 3/4 m (confirmed if loosened to 2 theta)."""
    inst = reference_instance(2, 2, F(1, 10))
    r = search_counterexample(inst, F(1, 2), "pattern", **WORK)
    assert r.status == "counterexample"
    cls = next(c for c in enumerate_classes(inst) if c.label(inst) == r.where)
    m = class_bos_mass(inst, r.model, cls)
    m = F(str(m)).limit_denominator(10 ** 12)
    for factor, expected in ((F(3, 2), "counterexample"), (F(3, 4), "candidate")):
        s = session.Session(inst, factor * m, "pattern", 20, None, "softmax", None, False)
        try:
            status, rep, why = s.confirm(r.model, cls)
        finally:
            s.close()
        assert status == expected, (factor, why)


def test_margin_resolve_is_pinned(monkeypatch):
    """Length 3, before the trigger, theta = 1 - 2 eps: a counterexample exists only with an
    error close to eps. Re-solved at MARGIN * eps = 15/16 eps it is found and replays; at half
    the margin the re-solve is UNSAT (no counterexample, only a candidate); at twice the margin
    (15/8 eps > eps) the re-solved model need not meet eps and is not confirmed (seen: the
    re-solve times out or its model fails the replay)."""
    assert session.MARGIN < 1 <= 2 * session.MARGIN  # tighter than the check, not by a factor 2
    inst = reference_instance(2, 3, EPS, covered="pre_trigger")
    r = search_counterexample(inst, 1 - 2 * EPS, "chain", **WORK)
    assert r.status == "counterexample" and r.replay.ok
    monkeypatch.setattr(session, "MARGIN", session.MARGIN / 2)
    half = search_counterexample(inst, 1 - 2 * EPS, "chain", **WORK)
    assert half.status == "candidate" and "unsat at eps'" in half.reason
