"""The certificates' figures in ``sinks reproduce`` (empirical.pipeline.parts.certificate_tables): one-sided checks
against closed forms, and the tolerance that decides them pinned."""

import math

from empirical.pipeline.parts import certificate_tables


def _closed(beta=10, L=16):
    e = math.exp(beta)
    return e / (e + L - 1), max((L - 1) / (e + L - 1), 1 / (1 + 2 * e))


def test_closed_form_agreement_is_one_sided():
    """A certificate on the wrong side of its closed form fails however close it is (the old
    check was two-sided: |certified - closed| <= 1e-9 closed passed an unsound certificate)."""
    closed_min, closed_eta = _closed()
    below, above = math.nextafter(closed_min, 0), math.nextafter(closed_min, 1)
    ok = certificate_tables.closed_form_agreement(below * (1 - 1e-12), closed_eta * (1 + 1e-12), 10, 16)
    assert ok["sound"] and ok["agrees"]
    assert not certificate_tables.closed_form_agreement(above, closed_eta * (1 + 1e-12), 10, 16)["sound"]
    assert not certificate_tables.closed_form_agreement(below * (1 - 1e-12), closed_eta * (1 - 1e-12), 10, 16)["sound"]


def test_agreement_tolerance_is_pinned():
    """AGREEMENT (1e-9 relative) decides the constructions' certificate claim: a gap of 0.7x it
    agrees (it would not at half the tolerance), 1.5x does not (it would at twice)."""
    assert certificate_tables.AGREEMENT == 1e-9
    closed_min, closed_eta = _closed()
    tol = certificate_tables.AGREEMENT
    for factor, agrees in ((0.7, True), (1.5, False)):
        r = certificate_tables.closed_form_agreement(closed_min * (1 - factor * tol), closed_eta * (1 + 1e-12), 10, 16)
        assert r["sound"] and r["agrees"] is agrees
        r = certificate_tables.closed_form_agreement(closed_min * (1 - 1e-12), closed_eta * (1 + factor * tol), 10, 16)
        assert r["sound"] and r["agrees"] is agrees
