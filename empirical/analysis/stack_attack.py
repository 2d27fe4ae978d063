"""The worst input of each stack head, by search: an upper bound on the head's minimum BOS mass
over every input, beside the certified lower bound (``proofs.certify.stack``).

``attack(net, L)``: projected gradient descent on the inputs, float64 through the project's torch
model (``empirical.training.model.from_network``, the model that trains the stacks). Every
(query i, trigger position j) class is searched, for every target head at once, in one batch:
a query before the trigger sees no trigger (causal), so all j > i are one class (j = L - 1), and
after it every j in 2..i-1 is its own. Per class and head ``restarts`` starts uniform in the
content box; each step moves every content by a signed gradient of log a_i0 (cosine-decayed step,
clipped to [-1, 1]); each element keeps the lowest point it visited, and at the end the corner
that point rounds to (sign of every content) is tried too. A head's worst input is the lowest
over its classes.

``brackets(net, L, cert)``: each attacked head's worst input replayed exactly
(``proofs.certify.stack.refute.replay_bos``: rationals, mpmath intervals), and its bracket
[certified minimum, replayed upper end] with the verdict certified / refuted / unknown
(``refute.bracket``). Deterministic: seeded generator, float64.
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

STEPS = 120  # signed-gradient steps
RESTARTS = 3  # starts per (head, query, trigger class)
STEP = 0.5  # first step (the box has width 2); cosine-decayed to STEP / 50


def classes(L: int) -> list[tuple[int, int]]:
    """(query i, trigger j) per class of inputs a non-trigger query can see: i before the trigger
    (one class, j = L - 1) and i after it (j = 2..i-1)."""
    out = []
    for i in range(1, L):
        if i < L - 1:
            out.append((i, L - 1))
        out += [(i, j) for j in range(2, i)]
    return out


def _sequences(contents, triggers, d: int):
    """Inputs [B, L, d] from contents [B, L-1, d-3] (differentiable) and trigger positions [B]."""
    import torch

    from constructions import task

    B, Lm, n = contents.shape
    base = torch.zeros(B, Lm + 1, d, dtype=contents.dtype)
    base[:, 0, task.BOS_FLAG] = 1
    base[:, 1:, task.content_flag(d)] = 1
    rows = torch.arange(B)
    base[rows, triggers, task.content_flag(d)] = 0
    base[rows, triggers, task.TRIGGER_FLAG] = 1
    pad = torch.nn.functional.pad(contents, (task.CONTENT_START, 1))  # content columns 2..d-2
    return base + torch.nn.functional.pad(pad, (0, 0, 1, 0))


def _bos(model, x, layer, head, query):
    """a_i0 [B] of each element's own (layer, head, query)."""
    import torch

    _, cache = model(x)
    top = int(layer.max()) + 1
    bos = torch.stack([cache[f"L{n}.pattern"][..., 0] for n in range(top)])  # [layers, B, H, L]
    return bos[layer, torch.arange(len(layer)), head, query]


def attack(net, L: int, targets: Sequence[tuple[int, int]] | None = None, steps: int = STEPS,
           restarts: int = RESTARTS, seed: int = 0) -> dict[str, Any]:
    """Per target head (layer, head; default every head) the lowest BOS mass found at a
    non-trigger query over every class, with its input (float64 search; replay it exactly)."""
    import torch

    from empirical.training.model import from_network

    start, cpu = time.perf_counter(), time.process_time()
    targets = list(targets) if targets is not None else [(n, h) for n, ly in enumerate(net.layers) for h in range(ly.heads)]
    model = from_network(net, dtype=torch.float64)
    for p in model.parameters():
        p.requires_grad_(False)
    cls = classes(L)
    grid = [(t, i, j) for t in range(len(targets)) for i, j in cls for _ in range(restarts)]
    target = torch.tensor([g[0] for g in grid])
    layer = torch.tensor([targets[t][0] for t in target.tolist()])
    head = torch.tensor([targets[t][1] for t in target.tolist()])
    query = torch.tensor([g[1] for g in grid])
    trig = torch.tensor([g[2] for g in grid])
    gen = torch.Generator().manual_seed(seed)
    n = net.d - 3
    c = torch.rand(len(grid), L - 1, n, generator=gen, dtype=torch.float64) * 2 - 1
    best, best_c = torch.full((len(grid),), math.inf, dtype=torch.float64), c.clone()
    for t in range(steps + 1):
        c.requires_grad_(True)
        a = _bos(model, _sequences(c, trig, net.d), layer, head, query)
        with torch.no_grad():
            better = a < best
            best = torch.where(better, a, best)
            best_c[better] = c[better]
        if t == steps:
            break
        (g,) = torch.autograd.grad(torch.log(a).sum(), c)
        step = STEP * (0.02 + 0.98 * (1 + math.cos(math.pi * t / steps)) / 2)
        c = (c.detach() - step * torch.sign(g)).clamp(-1, 1)
    with torch.no_grad():  # the corners the lowest points round to
        corner = torch.where(best_c >= 0, 1.0, -1.0).to(torch.float64)
        a = _bos(model, _sequences(corner, trig, net.d), layer, head, query)
        better = a < best
        best = torch.where(better, a, best)
        best_c[better] = corner[better]
    found = []
    for k, (n_, h) in enumerate(targets):
        rows = (target == k).nonzero().flatten()
        b = int(rows[torch.argmin(best[rows])])
        found.append({"layer": n_, "head": h, "worst_float": float(best[b]), "query": int(query[b]),
                      "trigger": int(trig[b]), "contents": best_c[b].tolist()})
    return {"heads": found, "steps": steps, "restarts": restarts, "seed": seed, "classes": len(cls),
            "inputs_per_step": len(grid), "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}


def brackets(net, L: int, cert: dict, targets: Sequence[tuple[int, int]] | None = None, **options) -> dict[str, Any]:
    """``attack`` on ``targets`` (default: every head), each worst input replayed exactly, and per
    head of ``cert`` (a stack certificate) attacked its bracket and verdict (``refute.bracket``)."""
    from proofs.certify.stack import refute

    found = attack(net, L, targets, **options)
    cpu = time.process_time()
    level = cert.get("sink_level", refute.SINK_LEVEL)
    mins = {(h["layer"], h["head"]): h["min_bos_certified"] for h in cert["heads"]}
    heads = []
    for w in found["heads"]:
        low, high = refute.replay_bos(net, w["contents"], w["trigger"], w["layer"], w["head"], w["query"])
        heads.append({"layer": w["layer"], "head": w["head"], **refute.bracket(mins[(w["layer"], w["head"])], high, level),
                      "worst_low": low, "worst_float": w["worst_float"], "query": w["query"], "trigger": w["trigger"],
                      "contents": w["contents"]})
    search = {k: v for k, v in found.items() if k != "heads"}
    return {"heads": heads, "search": search, "replay_cpu_seconds": time.process_time() - cpu,
            "cpu_seconds": found["cpu_seconds"] + time.process_time() - cpu,
            "method": "projected signed-gradient descent on the contents (float64 torch model), every (query, trigger) "
                      "class, lowest point and its corner; the worst input replayed in rationals / mpmath intervals"}
