"""An experiment, not a default: where a deep stack head's bound is lost, along the directions its
scores read the streams. For one trained softmax stack, head, query i and trigger position j:

- per key k the certified upper end of the score difference t_k = s_ik - s_i0 with the
  remainders as intervals and read along directions (``directional``), beside the largest t_k a
  projected gradient ascent on the contents finds (an input's, so a lower end);
- the query's remainder along g = M (z_k - z_0) and a key's along M^T z_i: as intervals
  (|g| . r), by back-substitution, and the largest residual g . (z(u) - A u - b) the same ascent
  finds (how far the stream really leaves its affine part along g, at an input), and the
  back-substituted bound's deviations' terms by the layer they arise in.

    python -m tests.benchmarks.bench_directional SUMMARY --seed 1 --layer 2 --head 1 --query 8 --trigger 2

(from the checkout root; float64 torch for the searches, 6 starts, 150 steps each).
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np


def forms(net, L: int, j: int, layer: int, joint: bool = False, bounds: dict | None = None):
    """The forms entering ``layer`` for trigger position j (the directional method's, or with
    ``joint`` the joint method's), with their record and the heads' maps; ``bounds``, when given,
    receives per (layer, head) below ``layer`` the certified BOS lower bounds [L]."""
    from proofs.certify.arithmetic import affine, heads
    from proofs.certify.stack import affine_stack, directional

    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    z, memo, rec = affine.inputs(net.d, L, j), {}, directional.Record(residual=net.residual)
    for n in range(layer):
        rec.streams.append(z)
        out, lows = affine_stack.layer_step(net.kind, maps[n], z, j, n, memo, record=rec, joint=joint)
        if bounds is not None:
            bounds.update({(n, h): low for h, low in enumerate(lows)})
        z = affine.add(z, out) if net.residual else out
    rec.streams.append(z)
    return z, rec, maps


def ascend(net, L: int, j: int, layer: int, value, count: int, steps: int = 150, starts: int = 6, seed: int = 0):
    """The largest of ``value(streams, contents)`` [B, count] per column over the contents, by
    signed-gradient ascent from ``starts`` random points per column."""
    import torch

    from empirical.analysis.stack_attack import _sequences
    from empirical.training.model import from_network

    model = from_network(net, dtype=torch.float64)
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    B = count * starts
    c = torch.rand(B, L - 1, net.d - 3, generator=gen, dtype=torch.float64) * 2 - 1
    col = torch.arange(count).repeat_interleave(starts)
    best = torch.full((count,), -math.inf, dtype=torch.float64)
    for t in range(steps + 1):
        c.requires_grad_(True)
        _, cache = model(_sequences(c, torch.full((B,), j), net.d))
        v = value(cache[f"L{layer}.input"], c)[torch.arange(B), col]
        with torch.no_grad():
            best = torch.maximum(best, torch.zeros_like(best).scatter_reduce(0, col, v, "amax", include_self=False))
        if t == steps:
            break
        (g,) = torch.autograd.grad(v.sum(), c)
        step = 0.5 * (0.02 + 0.98 * (1 + math.cos(math.pi * t / steps)) / 2)
        c = (c.detach() + step * torch.sign(g)).clamp(-1, 1)
    return best.numpy()


def main(argv: list[str] | None = None) -> None:
    import torch

    from empirical.weights import networks_from_summary
    from proofs.certify.arithmetic import branch
    from proofs.certify.stack import affine_stack, directional, scores

    p = argparse.ArgumentParser()
    p.add_argument("summary")
    for name in ("seed", "layer", "head", "query", "trigger"):
        p.add_argument(f"--{name}", type=int, required=True)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    summary = json.load(open(a.summary))
    L = summary["config"]["L"]
    net = next(it.network for it in networks_from_summary(summary, "summary") if it.label == f"seed {a.seed}")
    i, j, n = a.query, a.trigger, a.layer
    z, rec, maps = forms(net, L, j, n)
    M = maps[n][a.head].M
    along = directional.Cached(rec, n)
    Mt = torch.tensor(M)

    def t_k(zz, c):  # [B, i]: s_ik - s_i0 for k = 1..i
        return torch.einsum("bd,de,bke->bk", zz[:, i], Mt, zz[:, 1:i + 1] - zz[:, :1])
    found = ascend(net, L, j, n, t_k, i)
    plain = scores.key_exponents(M, z, i, scores.bos_reference(z))
    read = scores.key_exponents(M, z, i, scores.bos_reference(z), along)
    print(f"seed {a.seed}, L{n}H{a.head}, query {i}, trigger {j}: per key, the certified upper end of s_ik - s_i0 "
          "(interval remainders / read along directions) and the largest found by ascent")
    for k in range(1, i + 1):
        ends = [math.log(branch.maximise(affine_stack._ExpSum([(1.0, scores.compact(e[k][0]))], +1), net.d - 3,
                                         rtol=1e-3, max_nodes=100).upper) for e in (plain, read)]
        print(f"  key {k}{' (trigger)' if k == j else ''}: {ends[0]:.2f} / {ends[1]:.2f}; found {found[k - 1]:.2f}")
    directions = {"query, along M (z_k - z_0)": (i, M @ (z.b[i - 1] - z.b[0])), "key i-1, along M^T z_i": (i - 1, M.T @ z.b[i]),
                  "trigger key, along M^T z_i": (j, M.T @ z.b[i])}
    for name, (pos, g) in directions.items():
        A, b, gt = torch.tensor(np.einsum("dn,d->n", z.A[pos], g)), float(z.b[pos] @ g), torch.tensor(g)

        def residual(zz, c):
            r = zz[:, pos] @ gt - c.reshape(len(c), -1) @ A - b
            return torch.stack([r, -r], dim=1)
        up, down = ascend(net, L, j, n, residual, 2)
        print(f"  {name}: as intervals {np.abs(g) @ z.r[pos]:.3f}, back-substituted "
              f"{directional.backward(rec, n, {pos: g[None]})[0]:.3f}; residual found {-down:.3f} .. {up:.3f}")
        low, high, _ = directional.backward_terms(rec, n, {pos: g[None]})
        print("    the deviations' terms by the layer they arise in: "
              + ", ".join(f"layer {l} [{low[l, 0]:.3f}, {high[l, 0]:.3f}]" for l in range(n)))


if __name__ == "__main__":
    main()
