"""An experiment, not a default: where a trained stack's certificate loses its deep heads, layer by
layer, at one trigger position j (``--stack-method directional``'s forms, or ``joint``'s with
``--joint``; one input class).

- Per layer, the attention weights' certified per-key boxes (``affine_stack.key_bounds``, as the
  record's mixtures hold them) beside the range the weights take on sampled inputs of the class
  (half corners of the content box, half uniform), at the trigger query and at the queries after
  it, means over heads and keys; and the stream's mean remainder per coordinate after the trigger.
  A box far wider than the sampled range is where the relaxation loses.
- Per head that sinks on the samples (mean non-trigger BOS mass > ``STACK_SINK_MASS``) and is not
  certified at this class: its certified minimum and the sampled one at its worst query i, and the
  back-substituted remainder of the trigger key's score s_ij - s_i0 along its two directions (the
  query's along M (z_j - z_0), the trigger key's along M^T z_i), split by the layer whose
  deviations' terms it comes from (``directional.backward_terms``, half widths).

    python -m tests.benchmarks.bench_where_lost SUMMARY --seed 1 [--trigger 2] [--samples 4000] [--joint] [--out FILE]

(from the checkout root; torch float64 for the samples). Not a test: a measurement for the READMEs.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def record_class(net, L: int, j: int, joint: bool = False):
    """The directional record of trigger position j through every layer (``joint``: with the
    weights' bounds searched jointly, ``--stack-method joint``), the certified BOS lower bounds per
    (layer, head) [L] (NaN at BOS and the trigger) and the heads' maps."""
    from proofs.certify.stack import affine_stack
    from tests.benchmarks.bench_directional import forms

    last, bounds = len(net.layers) - 1, {}
    z, rec, maps = forms(net, L, j, last, joint, bounds)
    _, lows = affine_stack.layer_step(net.kind, maps[last], z, j, last, need_output=False, record=rec, joint=joint)
    bounds.update({(last, h): low for h, low in enumerate(lows)})
    return rec, bounds, maps


def sampled_patterns(net, L: int, j: int, count: int, seed: int = 0) -> np.ndarray:
    """[layers, B, H, L, L] attention weights of ``count`` inputs of the class."""
    import torch

    from empirical.analysis.stack_attack import _sequences
    from empirical.training.model import from_network

    model = from_network(net, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    c = torch.rand(count, L - 1, net.d - 3, generator=gen, dtype=torch.float64) * 2 - 1
    c[: count // 2] = torch.sign(c[: count // 2])
    with torch.no_grad():
        _, cache = model(_sequences(c, torch.full((count,), j), net.d))
    return np.stack([cache[f"L{n}.pattern"].numpy() for n in range(len(net.layers))])


def weight_boxes(rec, layer: int, heads: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """[H, p + 1] the certified per-key weight boxes at query p (the record's deviations around m)."""
    boxes = [(g.m + g.d_lo, g.m + g.d_hi) for g in (rec.mixtures[(layer, h, p)].groups[0] for h in range(heads))]
    return np.clip([b[0] for b in boxes], 0, 1), np.clip([b[1] for b in boxes], 0, 1)


def layer_rows(rec, pat: np.ndarray, j: int, L: int) -> list[dict]:
    """Per layer below the last: mean certified box width and mean sampled range of the weights, at
    the trigger query and after it; the stream's mean remainder after the trigger entering it."""
    rows = []
    for n in range(pat.shape[0] - 1):
        H, row = pat.shape[2], {"layer": n, "remainder_in": float(rec.streams[n].r[j:].mean())}
        for name, queries in (("trigger", [j]), ("after", range(j + 1, L))):
            cert, seen = [], []
            for p in queries:
                lo, hi = weight_boxes(rec, n, H, p)
                cert.append((hi - lo).mean())
                seen.append((pat[n, :, :, p, :p + 1].max(axis=0) - pat[n, :, :, p, :p + 1].min(axis=0)).mean())
            row[name] = {"certified_width": float(np.mean(cert)), "sampled_range": float(np.mean(seen))}
        rows.append(row)
    return rows


def head_rows(net, rec, bounds: dict, maps, pat: np.ndarray, j: int, L: int) -> list[dict]:
    """Each head sinking on the samples and below 1/2 at this class: its worst query, and the trigger
    key's score remainders split by the layer they arise in."""
    from empirical.training.metrics import STACK_SINK_MASS
    from proofs.certify.stack import directional

    rows, others = [], [q for q in range(1, L) if q != j]
    for (n, h), low in sorted(bounds.items()):
        bos = pat[n, :, h][:, others, 0]  # [B, queries]
        if n == 0 or bos.mean() <= STACK_SINK_MASS or np.nanmin(low[1:]) >= 0.5:
            continue
        i = int(np.nanargmin(np.where(np.arange(L) > j, low, np.nan)))
        z, M = rec.streams[n], maps[n][h].M
        split = {}
        for name, (pos, g) in {"query": (i, M @ (z.b[j] - z.b[0])), "trigger key": (j, M.T @ z.b[i])}.items():
            lo, hi, _ = directional.backward_terms(rec, n, {pos: g[None]})
            split[name] = {"bound": float(directional.backward(rec, n, {pos: g[None]})[0]),
                           "by_layer": [float((hi[l, 0] - lo[l, 0]) / 2) for l in range(n)]}
        rows.append({"head": f"L{n}H{h}", "query": i, "certified": float(low[i]),
                     "sampled_min": float(pat[n, :, h, i, 0].min()), "remainders": split})
    return rows


def main(argv: list[str] | None = None) -> None:
    import torch

    from constructions import files
    from empirical.weights import networks_from_summary

    p = argparse.ArgumentParser()
    p.add_argument("summary")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--trigger", type=int, default=2)
    p.add_argument("--samples", type=int, default=4000)
    p.add_argument("--joint", action="store_true", help="the joint method's forms instead of the directional one's")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    summary = json.load(open(a.summary))
    L, j = summary["config"]["L"], a.trigger
    net = next(it.network for it in networks_from_summary(summary, "summary") if it.label == f"seed {a.seed}")
    cpu = time.process_time()
    rec, bounds, maps = record_class(net, L, j, a.joint)
    pat = sampled_patterns(net, L, j, a.samples)
    layers, heads = layer_rows(rec, pat, j, L), head_rows(net, rec, bounds, maps, pat, j, L)
    print(f"seed {a.seed}, trigger {j}: per layer, weights' certified box width / sampled range (trigger query; after), "
          "stream remainder entering")
    for r in layers:
        t, f = r["trigger"], r["after"]
        print(f"  layer {r['layer']}: {t['certified_width']:.3f} / {t['sampled_range']:.3f}; "
              f"{f['certified_width']:.3f} / {f['sampled_range']:.3f}; remainder in {r['remainder_in']:.3f}")
    for r in heads:
        parts = "; ".join(f"{k} {v['bound']:.2f} = " + " + ".join(f"L{l} {x:.2f}" for l, x in enumerate(v["by_layer"]))
                          for k, v in r["remainders"].items())
        print(f"  {r['head']} query {r['query']}: certified {r['certified']:.3g}, sampled min {r['sampled_min']:.4f}; "
              f"trigger key's remainders: {parts}")
    print(f"  CPU {time.process_time() - cpu:.0f} s")
    if a.out:
        files.write_json(a.out, {"layers": layers, "heads": heads, "cpu_seconds": time.process_time() - cpu,
                                 "provenance": files.provenance({"summary": a.summary, "trigger": j,
                                                                 "samples": a.samples, "joint": a.joint}, a.seed)})


if __name__ == "__main__":
    main()
