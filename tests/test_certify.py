"""Certificates over every input (proofs.certify): closed forms, the per-key structure, search
against enumeration, T1's check, interval propagation against sampling."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from constructions import reference, relu_head, softmax_head, task
from proofs.certify.arithmetic import branch, heads
from proofs.certify.head import error, free, sink, t1
from proofs.certify.stack import affine_stack


def random_net(d, seed, kind="softmax", layers=1, n_heads=1, scale=1.0, residual=False):
    rng = np.random.default_rng(seed)

    def m(rows, cols):
        return reference.as_matrix([[Fraction(float(v)) for v in row] for row in rng.normal(0, scale, (rows, cols))])

    ls = tuple(reference.Layer(tuple(m(d, d) for _ in range(n_heads)), tuple(m(d, d) for _ in range(n_heads)),
                               tuple(m(d, d) for _ in range(n_heads)), m(d, n_heads * d)) for _ in range(layers))
    return reference.Network(kind, ls, residual)


def bos_float(net, X, layer=0, head=0):
    _, P = reference.forward(net, X, "float")
    return [P[layer][head][i][0] for i in range(len(X))]


# ---- closed forms ----------------------------------------------------------------------


@pytest.mark.parametrize("beta", [3, Fraction(5, 2)])
def test_softmax_family_certified_min_equals_closed_form(beta):
    d, L = 5, 6
    net = softmax_head.build(d, beta)
    cert = sink.certify_head(net, L)
    e = math.exp(float(beta))
    assert cert["all_exact"]
    for q in cert["queries"]:
        i = q["position"]
        closed = 1 / (1 + e * 0 + i / e) if q["case"] != "trigger" else (1 / e) / (1 / e + i)
        if q["case"] != "trigger":
            closed = e / (e + i)
            assert q["certified"] <= closed <= q["witness_high"]
        else:
            assert q["witness_low"] <= closed <= q["certified"]
        assert abs(q["certified"] - closed) <= 1e-10 * closed
    assert abs(cert["min_bos_nontrigger"] - e / (e + L - 1)) <= 1e-10


def test_softmax_family_eta_equals_closed_form_worst_error():
    d, L, beta = 5, 6, 3
    net = softmax_head.build(d, beta)
    cert = sink.certify_head(net, L)
    h = heads.head_maps(net)
    closed = float(softmax_head.max_error(beta, L))
    up = error.eta_upper(h, L, cert["queries"])["eta_up"]
    lo = error.eta_lower(net, h, L)["eta_lo"]
    assert lo <= closed <= up
    assert up - closed <= 1e-9 * closed  # the bound is the closed form, not just above it
    assert closed - lo <= 1e-9 * closed  # and the search finds the all-ones witness


def test_relu_construction_certified_sink_free():
    cert = free.certify_relu(relu_head.build(6), 8)
    assert cert["max_bos_weight"] == 0.0
    assert all(q["max_bos_weight"] == 0 for q in cert["queries"])
    assert 0 <= cert["max_row_mass_nontrigger"] <= 1e-11  # all zero on every input, up to the rounding slack


# ---- the structure: closed-form per-key maxima ---------------------------------------------


def test_key_support_function_matches_enumeration():
    d = 5
    net = random_net(d, 1)
    h = heads.head_maps(net)
    M = h.M
    rng = np.random.default_rng(0)
    grid = np.array(list(itertools.product(np.linspace(-1, 1, 9), repeat=d - 3)))
    for f in (task.content_flag(d), task.TRIGGER_FLAG):
        for key_flag in (task.content_flag(d), task.TRIGGER_FLAG):
            E = heads.score_exponent(M, f, key_flag, +1)
            E_min = heads.score_exponent(M, f, key_flag, -1)
            for c in rng.uniform(-1, 1, (5, d - 3)):
                x = np.zeros(d); x[f] = 1; x[2:d - 1] = c
                bos = np.zeros(d); bos[0] = 1
                keys = np.zeros((len(grid), d)); keys[:, key_flag] = 1; keys[:, 2:d - 1] = grid
                diffs = keys @ M.T @ x - bos @ M.T @ x
                assert diffs.max() <= E.value(c[None])[0] + 1e-12
                assert diffs.min() >= E_min.value(c[None])[0] - 1e-12
                best = heads.key_argmax(M, f, c, +1)  # a vertex attains the maximum
                kx = np.zeros(d); kx[key_flag] = 1; kx[2:d - 1] = best
                assert abs(kx @ M.T @ x - bos @ M.T @ x - E.value(c[None])[0]) < 1e-12


def test_own_key_quadratic_matches_scores():
    d = 6
    net = random_net(d, 2)
    h = heads.head_maps(net)
    E = heads.score_exponent(h.M, task.content_flag(d), None, 0)
    for c in np.random.default_rng(1).uniform(-1, 1, (5, d - 3)):
        x = np.zeros(d); x[-1] = 1; x[2:d - 1] = c
        assert abs(x @ h.M @ x - x @ h.M[:, 0] - E.value(c[None])[0]) < 1e-12


# ---- search against enumeration on tiny instances --------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_certified_min_is_below_every_enumerated_input_and_witness_replays(seed):
    d, L = 4, 5
    net = random_net(d, seed, scale=1.5)
    cert = sink.certify_head(net, L)
    worst = {}
    for X, j in task.enumerate_sequences(task.TaskConfig(d=d, L=L), [-1.0, -0.5, 0.0, 0.5, 1.0]):
        bos = bos_float(net, X)
        for i in range(1, L):
            case = "trigger" if i == j else ("before" if i < j else "after")
            worst.setdefault((i, case), []).append(bos[i])
    for q in cert["queries"]:
        seen = worst[(q["position"], q["case"])]
        if q["case"] == "trigger":
            assert max(seen) <= q["certified"] + 1e-12 and q["witness_low"] <= q["certified"] + 1e-12
        else:
            assert min(seen) >= q["certified"] - 1e-12
            assert q["witness_high"] >= q["certified"] - 1e-12  # a real input at (or above) the bound
            assert q["witness_low"] <= min(seen) + 1e-12  # and no enumerated input beats the witness


def test_sigmoid_norm_bound_holds_on_enumeration():
    d, L = 4, 5
    net = random_net(d, 3, kind="sigmoid_norm")
    cert = sink.certify_head(net, L, max_nodes=4000)
    for X, j in task.enumerate_sequences(task.TaskConfig(d=d, L=L), [-1.0, 0.0, 1.0]):
        bos = bos_float(net, X)
        for q in cert["queries"]:
            i = q["position"]
            if q["case"] == "before" and i < j or q["case"] == "after" and i > j:
                assert bos[i] >= q["certified"] - 1e-12


def test_eta_bounds_bracket_enumerated_errors():
    d, L = 4, 5
    net = random_net(d, 4, scale=0.7)
    cert = sink.certify_head(net, L)
    h = heads.head_maps(net)
    up = error.eta_upper(h, L, cert["queries"])["eta_up"]
    lo = error.eta_lower(net, h, L)["eta_lo"]
    seen = 0.0
    for X, j in task.enumerate_sequences(task.TaskConfig(d=d, L=L), [-1.0, 0.0, 1.0]):
        Y, _ = reference.forward(net, X, "float")
        y = task.target(X, j)
        seen = max(seen, max(abs(a - b) for ra, rb in zip(Y, y) for a, b in zip(ra, rb)))
    assert lo <= up and seen <= up


def test_branch_monotone_reduction_and_bisection_are_pinned():
    # A function affine in c closes at the root; one with an interior maximum needs bisection.
    n = 2
    zero = np.zeros((n, n))
    affine = heads.Exponent(0.1, np.array([0.3, -0.2]), zero, 0, np.zeros(n), zero)
    res = branch.maximise(branch.ExpSum([(1.0, affine)], +1), n)
    assert res.closed and res.nodes == 1 and np.allclose(res.witness, [1, -1])
    bump = heads.Exponent(0.0, np.zeros(n), -np.eye(n), 0, np.zeros(n), zero)
    res = branch.maximise(branch.ExpSum([(1.0, bump)], +1), n, rtol=1e-6)
    assert res.closed and res.upper >= 1.0 and res.upper <= 1.0 + 2e-6  # max exp(0) at the centre


# ---- T1 --------------------------------------------------------------------------------


def test_t1_verdicts():
    assert t1.verdict(0.99, 0.99, 0.98) == "consistent"
    assert t1.verdict(0.97, 0.975, 0.98) == "refutes T1"
    assert t1.verdict(0.97, 0.99, 0.98) == "inconclusive"
    assert t1.verdict(0.5, 0.5, None) == "T1 does not apply"


def test_t1_ranges_pinned():
    b = t1.bounds(1 / 12, 16)
    assert b["pre_applies"] and not b["all_applies"]
    assert not t1.bounds(1 / 12 * 1.0001, 16)["pre_applies"]
    assert t1.bounds(1 / 120, 16)["all_applies"] and not t1.bounds(1 / 120 * 1.0001, 16)["all_applies"]
    assert t1.bounds(0.001, 16)["pre_bound"] == pytest.approx(1 - 12 * 0.001 / (5 - 12 * 0.001), abs=1e-15)


def test_t1_end_to_end_on_the_family_is_consistent():
    # The test that can fail: a certified minimum below T1's bound would refute T1.
    d, L, beta = 5, 6, 8
    net = softmax_head.build(d, beta)
    cert = sink.certify_head(net, L)
    eta_up = error.eta_upper(heads.head_maps(net), L, cert["queries"])["eta_up"]
    table = t1.table(cert["queries"], eta_up, L)
    assert table["bounds"]["all_applies"]
    assert table["overall"] == "consistent"
    assert all(r["certified_min"] >= r["t1_bound"] for r in table["rows"])


# ---- stacks ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed,kind", [(0, "softmax"), (1, "softmax"), (2, "sigmoid_norm")])
def test_stack_bounds_contain_sampled_values(seed, kind):
    d, L = 4, 5
    net = random_net(d, seed, kind=kind, layers=2, n_heads=2, scale=0.3, residual=True)
    cert = affine_stack.certify_stack(net, L)
    rng = np.random.default_rng(seed)
    assert any(v > 0.05 for hd in cert["heads"] if hd["layer"] == 1 for v in hd["per_position"][1:])  # not all vacuous
    for _ in range(150):
        j = int(rng.integers(2, L))
        X = task.make_sequence(rng.choice([-1.0, 1.0, 0.3], size=(L - 1, d - 3)).tolist(), j)
        _, P = reference.forward(net, X, "float")
        for hd in cert["heads"]:
            for i in range(1, L):
                if i != j:
                    assert P[hd["layer"]][hd["head"]][i][0] >= hd["per_position"][i] - 1e-12


def test_stack_single_layer_matches_exact_and_ibp_is_weaker():
    d, L = 4, 5
    net = random_net(d, 5)
    exact = sink.certify_head(net, L)["min_bos_nontrigger"]
    assert affine_stack.certify_stack(net, L)["heads"][0]["min_bos_certified"] == pytest.approx(exact, abs=1e-15)
    assert affine_stack.certify_stack(net, L, exact_first=False)["heads"][0]["min_bos_certified"] <= exact + 1e-12


def test_sink_level_of_non_vacuous_heads_is_pinned():
    # Family heads with min BOS mass e^b/(e^b + L - 1): 0.346 at beta = 3/4 and 0.649 at beta = 2 (L = 5).
    # Level 1/2 calls the first vacuous and the second not; level 1/4 or 1 would flip one of them.
    low = affine_stack.certify_stack(softmax_head.build(4, Fraction(3, 4)), 5)["heads"][0]
    high = affine_stack.certify_stack(softmax_head.build(4, 2), 5)["heads"][0]
    assert 0.25 < low["min_bos_certified"] < 0.5 < high["min_bos_certified"] < 1.0
    assert affine_stack.SINK_LEVEL == 0.5 and not low["non_vacuous"] and high["non_vacuous"]


def test_t1_end_to_end_on_a_trained_head():
    # A trained seed (the stop rule at ~900 steps): certified over every input, T1 at its
    # certified eta_up must not be contradicted by any query (a refutation fails this test).
    from empirical.analysis.certificates import certify_network
    from empirical.training.train import TrainConfig, train
    from empirical.weights.formats import networks_from_summary

    summary = train(TrainConfig(seeds=(0,), eval_sequences=16, log_every=10_000), quiet=True)
    # the box relaxation at the trigger suffices for T1 (a) here (the vertex bound: test_trigger_vertices)
    cert = certify_network(networks_from_summary(summary)[0].network, 16, vertex=False)
    assert cert["all_exact"] and cert["min_bos_nontrigger"] > 0.999
    assert cert["eta"]["eta_lo"] <= cert["eta"]["eta_up"] <= 1 / 12  # T1 (a) applies
    assert cert["t1"]["overall"] != "refutes T1"
    assert all(r["verdict"] in ("consistent", "T1 does not apply") for r in cert["t1"]["rows"])


def test_certified_floats_round_outward_at_any_interval_precision():
    """A certified lower end converted to float never lands above the true value, however many
    bits the ball carries (float() of a ball's end rounds to nearest, one way only)."""
    from constructions import balls
    from proofs.certify.arithmetic import replay

    with balls.precision(133):
        for n in range(1, 60):
            x = 1 / (1 + balls.ball(n) / balls.exp(3))  # not a float, so one direction of float() errs
            assert replay.down(x) <= balls.lo(x) and replay.up(x) >= balls.hi(x)


def test_certificates_on_worker_processes_equal_the_serial_ones():
    """``empirical.analysis.certificates.certify_networks`` (the training part's certificates, one process per
    core) returns, in order, exactly what ``certify_network`` returns on each network alone, with one
    length for all or one per network (the training part's one pool of heads and stacks)."""
    from empirical.analysis import certificates

    nets = [random_net(4, seed) for seed in (1, 2, 3)]
    strip = lambda c: {k: v for k, v in c.items() if k not in ("seconds", "cpu_seconds")}  # timings differ
    parallel = certificates.certify_networks(nets, 5, workers=2)
    assert [strip(c) for c in parallel] == [strip(certificates.certify_network(n, 5)) for n in nets]
    mixed = certificates.certify_networks(nets, [5, 6, 5], workers=2)
    assert [strip(c) for c in mixed] == [strip(certificates.certify_network(n, L)) for n, L in zip(nets, [5, 6, 5])]
    with pytest.raises(ValueError, match="3 networks but 2 lengths"):
        certificates.certify_networks(nets, [5, 6])
