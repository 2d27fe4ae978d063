"""A head's minimum BOS mass over every input, checked by the Coq kernel (proofs/coq/certificate).

The Python tests hold the exporter to the head (the score form N / D is W_Q^T W_K exactly), its
leaf bounds to sampled inputs, its figure to enumerated sequences and to the BOS-gap closed form.
The Coq tests compile certificates with coqc and the Interval library: they skip, saying why,
when either is missing, and FAIL when both are present and the kernel rejects a certificate
that should pass, or accepts one whose figure is above an attained BOS mass."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from constructions import reference, softmax_head
from proofs.certify.arithmetic import heads
from proofs.coq.certificate import check, export

COQ_MISSING = check.available()
needs_coq = pytest.mark.skipif(bool(COQ_MISSING), reason=COQ_MISSING or "coqc and Interval present")
DATA = Path(__file__).parent / "data"


def random_head(d: int, seed: int, scale: float = 1.0) -> reference.Network:
    rng = np.random.default_rng(seed)

    def matrix():
        return reference.as_matrix([[Fraction(float(v)) for v in row] for row in rng.normal(0, scale, (d, d))])

    return reference.single_head("softmax", matrix(), matrix(), matrix(), matrix())


def bos_weights(net: reference.Network, X: np.ndarray) -> np.ndarray:
    """a_i0 at every query of the float sequence X [L, d] (float64 softmax, stable)."""
    h = heads.head_maps(net)
    S = X @ h.M @ X.T
    out = []
    for i in range(len(X)):
        s = S[i, : i + 1]
        w = np.exp(s - s.max())
        out.append(w[0] / w.sum())
    return np.array(out)


def sequence(d: int, j: int, contents) -> np.ndarray:
    from constructions import task

    return np.array(task.make_sequence([list(c) for c in contents], j), dtype=float)


def test_the_score_form_is_the_head_exactly():
    net = random_head(6, 0)
    N, D = export.single_head_form(net)  # what build puts in the certificate and LeafBound reads
    M = heads.head_maps(net).M_exact
    assert all(Fraction(N[a][b], D) == M[a][b] for a in range(6) for b in range(6))


def test_a_certificate_that_cannot_close_fails_closed(monkeypatch, capsys):
    """No certificate, a one-line reason, within the budget: a tree that needs more than its
    leaves, and a score form off by its denominator (the leaf bound reading N as M: here gaps of
    -3001 instead of -3001/300, an exp table entry of ~4000 bits that would then "close" the tree
    with a figure the head does not have; a positive gap that size grew a tree to 23 GB). The
    certify command records the reason and runs no Coq."""
    with pytest.raises(export.Unclosed, match="did not close within 50 leaves") as small:
        export.build(random_head(6, 0), 5, tol=1e-1, max_leaves=50)
    with pytest.raises(export.Unclosed, match="worst leaf inf"):  # a leaf sum beyond a float: no OverflowError
        export._refine(lambda box: Fraction(10) ** 400, 1, [[1] * 4 for _ in range(4)], 1.0, max_leaves=4)
    net = softmax_head.build(6, Fraction(3001, 300))
    assert export.single_head_form(net)[1] == 300
    real = export.LeafBound
    monkeypatch.setattr(export, "LeafBound", lambda N, D, L, tables: real(N, 1, L, tables))
    with pytest.raises(export.Unclosed, match="EXP_ARG_MAX") as scale:
        export.build(net, 6)
    assert all("\n" not in str(e.value) for e in (small, scale))
    from empirical.pipeline.commands import certify

    record = certify._coq(net, 6, {"type": "single head"})
    out = capsys.readouterr().out
    assert record == {"ran": False, "reason": str(scale.value)} and out == f"  Coq: not run ({scale.value})\n"


def test_bos_gap_figure_is_the_closed_form():
    """One leaf (the head's scores do not depend on content); q = e^b/(e^b + L - 1) rounded down
    and p = e^-b/(e^-b + 2) (the trigger at j = 2) rounded up at FIGURE_DIGITS decimals: within
    2e-15 of them."""
    for beta, L in ((10, 16), (3, 8)):
        cert = export.build(softmax_head.build(16, beta), L)
        exact = math.exp(beta) / (math.exp(beta) + L - 1)
        trigger = math.exp(-beta) / (math.exp(-beta) + 2)
        assert cert.leaves == 1 and cert.trigger_leaves == 1
        assert exact - 2e-15 <= cert.figure <= exact + 1e-16
        assert trigger - 1e-16 <= cert.trigger_figure <= trigger + 2e-15


def test_exp_tables_bracket_exp_at_their_margin():
    """Each table entry is exp(t)(1 + TABLE_MARGIN) rounded up to TABLE_BITS significant bits: the
    room the interval tactic proves (i_prec 90). The margin is pinned: 2^-52 (a margin under
    2^-90 could not be proved at that precision; one much larger only loosens the figure)."""
    from mpmath import exp, mp, mpf

    assert export.TABLE_MARGIN == Fraction(1, 2 ** 52)
    tables = export.ExpTables()
    for name, z in (("units", -12), ("units", 3), ("thirty_seconds", 17), ("kilo", 31)):
        e = tables.entry(name, z)
        with mp.workprec(300):
            t = exp(mpf(z) / export.SCALES[name])
            low = t * (1 + mpf(1) / 2 ** 52)
            assert mpf(e.numerator) / e.denominator >= low
            assert mpf(e.numerator) / e.denominator <= low * (1 + mpf(2) ** -(export.TABLE_BITS - 1))
    lower = export.ExpTables(lower=True)
    for name, z in (("units", -12), ("thirty_seconds", 17), ("kilo", 31)):
        e = lower.entry(name, z)
        with mp.workprec(300):
            high = exp(mpf(z) / export.SCALES[name]) * (1 - mpf(1) / 2 ** 52)
            assert high * (1 - mpf(2) ** -(export.TABLE_BITS - 1)) <= mpf(e.numerator) / e.denominator <= high


def test_exp_up_and_down_bracket_exp_tightly():
    tables, lower = export.ExpTables(), export.ExpTables(lower=True)
    rng = random.Random(0)
    for _ in range(200):
        u = Fraction(rng.randint(-20_000_000, 2_000_000), 1_000_000)
        up, down, e = float(tables.up(u)), float(lower.down(u)), math.exp(float(u))
        assert e * (1 - 1e-15) <= up <= e * (1 + 1e-6)  # (1 - x)^-1 against e^x, x < 1/1024
        assert e * (1 - 1e-6) <= down <= e * (1 + 1e-15)  # 1 + x against e^x


def _leaf_boxes(cert, n):
    root = [(Fraction(-1), Fraction(1))] * n
    stack = [(cert.tree, root)]
    while stack:
        t, box = stack.pop()
        if t is None:
            yield box
        else:
            left, right = export._halves(box, t[0])
            stack += [(t[1], left), (t[2], right)]


def _random_boxes(n: int, rng, count: int):
    """Sub-boxes of [-1, 1]^n of widths 2 / 2^k (k = 0..8) at dyadic positions, as a tree makes."""
    for _ in range(count):
        box = []
        for _ in range(n):
            k = int(rng.integers(0, 9))
            lo = Fraction(-1) + Fraction(2 * int(rng.integers(0, 2 ** k)), 2 ** k)
            box.append((lo, lo + Fraction(2, 2 ** k)))
        yield box


def test_leaf_gaps_bound_sampled_inputs():
    """On every leaf of a random head's tree and on random dyadic sub-boxes: the exported gap
    bounds are above the true score gaps (key score minus BOS score) at sampled query contents in
    the box and key contents (random, and the vertex that maximises the content key's score)."""
    d, L = 6, 6
    net = random_head(d, 1, scale=0.7)
    cert = export.build(net, L, tol=1e-2, max_leaves=400)  # closes at 34 + 251 leaves
    M = heads.head_maps(net).M
    bound = export.LeafBound(cert.N, cert.D, L, export.ExpTables())
    rng = np.random.default_rng(2)
    bos = np.eye(d)[0]
    for box in list(_leaf_boxes(cert, d - 3)) + list(_random_boxes(d - 3, rng, 300)):
        uC, uT, uS = (float(u) for u in bound.gaps(box))
        lo, hi = np.array([[float(a), float(b)] for a, b in box]).T
        for _ in range(10):
            c = lo + (hi - lo) * rng.random(d - 3)
            x = np.concatenate([[0, 0], c, [1]])
            best = np.where((x @ M)[2:d - 1] >= 0, 1.0, -1.0)  # the content that maximises a key's score
            for key in (rng.uniform(-1, 1, d - 3), best):
                y_c, y_t = np.concatenate([[0, 0], key, [1]]), np.concatenate([[0, 1], key, [0]])
                for gap, u in ((x @ M @ y_c - x @ M @ bos, uC), (x @ M @ y_t - x @ M @ bos, uT),
                               (x @ M @ x - x @ M @ bos, uS)):
                    assert gap <= u + 1e-9
            t = np.concatenate([[0, 1], c, [0]])  # the trigger as the query
            lC, lS = (float(v) for v in bound.trigger_gaps(box))
            worst = np.where((t @ M)[2:d - 1] >= 0, -1.0, 1.0)  # the content that minimises a key's score
            for key in (rng.uniform(-1, 1, d - 3), worst):
                y_c = np.concatenate([[0, 0], key, [1]])
                assert t @ M @ y_c - t @ M @ bos >= lC - 1e-9
            assert t @ M @ t - t @ M @ bos >= lS - 1e-9


def test_figure_is_below_every_enumerated_input_and_close_to_it():
    """d = 5, L = 5, contents on {-1, 0, 1}^2: q is at most every non-trigger BOS weight of every
    such sequence, and within 1 % (of 1 - a) of the smallest; p is at least every trigger's BOS
    weight and within 1 % of the largest."""
    d, L = 5, 5
    net = random_head(d, 3, scale=0.8)
    cert = export.build(net, L, tol=1e-3)
    grid = list(itertools.product((-1, 0, 1), repeat=d - 3))
    worst, trigger = 1.0, 0.0
    for j in range(2, L):
        for contents in itertools.product(grid, repeat=L - 1):
            a = bos_weights(net, sequence(d, j, contents))
            worst = min(worst, min(a[i] for i in range(1, L) if i != j))
            trigger = max(trigger, a[j])
    assert cert.figure <= worst * (1 + 1e-12)
    assert 1 - cert.figure <= (1 - worst) * 1.01
    assert trigger * (1 - 1e-12) <= cert.trigger_figure <= trigger * 1.01


# ----------------------------------------------------------------------------------------
# The Coq kernel.


def checker_line(cert, k: int) -> int:
    """The line of the k-th theorem's vm_compute (its checker run) in the certificate file."""
    lines = export.coq_text(cert, "planted").splitlines()
    return [i for i, line in enumerate(lines, 1) if "vm_compute" in line][k]


@needs_coq
def test_coq_checks_the_bos_gap_head():
    cert = export.build(softmax_head.build(16, 10), 16)
    result = check.check(cert, "bos_gap")
    assert result.ok, result.reason
    assert result.statement == ("bos_gap_min_bos_mass : min_bos_mass_at_least 16 16 bos_gap_M bos_gap_q / "
                                "bos_gap_max_bos_at_trigger : max_bos_mass_at_trigger_at_most 16 16 bos_gap_M bos_gap_p")
    assert set(check.ALLOWED) & set(result.assumptions)  # the reals' axioms are listed: the block was read
    e = math.exp(10)
    assert e / (e + 15) - 2e-15 <= cert.figure <= e / (e + 15)


@needs_coq
def test_coq_checks_a_trained_head():
    """tests/data's trained single-layer head (seed 1 of the worst-case setting, d = 16, L = 16):
    coarse trees (tol 1e-2) keep the test short; q is below the branch and bound's attained value
    and within 2 % of it in 1 - a, p above the trigger's attained value and within 2 % of it."""
    from empirical.weights.formats import load

    net = load(DATA / "worst_case_seed1_head.json")[0].network
    cert = export.build(net, 16, tol=1e-2)
    attained, trigger = 1 / (1 + cert.target), 1 / (1 + cert.trigger_target)
    assert cert.figure <= attained and 1 - cert.figure <= (1 - attained) * 1.02
    assert trigger <= cert.trigger_figure <= trigger * 1.02
    result = check.check(cert, "trained")
    assert result.ok, result.reason


@needs_coq
def test_coq_rejects_a_figure_above_an_attained_bos_mass():
    """The same head with q raised just above the BOS mass its worst input attains, and Rc lowered
    so that q (1 + Rc) <= 1 still holds: the claim is false, and only the leaves can say so."""
    from empirical.weights.formats import load

    net = load(DATA / "worst_case_seed1_head.json")[0].network
    cert = export.build(net, 16, tol=1e-2)
    cert.q = Fraction(1) / (1 + Fraction(cert.target)) + Fraction(1, 10 ** 12)
    cert.Rc = 1 / cert.q - 1
    result = check.check(cert, "planted")
    assert result.ran and not result.ok
    assert "does not compile" in result.reason and f"line {checker_line(cert, 0)}," in result.reason


@needs_coq
def test_coq_rejects_a_trigger_figure_below_an_attained_bos_mass():
    """p lowered just below the trigger's attained BOS mass: false, rejected by the trigger tree."""
    from empirical.weights.formats import load

    net = load(DATA / "worst_case_seed1_head.json")[0].network
    cert = export.build(net, 16, tol=1e-2)
    cert.p = Fraction(1) / (1 + Fraction(cert.trigger_target)) * (1 - Fraction(1, 10 ** 6))
    result = check.check(cert, "planted")
    assert result.ran and not result.ok
    assert "does not compile" in result.reason and f"line {checker_line(cert, 1)}," in result.reason


@needs_coq
def test_sinks_certify_coq_records_the_kernel_checked_figure(tmp_path, capsys):
    import json

    from empirical.pipeline import cli
    from empirical.weights.network_files import write_network_json

    path = write_network_json(tmp_path / "w.json", softmax_head.build(5, 3))
    code = cli.main(["certify", str(path), "--L", "6", "--no-measure", "--coq", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0 and "Coq, checked by the kernel: min a_i0 >= " in out
    coq = json.loads((tmp_path / "o" / "certify.json").read_text())["results"][0]["coq"]
    e = math.exp(3)
    assert coq["ok"] and e / (e + 5) - 2e-15 <= coq["figure"] <= e / (e + 5)
    assert 1 / (1 + 2 * e) <= coq["trigger_figure"] <= 1 / (1 + 2 * e) + 2e-15  # e^-b / (e^-b + 2)


def _generic_copy(tmp_path):
    """A scratch copy of the certificate's generic files, to plant things in."""
    import shutil

    for f in check.generic_files() + ["_CoqProject"]:
        shutil.copy(check.HERE / f, tmp_path / f)
    return tmp_path


@needs_coq
def test_a_narrowed_head_statement_is_not_checked(tmp_path):
    """Head.v's statement narrowed to the trigger at j = 2 compiles and its theorem still reads
    ``min_bos_mass_at_least d L M q``: only the pinned body of the definition can tell."""
    folder = _generic_copy(tmp_path)
    head = (folder / "Head.v").read_text()
    narrowed = head.replace("""  forall (j : nat) (C : nat -> nat -> R),
    (2 <= j <= L - 1)%nat ->
    (forall k, (1 <= k <= L - 1)%nat -> in_content_box d (C k)) ->
    forall i""", """  forall (j : nat) (C : nat -> nat -> R),
    (2 <= j <= 2)%nat ->
    (forall k, (1 <= k <= L - 1)%nat -> in_content_box d (C k)) ->
    forall i""", 1)
    assert narrowed != head
    (folder / "Head.v").write_text(narrowed)
    result = check.check(export.build(softmax_head.build(6, 3), 6), "bos_gap", source=folder)
    assert result.ran and not result.ok, result.reason
    assert "Head.min_bos_mass_at_least is not the pinned statement" in result.reason, result.reason


@needs_coq
def test_a_hidden_hypothesis_in_a_generic_file_is_not_checked(tmp_path, monkeypatch):
    """A Hypothesis behind a one-line Section in Head.v, with the scan blinded: coqchk names it."""
    folder = _generic_copy(tmp_path)
    head = (folder / "Head.v").read_text()
    (folder / "Head.v").write_text(head.replace("Open Scope R_scope.\n", "Open Scope R_scope.\nSection S. End S.\n"
                                                "Hypothesis cheat : False.\n", 1))
    monkeypatch.setattr(check.kernel, "scan", lambda text, name="": [])
    result = check.check(export.build(softmax_head.build(6, 3), 6), "bos_gap", source=folder)
    assert result.ran and not result.ok and "SinksCert.Head.cheat" in result.reason, result.reason


def test_the_certificate_statement_pins_cover_the_statement_definitions():
    from proofs.coq.certificate import statement

    pinned = statement.load()["definitions"]
    for name in ("Head.min_bos_mass_at_least", "Head.max_bos_mass_at_trigger_at_most", "Checker.form", "Head.bos_weight",
                 "Head.sequence", "Head.score", "Head.in_content_box", "Head.content_token", "Head.trigger_token"):
        assert name in pinned, name
    assert "(2 <= j <= L - 1)" not in pinned["Head.min_bos_mass_at_least"]  # printed with Printing All
    assert "le (S (S O)) j) (le j (Nat.sub L (S O)))" in pinned["Head.min_bos_mass_at_least"]
