"""An experiment, not a default: the stack certificate's box method beside its linearised mixtures
(``affine_stack.certify_stack(linear=True)``, ``sinks certify --stack-method linear``) on a trained
softmax stack, per head, with the CPU seconds of each, and per layer the mean interval remainder
of the stream entering it after the trigger (trigger position 2).

    python -m tests.benchmarks.bench_linear_stack SUMMARY [--seeds 0 1] [--out FILE.json] [--oracle] [--trigger J]

(from the checkout root). A head's figure is the minimum over every trigger position, non-trigger
query and content; both are sound, so the larger is a certified minimum too. ``--oracle`` (trigger
at 2 only) adds per layer an affine fit of the true stream to 3,000 inputs (a third corners) with
its largest residual there, and each head's bound from the same search run on those fits: NOT a
certificate (the residual is sampled), an estimate of what the best affine-form domain could give.
``--trigger J``: only the input class with the trigger at J (a bound for that class, ~1/7 of the cost).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from proofs.certify.arithmetic import affine, heads
from proofs.certify.stack import affine_stack


def remainders(net, L: int, linear: bool, j: int = 2) -> list[float]:
    """Per layer: the mean remainder per coordinate of the stream entering it, after the trigger."""
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    z, out = affine.inputs(net.d, L, j), []
    for n in range(len(maps)):
        out.append(float(z.r[j + 1:].mean()))
        if n < len(maps) - 1:
            step, _ = affine_stack.layer_step(net.kind, maps[n], z, j, n, {}, linear=linear)
            z = affine.add(z, step)
    return out


def streams(net, maps, L: int, u: np.ndarray, j: int):
    """Float64 streams entering each layer [layers, B, L, d] and BOS masses [layers, heads, B, L]."""
    f = affine.inputs(net.d, L, j)
    x = np.einsum("ldn,bn->bld", f.A, u) + f.b
    xs, bos = [], []
    for layer in maps:
        xs.append(x)
        o, row = np.zeros_like(x), []
        for hm in layer:
            s = np.einsum("bid,de,bke->bik", x, hm.M, x) + np.triu(np.full((L, L), -np.inf), 1)
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            row.append(a[..., 0])
            o = o + np.einsum("bik,bkd->bid", a, x @ hm.V.T)
        bos.append(row)
        x = x + o
    return np.array(xs), np.array(bos)


def oracle(net, L: int, j: int = 2, samples: int = 3000) -> dict:
    """Per layer the sampled affine fit's residual and per head the bound on the fitted forms."""
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    N = (L - 1) * (net.d - 3)
    rng = np.random.default_rng(0)
    u = rng.uniform(-1, 1, (samples, N))
    u[: samples // 3] = np.sign(u[: samples // 3])
    xs, bos = streams(net, maps, L, u, j)
    X = np.hstack([u, np.ones((samples, 1))])
    keep = np.ones(L, bool)
    keep[0] = keep[j] = False
    out = {"residual": [], "bound": {}, "sampled_min": {}}
    for n, x in enumerate(xs):
        coef, *_ = np.linalg.lstsq(X, x.reshape(samples, -1), rcond=None)
        res = np.abs(X @ coef - x.reshape(samples, -1)).max(0).reshape(L, net.d)
        z = affine.Forms(coef[:-1].reshape(N, L, net.d).transpose(1, 2, 0).copy(), coef[-1].reshape(L, net.d), res + 1e-9)
        base = affine.inputs(net.d, L, j)
        z.A[0], z.b[0], z.r[0] = 0.0, base.b[0] if n == 0 else x[0, 0], 0.0
        out["residual"].append(float(res[j + 1:].mean()))
        _, lows = affine_stack.layer_step(net.kind, maps[n], z, j, n, {}, need_output=False)
        for h, low in enumerate(lows):
            out["bound"][f"L{n}H{h}"] = float(np.nanmin(low[keep]))
            out["sampled_min"][f"L{n}H{h}"] = float(bos[n, h][:, keep].min())
    return out


def class_bounds(net, L: int, j: int, linear: bool) -> dict[str, float]:
    """Per head the certified minimum over the one input class with the trigger at j."""
    maps = [[heads.head_maps(net, n, h) for h in range(ly.heads)] for n, ly in enumerate(net.layers)]
    keep = np.ones(L, bool)
    keep[0] = keep[j] = False
    z, out = affine.inputs(net.d, L, j), {}
    for n in range(len(maps)):
        step, lows = affine_stack.layer_step(net.kind, maps[n], z, j, n, {}, need_output=n < len(maps) - 1, linear=linear)
        out.update({f"L{n}H{h}": float(np.nanmin(low[keep])) for h, low in enumerate(lows)})
        if n < len(maps) - 1:
            z = affine.add(z, step)
    return out


def main(argv=None) -> None:
    from empirical.weights import formats

    p = argparse.ArgumentParser()
    p.add_argument("summary")
    p.add_argument("--seeds", type=int, nargs="*", default=None)
    p.add_argument("--out", default=None)
    p.add_argument("--oracle", action="store_true")
    p.add_argument("--trigger", type=int, default=None, help="only the input class with the trigger here")
    args = p.parse_args(argv)
    record = []
    for item in formats.load(args.summary, seeds=args.seeds):
        row = {"seed": item.label}
        for method, linear in (("box", False), ("linear", True)):
            cpu = time.process_time()
            if args.trigger is None:
                cert = affine_stack.certify_stack(item.network, item.L, exact_first=False, linear=linear)
                minima = {f"L{h['layer']}H{h['head']}": h["min_bos_certified"] for h in cert["heads"]}
            else:
                minima = class_bounds(item.network, item.L, args.trigger, linear)
            row[method] = {"cpu_seconds": time.process_time() - cpu, "minima": minima,
                           "remainder_entering_layer": remainders(item.network, item.L, linear)}
        if args.oracle:
            row["oracle"] = oracle(item.network, item.L)
            print(item.label, "oracle: sampled residual entering each layer", np.round(row["oracle"]["residual"], 4))
        record.append(row)
        print(item.label, {m: round(row[m]["cpu_seconds"], 1) for m in ("box", "linear")}, "CPU s;",
              "remainders entering each layer, box", np.round(row["box"]["remainder_entering_layer"], 3),
              "linear", np.round(row["linear"]["remainder_entering_layer"], 3), flush=True)
        for head, b in row["box"]["minima"].items():
            extra = (f"  oracle {row['oracle']['bound'][head]:.4g}  sampled min {row['oracle']['sampled_min'][head]:.4g}"
                     if args.oracle else "")
            print(f"  {head}: box {b:.4g}  linear {row['linear']['minima'][head]:.4g}{extra}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
