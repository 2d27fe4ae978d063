"""An experiment, not a default: the reduced product of the stack
certificates' two domains, the affine forms of ``proofs.certify.stack.affine_stack`` and the zonotopes of
``proofs.certify.stack.zono_stack``, on a trained softmax stack.

    python -m tests.benchmarks.bench_reduced_product SUMMARY [--layer 2] [--seeds 0 1]

(from the checkout root; ~60-80 s CPU per 4 x 4 seed up to layer 2). Both domains run in lockstep
on each input class (one per trigger position j). After each layer, per stream coordinate, each
domain's remainder is narrowed by the other's interval (``narrow``): a value x = c + (linear
part, |linear part| <= rho) + t with |t| <= r that is known to lie in [lo, hi] has
t in [max(-r, lo - c - rho), min(r, hi - c + rho)], for every value of the linear part. A head's
bound at a query is the larger of the two domains' bounds there (both are sound). It prints, per
head of the layer asked, the affine-form, zonotope and combined minima, and per layer the share of
each domain's remainder that the reduction removed. tests/test_reduced_product.py holds it below
every grid input of tiny stacks and ``narrow`` against sampled values.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from constructions.numbers import format_down
from proofs.certify.arithmetic import affine, heads
from proofs.certify.stack import affine_stack, zono_stack
from proofs.certify.arithmetic import zonotope as zt
from proofs.certify.arithmetic.affine import RELATIVE_SLACK, TINY


def narrow(c: np.ndarray, rho: np.ndarray, r: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre, remainder) of x = c + (linear part within +-rho) + t, |t| <= r, given lo <= x <= hi:
    the remainder t's range intersected with what [lo, hi] leaves it, recentred; outward by
    RELATIVE_SLACK of the magnitudes (a handful of float operations)."""
    slack = RELATIVE_SLACK * 4 * (np.abs(c) + rho + r + np.abs(lo) + np.abs(hi)) + TINY
    t_lo = np.maximum(-r, lo - c - rho - slack)
    t_hi = np.minimum(r, hi - c + rho + slack)
    if np.any(t_lo > t_hi):  # both enclose the same value, so the ranges meet: else a domain is unsound
        raise AssertionError("empty intersection of the two domains' enclosures")
    return c + (t_lo + t_hi) / 2, (t_hi - t_lo) / 2 + slack


def _affine_bounds(f: affine.Forms) -> tuple[np.ndarray, np.ndarray]:
    slack = RELATIVE_SLACK * f.magnitude() + TINY
    return f.b - f.radius() - slack, f.b + f.radius() + slack


def reduce_pair(fa: affine.Forms, fz: zt.Zono) -> tuple[affine.Forms, zt.Zono, float, float]:
    """Both streams, each remainder narrowed by the other's interval; and the share of each
    domain's total remainder removed."""
    a_lo, a_hi = _affine_bounds(fa)
    z_lo, z_hi = fz.bounds()
    b, ra = narrow(fa.b, np.abs(fa.A).sum(axis=2), fa.r, z_lo, z_hi)
    c, rz = narrow(fz.c, np.abs(fz.G).sum(axis=-1), fz.r, a_lo, a_hi)
    removed = [float(np.clip(old - new, 0, None).sum() / max(old.sum(), 1e-300)) for old, new in ((fa.r, ra), (fz.r, rz))]
    return affine.Forms(fa.A, b, ra), zt.Zono(c, fz.G, rz), *removed


def _lows(values: np.ndarray, j: int) -> np.ndarray:
    out = np.where(np.isnan(values), np.inf, values)
    out[0] = out[j] = np.inf  # BOS and the trigger carry no sink bound
    return out


def certify(net, L: int, reduce: bool = True) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """({"affine", "zonotope", "combined"}: [layers, heads, L] per-query lower bounds on a_i0,
    minimised over the trigger positions; +inf at BOS and unused heads), and [layers - 1, 2] the
    largest share of the affine / zonotope remainder removed after each layer. ``reduce=False``:
    the two certificates as they are (the same figures as ``affine_stack.certify_stack(net, L,
    exact_first=False)`` and ``zono_stack.certify_stack(net, L)``)."""
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    layers, width = len(net.layers), max(ly.heads for ly in net.layers)
    per = {k: np.full((layers, width, L), np.inf) for k in ("affine", "zonotope", "combined")}
    removed = np.zeros((max(layers - 1, 0), 2))
    for j in range(2, L):
        fa, fz = affine.inputs(net.d, L, j), zono_stack.inputs(net.d, L, j)
        memo: dict = {}  # per j: ``affine_stack``'s cross-j reuse is not argued for the reduced streams
        for n in range(layers):
            out_a, lows_a = affine_stack.layer_step(net.kind, maps[n], fa, j, n, memo, need_output=n < layers - 1)
            out_z, lows_z = zono_stack.layer_step(maps[n], fz)
            for h in range(len(maps[n])):
                la, lz = _lows(lows_a[h], j), _lows(lows_z[h].astype(float), j)
                for key, v in (("affine", la), ("zonotope", lz), ("combined", np.maximum(la, lz))):
                    per[key][n, h] = np.minimum(per[key][n, h], v)
            if n < layers - 1:
                fa = affine.add(fa, out_a) if net.residual else out_a
                fz = zt.add(fz, out_z) if net.residual else out_z
                if reduce:
                    fa, fz, ra, rz = reduce_pair(fa, fz)
                    removed[n] = np.maximum(removed[n], [ra, rz])
                fz = zt.fresh(fz)
    return per, removed


def main(argv: list[str] | None = None) -> None:
    from constructions import reference
    from empirical.training.metrics import STACK_SINK_MASS
    from empirical.weights.formats import networks_from_summary

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("summary", help="a sinks train summary of softmax stacks")
    p.add_argument("--layer", type=int, default=2, help="the layer whose heads are reported (the layers above are not run)")
    p.add_argument("--seeds", type=int, nargs="+", default=None)
    args = p.parse_args(argv)
    with open(args.summary) as f:
        summary = json.load(f)
    L = summary["config"]["L"]
    for item, member, seed in zip(networks_from_summary(summary), summary["members"], summary["config"]["seeds"]):
        if args.seeds and seed not in args.seeds:
            continue
        net = reference.Network(item.network.kind, item.network.layers[:args.layer + 1], item.network.residual)
        cpu = time.process_time()
        per, removed = certify(net, L)
        print(f"seed {seed}: {time.process_time() - cpu:.1f} s CPU; share of the remainder removed after each layer "
              "(affine forms / zonotope): " + ", ".join(f"L{n} {a:.2g} / {z:.2g}" for n, (a, z) in enumerate(removed)))
        for h, m in enumerate(member["layers"][args.layer]):
            mins = {k: float(v[args.layer, h, 1:].min()) for k, v in per.items()}
            print(f"  L{args.layer}H{h} measured mean {m['bos_nontrigger_mean']:.4f}"
                  f"{' (sinks)' if m['bos_nontrigger_mean'] > STACK_SINK_MASS else ''}: affine forms "
                  f"{format_down(mins['affine'], 4)}, zonotope {format_down(mins['zonotope'], 4)}, combined "
                  f"{format_down(mins['combined'], 4)}", flush=True)


if __name__ == "__main__":
    main()
