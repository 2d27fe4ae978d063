"""Soundness tests that can fail: four places where a wrong certificate would have
passed the suite. Each test names the mistake it catches; each was checked by making that mistake
by hand in the source and watching the test fail.

1. ``trigger_vertices.position_bound`` must cover the rows it did not refine (their box bound was
   already below the target), not only the refined ones.
2. ``error.whole_box_ranges`` (eta_up's whole-box exponent ranges) must round the log of the
   weight bound outward, on inputs where the rounding decides; so must the other exp / log steps
   of eta_up and the sink bounds (``error.raw_weights``, ``branch``'s certified figures,
   ``affine_stack._weight_range``). These tests found that mpmath 1.3's 53-bit interval log and exp are
   not outward there; the figures now come from Arb balls (``constructions.balls``).
3. The T1 end-to-end report must decide "T1 (b) applies" at the certified eta_up, not at eta_lo.
4. ``affine_stack.certify_stack``'s deeper layers after the trigger must be bounded per trigger position.
"""

import dataclasses

import mpmath
import numpy as np
import pytest

from proofs.certify.arithmetic import affine, branch, heads
from proofs.certify.head import error, t1
from proofs.certify.stack import affine_stack
from proofs.certify.head.trigger import points as tp, vertices as tv
from tests.test_certify_stack import per_position_minima, sinking_stack
from tests.test_trigger_dual import _grid, head_net
from tests.test_trigger_vertices import brute_rows

# ------------------------------------------------------------------------------------------
# 1. position_bound over the rows it leaves unrefined


@pytest.mark.parametrize("d,j,seed,scale", [(5, 2, 3, 0.3), (5, 3, 0, 0.3)])
def test_position_bound_covers_the_rows_it_did_not_refine(d, j, seed, scale):
    """With the target at the second-largest box bound, only the top row is refined, and its
    refined bound falls below the next row's box bound: the position bound must still be at least
    that unrefined row's box bound (a bound on it; nothing else bounds it) and every enumerated
    error. Leaving unrefined rows out of the maximum returns the refined row's figure alone."""
    h = heads.head_maps(head_net(d, seed, scale, scale / 10))
    P = tp.Position(h, j)
    box = error.trigger_bound_rows(h, j, -np.ones(h.n), np.ones(h.n), P.ranges)
    order = sorted(box, key=lambda k: -box[k])
    target = box[order[1]]
    out = tv.position_bound(h, j, np.zeros(h.n), target)
    refined = {(r["coordinate"], r["sign"]) for r in out["rows"]}
    unrefined_top = max(box[k] for k in box if k not in refined)
    refined_top = max(min(r["bound"], r["box"]) for r in out["rows"])
    assert refined and refined_top < unrefined_top  # the case that matters: an unrefined row decides
    n = h.n
    brute = brute_rows(h, j, _grid(n, 13), _grid(n, 7))
    assert out["bound"] >= unrefined_top
    assert out["bound"] >= brute.max()


# ------------------------------------------------------------------------------------------
# 2. the whole-box exponent ranges round outward


def _tricky_floats() -> list[float]:
    """Floats where the log's rounding decides: powers of two and their neighbours (log exactly
    k log 2, never a float), the smallest subnormal, tiny and huge weights, and 1 (log 0) beside."""
    out = [5e-324, 1e-310, 1e-300, 1e-30, 1.0, 1e30, 1e300, 1.7976931348623157e308, np.e, 10.0]
    for k in (-1022, -600, -53, -1, 1, 2, 53, 600, 1023):
        p = 2.0 ** k
        out += [p, np.nextafter(p, 0.0), np.nextafter(p, np.inf)]
    out += [np.nextafter(1.0, 0.0), np.nextafter(1.0, 2.0)]
    return [float(x) for x in out]


def _exact_log(x: float):
    with mpmath.workdps(60):
        return mpmath.log(mpmath.mpf(x))


def test_log_helpers_round_outward_where_the_rounding_decides():
    """_log_up(x) >= log x >= _log_down(x) against mpmath at 60 digits. mpmath's interval log at
    53 bits alone puts log(1 + 2^-52)'s upper end one ulp inside (the bug this test found); a
    version one ulp inward fails here too."""
    for x in _tricky_floats():
        exact = _exact_log(x)
        with mpmath.workdps(60):
            assert mpmath.mpf(error._log_up(x)) >= exact, x
            assert mpmath.mpf(error._log_down(x)) <= exact, x
    assert error._log_down(0.0) == -np.inf


def test_whole_box_ranges_enclose_the_log_of_the_weight_bounds(monkeypatch):
    """whole_box_ranges takes the branch and bound's certified max of exp(+E) (upper end: log of
    it, rounded up) and of -exp(E) (lower end: log of minus it, rounded down). With the search's
    figures set to the tricky floats, every range encloses the exact logs (mpmath, 60 digits)."""
    h = heads.head_maps(head_net(5, 0, 0.3, 0.03))
    exps = error._trigger_exponents(h)
    for x in _tricky_floats():
        y = 1.0 / x if x >= 1e-300 else 1e300  # the lower search's figure: -exp(E) <= -y

        def fake(obj, n, max_nodes=None, x=x, y=y):
            return branch.Result(upper=x if obj.sign > 0 else -y, best=0.0, witness=np.zeros(n), nodes=1, closed=True)

        monkeypatch.setattr(branch, "maximise", fake)
        out = error.whole_box_ranges(h)
        for k, (low, high) in exps.items():
            lo, hi = out[k]
            with mpmath.workdps(60):
                assert mpmath.mpf(hi) >= _exact_log(x), (k, x)
                symmetric = low.s == -1 and high.s == +1 and low.a == high.a == 0 and not low.p.any() and not high.p.any()
                assert mpmath.mpf(lo) <= (-_exact_log(x) if symmetric else _exact_log(y)), (k, x, y)


def _tricky_exponents() -> list[float]:
    """Exponents where exp's rounding decides: near 0 (weights near 1: exp(2^-40) is where mpmath's
    53-bit interval exp is one ulp inside), multiples of log 2, near under- and overflow."""
    out = [0.0, -745.0, -708.0, 700.0, 709.0, float(np.log(2.0)), -float(np.log(2.0)), 1.0, -1.0]
    for k in (-60, -52, -40, -20, -3):
        out += [2.0 ** k, -(2.0 ** k), 3 * 2.0 ** k]
    return out


@pytest.mark.parametrize("kind", ["softmax", "sigmoid_norm"])
def test_raw_weights_enclose_exp_of_their_exponents(kind, monkeypatch):
    """raw_weights' [w-, w+] encloses the exact weight (exp, or sigmoid for sigmoid_norm) of each
    exponent range's ends (mpmath, 60 digits), on exponents where the rounding decides."""
    h = dataclasses.replace(heads.head_maps(head_net(5, 0, 0.3, 0.03)), kind=kind)
    xs = _tricky_exponents()
    for a, b in zip(xs, xs[1:] + xs[:1]):
        a, b = min(a, b), max(a, b)
        monkeypatch.setattr(error, "_exponent_ranges", lambda *args, a=a, b=b: {"bos": (a, b)})
        lo, hi = error.raw_weights(h, np.zeros(h.n), np.zeros(h.n))["bos"]
        with mpmath.workdps(60):
            f = mpmath.exp if kind == "softmax" else (lambda x: 1 / (1 + mpmath.exp(-x)))
            assert 0 <= mpmath.mpf(lo) <= f(mpmath.mpf(a)) and mpmath.mpf(hi) >= f(mpmath.mpf(b)), (a, b)


def test_branch_certified_figures_round_up_where_exp_rounding_decides():
    """The branch and bound's certified figure (``ExpSum`` / ``SigmoidSum.certified``: the sink
    bound's and the whole-box ranges' last step) is at least the exact sum at every exponent row,
    on exponents where mpmath's 53-bit interval exp is inside (exp(2^-40) and the like)."""
    f = (lambda x: mpmath.exp(x), lambda x: 1 / (1 + mpmath.exp(-x)))
    for sign in (1, -1):
        for x in _tricky_exponents():
            row = np.array([x])
            with mpmath.workdps(60):
                exact = sign * f[0](mpmath.mpf(x))
                assert mpmath.mpf(branch.ExpSum([(1.0, None)], sign).certified(row[None])) >= exact, (sign, x)
                pair = np.array([[x, 0.0]])  # the term's exponent and BOS's
                exact = sign * f[1](mpmath.mpf(x)) / f[1](mpmath.mpf(0))
                assert mpmath.mpf(branch.SigmoidSum([(1.0, None)], None, sign).certified(pair)) >= exact, (sign, x)


@pytest.mark.parametrize("kind", ["softmax", "sigmoid_norm"])
def test_stack_weight_range_encloses_exp_of_its_exponents(kind, monkeypatch):
    """affine_stack._weight_range's [min, max] of a key's weight encloses the exact weight at the ends of
    its exponent bounds (mpmath, 60 digits), on exponents where the rounding decides."""
    from types import SimpleNamespace

    f = mpmath.exp if kind == "softmax" else (lambda x: 1 / (1 + mpmath.exp(-x)))
    xs = _tricky_exponents()
    for a, b in zip(xs, xs[1:] + xs[:1]):
        a, b = min(a, b), max(a, b)
        monkeypatch.setattr(branch, "exponent_upper", lambda E, lo, hi, b=b: SimpleNamespace(ub=np.array([b])))
        monkeypatch.setattr(branch, "exponent_lower", lambda E, lo, hi, a=a: SimpleNamespace(ub=np.array([a])))
        lo, hi = affine_stack._weight_range(kind, None, None, 2)
        with mpmath.workdps(60):
            assert 0 <= mpmath.mpf(lo) <= f(mpmath.mpf(a)) and mpmath.mpf(hi) >= f(mpmath.mpf(b)), (a, b)


# ------------------------------------------------------------------------------------------
# 3. the T1 end-to-end report decides T1 (b) at eta_up


def _report_inputs(monkeypatch, eta_lo: float, eta_up: float, L: int = 6):
    """One single-head certificate through ``certify_network`` with the sink certificate and the
    eta bracket replaced by the given figures (the report's decision is what is under test), and
    the result record the T1 part's tables read."""
    from empirical.analysis import certificates
    from proofs.certify.head import eta, sink

    queries = [{"position": i, "case": c, "certified": 0.999, "witness_high": 0.9995}
               for i in range(1, L) for c in ("before", "after") if (c == "before" and i <= L - 2) or (c == "after" and i >= 3)]
    monkeypatch.setattr(sink, "certify_head", lambda net, L, *a, **k: {"queries": queries, "min_bos_before": 0.999,
                                                                       "min_bos_after": 0.999, "max_bos_trigger": 0.1,
                                                                       "min_bos_nontrigger": 0.999})
    monkeypatch.setattr(eta, "bracket", lambda *a, **k: {"eta_up": eta_up, "eta_lo": eta_lo, "ratio": eta_up / eta_lo,
                                                         "case": "bos query"})
    cert = certificates.certify_network(head_net(5, 0, 0.3, 0.03), L)
    measured = {"trigger": 3, "per_example_bound_min": {i: 0.99 for i in range(1, L) if i != 3},
                "heads": [{"mean": [1.0] * L, "min": [1.0] * L}]}
    result = {"label": "seed 0", "certificate": cert, "measured": measured, "fixed_query": None,
              "member": {"reference_steps": 1, "finetune_steps": 1}}
    summary = {"config": {"steps": 1, "lr": 1e-3, "lr_end": 1e-4, "batch": 1, "witnesses": 1, "refresh": 1}}
    return result, summary


def test_t1b_does_not_apply_when_only_eta_lo_is_in_its_range(monkeypatch):
    """eta_lo <= 1/120 < eta_up: T1 (b) does not apply (only eta_up is certified over every input);
    T1 (a) does (both below 1/12). The seed table, the position table and the claim must say so;
    deciding at eta_lo would print a T1 (b) bound and claim T1 in full verified."""
    from empirical.pipeline.parts import t1_end_to_end as E

    edge = float(t1.ALL_MAX)
    result, summary = _report_inputs(monkeypatch, eta_lo=0.9 * edge, eta_up=1.1 * edge)
    bounds = result["certificate"]["t1"]["bounds"]
    assert not bounds["all_applies"] and bounds["pre_applies"]
    seeds = E.seed_table([result], summary)
    row = seeds["rows"][0]
    assert row[seeds["columns"].index("T1 (b) bound 1 - f_all(eta_up)")] == "does not apply"
    assert row[seeds["columns"].index("T1 (a) bound 1 - f_pre(eta_up)")] != "does not apply"
    positions = E.position_table([result])
    column = positions["columns"].index("T1 (b) bound (largest over seeds)")
    assert positions["rows"] and all(r[column] == "does not apply" for r in positions["rows"])
    claim = E.claims([result], [])[0]
    assert claim["verdict"] != "verified exactly" and "T1 (b) applies: 0/1" in claim["evidence"]


# ------------------------------------------------------------------------------------------
# 4. deeper layers after the trigger, per trigger position




def _chain(net, L, order, memo):
    """{(j, layer): per-head lower bounds of a_i0} with the trigger at each j of ``order`` in turn,
    layer after layer as ``certify_stack`` runs them, ``memo`` carried from one position to the next."""
    maps = [[heads.head_maps(net, n, h) for h in range(layer.heads)] for n, layer in enumerate(net.layers)]
    out = {}
    for j in order:
        z = affine.inputs(net.d, L, j)
        for n in range(len(net.layers)):
            step, lows = affine_stack.layer_step(net.kind, maps[n], z, j, n, memo, need_output=n < len(net.layers) - 1)
            out[(j, n)] = lows
            if step is not None:
                z = affine.add(z, step) if net.residual else step
    return out


def _above_enumeration(per_j, worst, L):
    """(j, layer, head, query, bound, enumerated) wherever a bound exceeds that position's enumerated minimum."""
    return [(j, layer, h, i, lows[h][i], worst[(j, layer, h, i)]) for (j, layer), lows in per_j.items()
            for h in range(len(lows)) for i in range(1, L) if i != j and lows[h][i] > worst[(j, layer, h, i)] + 1e-12]


def test_deeper_layers_after_the_trigger_are_bounded_per_trigger_position(monkeypatch):
    """A 2-layer stack: each trigger position's bounds, as ``certify_stack`` computes them (one memo
    across positions) and in the reverse order, lie below that position's enumerated minima and
    equal that position's bounds computed alone; layer 1's bounds after the trigger differ between
    two positions, so a memo that hands one position's bounds to another changes a figure, and is
    caught by the equality (on this stack the bounds' gap to the grid is wider than the positions'
    difference, so the enumeration alone would not see it). The report's figure is the minimum
    over positions."""
    L = 5
    net = sinking_stack(4, 1, "softmax", beta=4.0)
    recorded, real = {}, affine_stack.layer_step

    def recording(kind, maps, z, j, layer=0, memo=None, **kw):
        out, lows = real(kind, maps, z, j, layer, memo, **kw)
        recorded[(j, layer)] = [low.copy() for low in lows]
        return out, lows

    monkeypatch.setattr(affine_stack, "layer_step", recording)
    cert = affine_stack.certify_stack(net, L, exact_first=False)
    monkeypatch.setattr(affine_stack, "layer_step", real)
    alone = {k: v for j in range(2, L) for k, v in _chain(net, L, [j], {}).items()}
    reverse = _chain(net, L, range(L - 1, 1, -1), {})
    worst = per_position_minima(net, L, grid=(-1.0, 0.0, 1.0))
    for per_j in (recorded, reverse, alone):
        assert _above_enumeration(per_j, worst, L) == []
    for per_j in (recorded, reverse):
        assert all(np.array_equal(per_j[k], alone[k], equal_nan=True) for k in alone)
    after = {j: [alone[(j, 1)][h][i] for h in range(2) for i in range(4, L)] for j in (2, 3)}  # after both
    assert not np.allclose(after[2], after[3])  # the bound depends on the trigger position
    for hd in cert["heads"]:
        for i in range(1, L):
            assert hd["per_position"][i] == min(alone[(j, hd["layer"])][hd["head"]][i] for j in range(2, L) if j != i)
