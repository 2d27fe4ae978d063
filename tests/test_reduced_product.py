"""The reduced-product experiment of tests/benchmarks/bench_reduced_product.py: its one
new step, ``narrow``, against sampled values (and the sampler shown able to catch a wrong
narrowing); the lockstep run without the reduction equal to the two certificates; with it, no
bound above any grid input of tiny stacks."""

import numpy as np
import pytest

from proofs.certify.stack import affine_stack, zono_stack
from tests.benchmarks.bench_reduced_product import certify, narrow
from tests.test_certify_stack import enumerated_minima, sinking_stack


def correlated_samples(seed: int, n: int = 20000, E: int = 5, shift: float = 0.0):
    """x = c + G e + t where the remainder t mostly cancels the linear part (t = -G e + noise,
    clipped to |t| <= r), as when one domain's error is the other's known shape: so [lo, hi], the
    samples' range, is much narrower than the linear part and narrowing t is possible. ``shift``:
    t = -G e + shift r + noise instead, so [lo, hi] lies off the form's centre c and the narrowed
    remainder's centre must move."""
    rng = np.random.default_rng(seed)
    c, G = rng.normal(0, 2), rng.normal(0, 1, E)
    rho = np.abs(G).sum()
    r = rho * rng.uniform(0.5, 1.5)
    g = rng.uniform(-1, 1, (n, E)) @ G
    t = np.clip(-g + shift * r + rng.uniform(-0.1, 0.1, n), -r, r)
    x = c + g + t
    return c, rho, r, t, x.min(), x.max()


def escapes(narrowing, seeds=range(20), shift: float = 0.0) -> int:
    """How many sampled remainders fall outside the narrowed remainder."""
    count = 0
    for s in seeds:
        c, rho, r, t, lo, hi = correlated_samples(s, shift=shift)
        centre, radius = narrowing(np.array(c), np.array(rho), np.array(r), np.array(lo), np.array(hi))
        count += int(np.sum(np.abs(c + t - centre) > radius))
    return count


def test_narrow_keeps_every_sampled_remainder_and_a_wrong_one_does_not():
    assert escapes(narrow) == 0
    c, rho, r, _, lo, hi = correlated_samples(0)
    assert narrow(np.array(c), np.array(rho), np.array(r), np.array(lo), np.array(hi))[1] < r  # it does narrow

    def without_linear_part(c, rho, r, lo, hi):  # planted: the linear part's reach dropped
        t_lo, t_hi = np.maximum(-r, lo - c), np.minimum(r, hi - c)
        return c + (t_lo + t_hi) / 2, (t_hi - t_lo) / 2

    def inward(c, rho, r, lo, hi):  # planted: the linear part's reach on the wrong side
        t_lo, t_hi = np.maximum(-r, lo - c + rho), np.minimum(r, hi - c - rho)
        return c + (t_lo + t_hi) / 2, (t_hi - t_lo) / 2

    assert escapes(without_linear_part) > 0 and escapes(inward) > 0


SHIFTS = (-0.6, -0.3, 0.3, 0.6)


def test_narrow_moves_the_centre_of_an_off_centre_intersection_and_keeping_it_fails():
    """[lo, hi] off the form's centre (by shift r): the remainder's range meets it on one side, so
    the narrowed remainder is centred elsewhere; the samples stay inside, and a narrowing that keeps
    the old centre (with the narrowed half-width) lets some escape."""
    for shift in SHIFTS:
        assert escapes(narrow, shift=shift) == 0, shift
        c, rho, r, _, lo, hi = correlated_samples(0, shift=shift)
        centre, radius = narrow(np.array(c), np.array(rho), np.array(r), np.array(lo), np.array(hi))
        assert radius < r and np.sign(centre - c) == np.sign(shift) and abs(centre - c) > 0.1 * r, shift

    def keeps_centre(c, rho, r, lo, hi):  # planted: the narrowed half-width about the old centre
        return c, narrow(c, rho, r, lo, hi)[1]

    assert escapes(keeps_centre) == 0  # centred samples cannot tell it apart
    assert all(escapes(keeps_centre, shift=shift) > 0 for shift in SHIFTS)


def test_narrow_refuses_disjoint_enclosures():
    with pytest.raises(AssertionError):
        narrow(np.array(0.0), np.array(1.0), np.array(1.0), np.array(5.0), np.array(6.0))


def test_without_the_reduction_the_lockstep_run_is_the_two_certificates():
    net, L = sinking_stack(4, 5, beta=4.0, layers=3), 5
    per, _ = certify(net, L, reduce=False)
    for key, cert in (("affine", affine_stack.certify_stack(net, L, exact_first=False)), ("zonotope", zono_stack.certify_stack(net, L))):
        for h in cert["heads"]:
            assert per[key][h["layer"], h["head"], 1:].min() == h["min_bos_certified"]


@pytest.mark.parametrize("key", [(4, 5, 1, 4.0, 2), (4, 5, 5, 4.0, 3), (4, 4, 2, 4.0, 3), (4, 5, 0, 3.0, 3)],
                         ids=lambda k: f"d{k[0]}-L{k[1]}-seed{k[2]}-layers{k[4]}")
def test_combined_bound_below_every_grid_input(key):
    d, L, seed, beta, layers = key
    net = sinking_stack(d, seed, beta=beta, layers=layers)
    worst = enumerated_minima(net, L)
    per, removed = certify(net, L)
    assert np.all(removed >= 0) and np.all(removed <= 1)
    for (n, h, i), value in worst.items():
        assert per["combined"][n, h, i] <= value + 1e-12


def test_grid_check_catches_a_reduction_that_drops_the_remainder(monkeypatch):
    """The grid check has the power to see an unsound reduction: with every remainder narrowed
    to 0 some combined bound exceeds a grid input (by 0.40 on this stack)."""
    import tests.benchmarks.bench_reduced_product as bench

    monkeypatch.setattr(bench, "narrow", lambda c, rho, r, lo, hi: (c, 0.0 * r))
    net, L = sinking_stack(4, 5, beta=4.0, layers=3), 5
    worst = enumerated_minima(net, L)
    per, _ = bench.certify(net, L)
    assert max(per["combined"][n, h, i] - v for (n, h, i), v in worst.items()) > 0.1
