"""The heads that attain T1's bounds on the equal-content sequences of content 0 (exact)."""

from fractions import Fraction

import pytest
import sympy

from constructions import tight_heads
from constructions.errors import BadInput


def test_t1a_tight_head_attains_the_bound_exactly():
    import sympy

    from constructions import tight_heads

    p = tight_heads.t1a_parameters(**tight_heads.DEFAULT)
    assert p["h_t"] + p["g_t"] < 1 and p["h_r"] < 0 and p["E"] > 0  # the trigger image is a large negative flag
    r = tight_heads.equal_content_report(tight_heads.build_t1a(), 4, 0)
    eta = r["eta"]
    f_pre = 12 * eta / (5 - 12 * eta)
    assert eta == sympy.Rational(1, 1000) and r["where"] == (2, 3)
    assert sympy.Rational(99, 100) < (1 - r["min_bos_pre"]) / f_pre < 1
    with pytest.raises(BadInput):
        tight_heads.t1a_parameters(Fraction(1, 10), Fraction(1), Fraction(1))  # eta above 1/12



def test_t1b_head_comes_within_a_thousandth_of_the_bound():
    r = tight_heads.equal_content_report(tight_heads.build_t1b(), 5, 0)
    e = r["eta"]
    m_r = 1 - 6 * e - 8 * e * (1 + 48 * e) / (1 - 96 * e)
    f_all = 4 * e / (m_r + 2 * e)
    assert abs(e - sympy.Rational(1, 10000)) < sympy.Rational(1, 10 ** 11)  # the design's eta, recomputed exactly
    assert r["where_nontrigger"][0] > r["where_nontrigger"][1]  # tight after the trigger
    assert sympy.Rational(998, 1000) < (1 - r["min_bos_nontrigger"]) / f_all < 1


def test_tight_heads_are_tight_only_on_their_content():
    """At content 1/2 the T1(a) head errs more than eta (it ignores the trigger's own content)."""
    r = tight_heads.equal_content_report(tight_heads.build_t1a(), 4, Fraction(1, 2))
    assert r["eta"] > sympy.Rational(1, 1000)


def test_construct_prints_the_tight_heads(capsys):
    from empirical.pipeline import cli

    for name, L in (("tight-t1a", "4"), ("tight-t1b", "5")):
        assert cli.main(["construct", name, "--d", "4", "--L", L]) == 0
        assert "attains T1" in capsys.readouterr().out
    assert cli.main(["construct", "tight-t1a", "--heads", "2"]) == 2


def _f_all(e):
    m_r = 1 - 6 * e - 8 * e * (1 + 48 * e) / (1 - 96 * e)
    return 4 * e / (m_r + 2 * e)


def test_published_figures_of_the_tight_heads():
    """The numbers the READMEs and t1_tightness's evidence print, recomputed exactly: a changed
    construction fails here even when the statements stay refuted."""
    a = tight_heads.equal_content_report(tight_heads.build_t1a(), 4, 0)
    e = a["eta"]
    assert 1 - a["min_bos_pre"] == sympy.Rational(1000, 415749) and a["where"] == (2, 3)
    assert round(float((1 - a["min_bos_pre"]) / (12 * e / (5 - 12 * e))), 6) == 0.999802  # "0.9998 f_pre"
    b = tight_heads.equal_content_report(tight_heads.build_t1b(), 5, 0)
    assert b["eta"] == sympy.Rational(4003201430083811, 40032012892000000000)  # 1.0000000352e-4
    assert b["where_nontrigger"] == (4, 2)
    assert round(float((1 - b["min_bos_nontrigger"]) / _f_all(b["eta"])), 5) == 0.99879  # "0.99879 f_all"
    half = tight_heads.equal_content_report(tight_heads.build_t1a(), 4, Fraction(1, 2))
    assert half["eta"] == sympy.Rational(8000001, 6651984002)  # 1.2e-3 at content 1/2


def test_tight_heads_fail_badly_on_the_full_input_class():
    """Over every input (mixed contents) the T1(a) head errs by 1999/2002 ~ 0.9985 and the T1(b)
    head by ~8.0e-4 = 8 x its eta, both at the trigger query j = 2 (exact, vertex of the box)."""
    a = tight_heads.all_inputs_report(tight_heads.build_t1a(), 4)
    assert a["eta"] == Fraction(1999, 2002)
    assert (a["where"]["trigger"], a["where"]["query"], a["where"]["coordinate"]) == (2, 2, 2)
    assert [c[0] for c in a["where"]["contents"]][:2] in ([1, -1], [-1, 1])
    b = tight_heads.all_inputs_report(tight_heads.build_t1b(), 5)
    assert b["eta"] == Fraction(16006445, 20016006446)
    assert round(float(b["eta"] / tight_heads.equal_content_report(tight_heads.build_t1b(), 5, 0)["eta"]), 3) == 7.997


def test_all_inputs_report_matches_evaluation_at_its_witness_and_at_vertices():
    """The closed-form max over the box against the exact evaluator at every vertex (L = 4)."""
    import itertools

    from constructions import reference, task

    net = tight_heads.build_t1a()
    r = tight_heads.all_inputs_report(net, 4)
    seen = sympy.Integer(0)
    for j in (2, 3):
        for cs in itertools.product([-1, 1], repeat=3):
            X = task.make_sequence([[sympy.Integer(c)] for c in cs], j, sympy.Integer(0), sympy.Integer(1))
            Y, _ = reference.forward(net, X, "sympy")
            T = task.target(X, j)
            seen = max([seen] + [abs(sympy.Rational(y - t)) for yr, tr in zip(Y, T) for y, t in zip(yr, tr)])
    assert seen == sympy.Rational(r["eta"].numerator, r["eta"].denominator)

