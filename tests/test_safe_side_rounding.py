"""Every bound shown or stored on its safe side: a lower bound rounded down, an upper bound up, at
the precision printed (``constructions.numbers.format_down`` / ``format_up`` and their users).

The helpers are held to exact Fractions on values where round-to-nearest gives the other answer;
``sinks certify`` on the BOS-gap head (beta = 10, d = 16, L = 16) to its closed forms, every
number after ">=" / "<=" and every witness and eta end compared exactly; the published tables to
synthetic records whose nearest rounding lands on the wrong side."""

from __future__ import annotations

import json
import math
import random
import re
from fractions import Fraction

import mpmath
from flint import arb
import pytest
import sympy

from constructions import balls
from constructions.numbers import exact_value, format_bound, format_down, format_up
from empirical.pipeline.published.numbers import fmt, span
from proofs.coq.certificate import check, export

COQ_MISSING = check.available()

# ---- the helpers ------------------------------------------------------------------------

TINY = Fraction(1, 10**40)
EXACT_MIN = Fraction(99931946449752, 10**14)  # e^10/(e^10+15) = 0.99931946449752..., to 14 digits (below it)


@pytest.mark.parametrize("x, digits, down, up", [
    # nearest writes 0.999319464498 (the up side) for a lower bound: the review's case
    (EXACT_MIN, 12, "0.999319464497", "0.999319464498"),
    (EXACT_MIN, 10, "0.9993194644", "0.9993194645"),
    # nearest writes 2.26994e-05 (the down side) for an upper bound
    (Fraction(2269944960459391, 10**20), 6, "2.26994e-05", "2.26995e-05"),
    (Fraction(15712, 10**6), 2, "0.015", "0.016"),  # seed 4's eta_lo, which nearest wrote 0.016
    (Fraction(1, 10) + TINY, 3, "0.1", "0.101"),  # just above a decimal boundary
    (Fraction(1, 10) - TINY, 3, "0.0999", "0.1"),  # just below it
    (Fraction(99995, 10**5), 4, "0.9999", "1"),  # up carries into a new digit
    (Fraction(10**20), 6, "1e+20", "1e+20"),  # powers of ten are exact
    (Fraction(1, 10**5), 3, "1e-05", "1e-05"),
    (Fraction(1, 10**4), 3, "0.0001", "0.0001"),
    (Fraction(123456), 6, "123456", "123456"),
    (Fraction(1234567, 10**4), 5, "123.45", "123.46"),  # fixed notation with a fraction part
    (Fraction(1234567), 6, "1.23456e+06", "1.23457e+06"),
    (Fraction(-1, 3), 6, "-0.333334", "-0.333333"),  # negative: down is away from zero
    (-Fraction(15712, 10**6), 2, "-0.016", "-0.015"),
    (0.1, 3, "0.1", "0.101"),  # the float 0.1 lies above 1/10 ...
    (0.3, 3, "0.299", "0.3"),  # ... and 0.3 below 3/10: the exact binary value decides
    (5e-324, 3, "4.94e-324", "4.95e-324"),  # the smallest subnormal
    (1e308, 3, "1e+308", "1.01e+308"),  # 1e308 is 1.00000000000000001e308
    (0.5, 6, "0.5", "0.5"),
    (0.0, 6, "0", "0"),
    (-0.0, 6, "0", "0"),
    (0, 6, "0", "0"),
])
def test_helpers_round_toward_their_side_from_the_exact_value(x, digits, down, up):
    assert (format_down(x, digits), format_up(x, digits)) == (down, up)
    q = Fraction(x)
    assert Fraction(down) <= q <= Fraction(up)


def test_nearest_differs_from_each_side_on_the_review_cases():
    """A helper switched to round-to-nearest fails here, in each direction."""
    assert f"{float(EXACT_MIN):.12g}" == "0.999319464498" != format_down(EXACT_MIN, 12)
    trigger = Fraction(2269944960459391, 10**20)
    assert f"{float(trigger):.6g}" == "2.26994e-05" != format_up(trigger, 6)


def test_nan_none_infinities_and_other_number_types():
    assert format_down(None) == format_up(None) == "-"
    assert format_down(float("nan")) == "nan" and format_up(float("inf")) == "inf" and format_down(-math.inf) == "-inf"
    assert (format_down(sympy.Rational(2, 3), 4), format_up(sympy.Rational(2, 3), 4)) == ("0.6666", "0.6667")
    third = mpmath.mpf(1) / 3
    assert Fraction(format_down(third, 20)) <= exact_value(third, "down") <= Fraction(format_up(third, 20))
    box = mpmath.iv.mpf([1, 2]) / 3  # an interval: its lower end down, its upper end up
    assert (format_down(box, 4), format_up(box, 4)) == ("0.3333", "0.6667")
    with balls.precision(100):
        ball = balls.ball(3) / 2 + arb(0, 1) / 6  # [4/3, 5/3]: a ball, read the same way
    assert (format_down(ball, 4), format_up(ball, 4)) == ("1.333", "1.667")
    with pytest.raises(TypeError):
        format_down(sympy.E, 3)  # no exact value: refused, never guessed


def test_helpers_write_g_style_and_one_of_them_is_nearest():
    """On random floats of every size: down <= x <= up exactly, one unit in the last digit apart
    at most, and whichever is nearest reads exactly as Python's ``g`` writes it."""
    rng = random.Random(0)
    for _ in range(2000):
        x = rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30)
        digits = rng.randint(1, 15)
        down, up = format_down(x, digits), format_up(x, digits)
        assert Fraction(down) <= Fraction(x) <= Fraction(up)
        assert f"{x:.{digits}g}" in (down, up), (x, digits)
        if Fraction(down) != Fraction(x):
            assert down != up


def test_format_bound_and_the_published_fmt_and_span_take_a_side():
    assert format_bound(0.015712, 2, "lower") == "0.015" and format_bound(0.015712, 2) == "0.016"
    assert fmt(0.015712, 2, "lower") == "0.015" and fmt(0.015712, 2) == "0.016" and fmt(0.0) == "0"
    assert fmt(None) == "-" and fmt(0.02531938, 2, "upper") == "0.026"
    with pytest.raises(ValueError):
        fmt(0.5, 2, "down")
    lows = [0.019193, 0.015712, 0.023018]  # eta_lo of several seeds: nearest gives 0.016 to 0.023
    assert span(lows, 2) == "0.016 to 0.023" and span(lows, 2, side="lower") == "0.015 to 0.023"
    ups = [0.021112, 0.025319, 0.017283]
    assert span(ups, 2) == "0.017 to 0.025" and span(ups, 2, side="upper") == "0.018 to 0.026"


def test_coq_certificate_floats_are_on_their_side():
    """``Certificate.figure`` (a lower bound) and ``trigger_figure`` (an upper one) where
    ``float()`` of the exact rational rounds the wrong way (float(1/10) > 1/10, float(1/3) < 1/3)."""
    cert = export.Certificate(d=4, L=4, N=[], D=1, tree=None, Rc=Fraction(9), q=Fraction(1, 10), p=Fraction(1, 3))
    assert float(cert.q) > cert.q and Fraction(cert.figure) <= cert.q
    assert float(cert.p) < cert.p and Fraction(cert.trigger_figure) >= cert.p


# ---- sinks certify on the BOS-gap head ----------------------------------------------------

NUMBER = r"([-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?)(?![\d/])"


def closed_forms() -> dict[str, tuple[Fraction, Fraction]]:
    """(lower end, upper end) of 50-digit interval enclosures of the head's closed forms, exactly."""
    with balls.precision(170):
        e = balls.exp(10)
        values = {"min": e / (e + 15), "trigger": 1 / (1 + 2 * e), "eta": 15 / (e + 15)}  # eta: (L-1)/(e^b+L-1)
        values.update({f"query {i}": e / (e + i) for i in range(1, 16)})
    return {k: (exact_value(v, "down"), exact_value(v, "up")) for k, v in values.items()}


def below(text: str, value: tuple[Fraction, Fraction]) -> bool:
    return Fraction(text) <= value[0]


def above(text: str, value: tuple[Fraction, Fraction]) -> bool:
    return Fraction(text) >= value[1]


@pytest.fixture(scope="module")
def bos_gap(tmp_path_factory):
    """``sinks construct softmax --d 16 --beta 10`` and ``sinks certify`` of its weights at L = 16
    (with ``--coq`` where coqc and Interval are present): (printed lines, certify.json's result)."""
    import contextlib
    import io

    from empirical.pipeline import cli

    tmp = tmp_path_factory.mktemp("bos_gap")
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["construct", "softmax", "--d", "16", "--beta", "10", "--format", "json", "--out", str(tmp)]) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["certify", str(tmp / "construction.json"), "--L", "16", "--no-measure", "--out",
                         str(tmp / "o"), *([] if COQ_MISSING else ["--coq"])]) == 0
    return out.getvalue().splitlines(), json.loads((tmp / "o" / "certify.json").read_text())["results"][0]


def test_every_printed_bound_of_the_bos_gap_head_is_on_its_side(bos_gap):
    lines, _ = bos_gap
    exact = closed_forms()
    checked = 0
    for line in lines:
        for m in re.finditer(r"(>=|<=)\s*" + NUMBER, line):
            before = line[:m.start()]
            if re.search(r"a_i0\s*$", before):  # the minimum BOS mass, a lower bound
                assert m.group(1) == ">=" and below(m.group(2), exact["min"]), line
            elif re.search(r"(at the trigger|a_j0)\s*$", before):  # the trigger's maximum, an upper bound
                assert m.group(1) == "<=" and above(m.group(2), exact["trigger"]), line
            else:
                pytest.fail(f"a printed bound this test does not know: {m.group(0)!r} in {line!r}")
            checked += 1
        if "witness a_i0 in [" in line:  # the witness attains the minimum: its interval encloses it
            low, high = re.search(r"witness a_i0 in \[" + NUMBER + r", " + NUMBER + r"\]", line).groups()
            assert below(low, exact["min"]) and above(high, exact["min"]), line
        if line.strip().startswith("eta_up "):  # the witness attains eta too: eta_lo <= eta <= eta_up
            up, lo = re.search(r"eta_up " + NUMBER + r".*eta_lo " + NUMBER, line).groups()
            assert above(up, exact["eta"]) and below(lo, exact["eta"]), line
            checked += 2
    assert checked >= 4 + (0 if COQ_MISSING else 2)


def test_the_per_query_table_rounds_its_bounds_down(bos_gap):
    lines, result = bos_gap
    exact = closed_forms()
    cert = result["certificate"]
    t1 = {(r["position"], r["case"]): r["t1_bound"] for r in cert["t1"]["rows"]}
    rows = [line.strip().split(" | ") for line in lines if re.match(r"\s+\d+ \| (before|after) \|", line)]
    assert len(rows) == 2 * 16 - 5
    for position, case, certified, t1_bound, *_ in rows:
        i = int(position)
        stored = next(q["certified"] for q in cert["queries"] if (q["position"], q["case"]) == (i, case))
        assert Fraction(certified) <= Fraction(stored) and below(certified, exact[f"query {i}"])
        assert Fraction(t1_bound) <= Fraction(t1[(i, case)])


def test_certify_json_floats_are_on_their_side(bos_gap):
    _, result = bos_gap
    exact = closed_forms()
    cert = result["certificate"]
    assert Fraction(cert["min_bos_nontrigger"]) <= exact["min"][0]
    assert Fraction(cert["max_bos_trigger"]) >= exact["trigger"][1]
    assert Fraction(cert["eta"]["eta_lo"]) <= exact["eta"][0] and Fraction(cert["eta"]["eta_up"]) >= exact["eta"][1]
    if COQ_MISSING:
        pytest.skip(f"the Coq figures: {COQ_MISSING}")
    coq = result["coq"]
    assert coq["ok"]
    assert Fraction(coq["figure"]) <= Fraction(coq["figure_exact"]) <= exact["min"][0]
    assert Fraction(coq["trigger_figure"]) >= Fraction(coq["trigger_figure_exact"]) >= exact["trigger"][1]


# ---- the published tables ----------------------------------------------------------------

SEEDS = [  # eta_lo / eta_up of five seeds where nearest rounding at 2 digits is on the wrong side
    (0.9997004865889292, 0.019193150632998035, 0.021111735760514696),
    (0.9994466425024846, 0.019997538057036024, 0.021981062668874136),
    (0.9983441221577284, 0.0230177188145526, 0.02531938162077247),
    (0.9997741423687373, 0.021376828198753292, 0.02351448641673247),
    (0.9988472576111611, 0.01571179981855199, 0.01728295282337937),
]


def test_claims_table_writes_eta_lo_down_and_eta_up_up():
    from empirical.pipeline.published import claims_results
    from empirical.pipeline.published.records import Records

    certs = [{"certificate": {"min_bos_nontrigger": m, "eta": {"eta_lo": lo, "eta_up": up},
                              "t1": {"bounds": {"pre_applies": True}}}} for m, lo, up in SEEDS]
    claims = [{"id": "t1_certified", "verdict": "verified exactly"}, {"id": "t1_end_to_end", "verdict": "verified exactly"}]
    text = claims_results.certified(Records({"training": {"status": "ok", "claims": claims,
                                                          "details": {"certificates": {"single_layer": certs}}}}))
    assert "puts >= 0.99834 on BOS" in text  # 0.998344 rounded down (nearest: 0.99834 too)
    assert "eta_lo 0.015 to 0.023 (replayed witness)" in text  # nearest: 0.016 to 0.023
    assert "eta_up 0.018 to 0.026," in text  # nearest: 0.017 to 0.025


def test_part_tables_write_each_bound_on_its_side():
    from empirical.pipeline.parts import certificate_tables

    c = {"queries": [{"case": "before", "certified": 0.9}], "t1": {"bounds": {"pre_applies": True, "pre_bound": 0.94665,
                                                                              "all_applies": False}, "overall": "consistent"},
         "eta": {"eta_up": 0.021111735760514696, "eta_lo": 0.019997538057036024, "ratio": 1.0999},
         "min_bos_before": 0.99972249, "min_bos_after": 0.9994466425024846, "max_bos_trigger": 0.0010251,
         "all_exact": True, "largest_gap": 1e-15, "seconds": 1.0}
    measured = {"per_example_bound_min": {1: 0.9995243775153148}, "trigger": 2,
                "heads": [{"mean": [1.0] * 4, "min": [1.0, 0.99974, 1.0, 0.99974]}]}
    row = certificate_tables._seed_row("seed 0", c, measured)
    assert row[1:6] == ["0.999722", "0.999446", "0.00103", "0.02112", "0.01999"]  # nearest: ...0.999447, 0.02111, 0.02
    assert row[7] == "0.9466" and row[10] == "0.999524"  # T1 (a) bound 0.94665 and the per-example bound: down
    assert certificate_tables.eta_pairs([(0.021111735760514696, 0.019997538057036024)]) == "0.0212/0.0199"


def test_the_committed_record_states_every_recomputable_bound_on_its_side():
    """Stored table text whose number claims.json also stores (``published.restate``) reads as the
    parts write it now; a planted nearest-rounded eta_lo is found and rewritten."""
    import copy

    from empirical.pipeline import published
    from empirical.pipeline.published.restate import restate

    claims = published.committed()
    inputs = copy.deepcopy(claims["inputs"])
    assert restate(inputs) == [] and inputs == claims["inputs"]
    table = next(t for t in inputs["training"]["tables"] if t and t["title"].startswith("T1 end to end: trained"))
    k = table["columns"].index("eta_lo (replayed witness)")
    table["rows"][4][k] = "0.01572"  # seed 4's eta_lo 0.015711..., to nearest
    assert len(restate(inputs)) == 1 and table["rows"][4][k] == "0.01571"
