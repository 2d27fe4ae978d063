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
    from empirical import cli

    for name, L in (("tight-t1a", "4"), ("tight-t1b", "5")):
        assert cli.main(["construct", name, "--d", "4", "--L", L]) == 0
        assert "attains T1" in capsys.readouterr().out
    assert cli.main(["construct", "tight-t1a", "--heads", "2"]) == 2
