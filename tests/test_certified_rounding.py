"""Every figure the report calls certified is rounded outward, whatever the interval context's
precision, and no verifier changes that precision globally (issue 17, item 5 (i) and item 6).
Each test here fails when the rounding direction it names is flipped."""

from fractions import Fraction

import pytest
from mpmath import iv

from constructions import abstaining_heads, cancelling_heads, numbers, softmax_head, task, verify, verify_multihead


def test_verifiers_leave_the_interval_precision_alone():
    before = iv.prec
    verify.verify_softmax(softmax_head.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    assert iv.prec == before
    verify_multihead.verify_cancelling(cancelling_heads.build(4, 3), 3, task.TaskConfig(d=4, L=4), values=(0, 1))
    assert iv.prec == before


def _raw_ends(name, gap, L):
    """The intervals certified_point takes its figures from (same context precision)."""
    ops = abstaining_heads.attention.ops("interval")
    net = abstaining_heads.get(name).build(4, iv.mpf(gap))
    err, bos = [], []
    for j in range(2, L):
        P = abstaining_heads.pattern(net, L, j, ops)
        for i, (a0, dev) in enumerate(abstaining_heads.row_errors(P, j, ops.one)):
            err += [iv.mpf(a0).b, iv.mpf(dev).b]
            if i >= 1:
                bos.append(iv.mpf(a0).b)
    return max(err), max(bos)


@pytest.mark.parametrize("name", sorted(abstaining_heads.CONSTRUCTIONS))
def test_abstaining_certified_maxima_round_up_at_high_precision(name):
    """At 40 digits an interval end is not a float; float() would round it to nearest, below the
    end about half the time (the old code, after verify.py had raised iv.dps to 30)."""
    with numbers.interval_digits(40):
        for gap in (7, 10, 13):
            p = abstaining_heads.certified_point(name, gap, 8)
            err, bos = _raw_ends(name, gap, 8)
            assert iv.mpf(p.max_error).a >= err and iv.mpf(p.max_bos_mass).a >= bos


def test_interval_and_fraction_rounding_helpers_round_outward():
    with numbers.interval_digits(40):
        for n in range(1, 40):
            x = iv.mpf(1) / (3 * n)
            assert iv.mpf(numbers.interval_up(x)).a >= x.b and iv.mpf(numbers.interval_down(x)).b <= x.a
    for n in range(1, 40):
        q = Fraction(1, 3 * n)
        assert Fraction(numbers.fraction_up(q)) >= q >= Fraction(numbers.fraction_down(q))
        assert numbers.fraction_up(q) > numbers.fraction_down(q)  # 1/(3n) is never a float
