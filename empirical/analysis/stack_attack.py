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
(``proofs.certify.stack.refute.replay_bos``: rationals, Arb balls), and its bracket
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
SCREEN_STEPS = 30  # steps of the first round, one start per (head, class)
KEEP = 8  # classes per head searched further (its lowest after the first round)


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


def _descend(model, d: int, c, layer, head, query, trig, steps: int):
    """Signed-gradient descent of each element's log a_i0 from contents ``c`` [B, L-1, d-3]: the
    lowest a_i0 each element visited [B] and where, its corner tried too."""
    import torch

    best, best_c = torch.full((len(c),), math.inf, dtype=torch.float64), c.clone()
    for t in range(steps + 1):
        c.requires_grad_(True)
        a = _bos(model, _sequences(c, trig, d), layer, head, query)
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
        a = _bos(model, _sequences(corner, trig, d), layer, head, query)
        better = a < best
        best = torch.where(better, a, best)
        best_c[better] = corner[better]
    return best, best_c


def attack(net, L: int, targets: Sequence[tuple[int, int]] | None = None, steps: int = STEPS,
           restarts: int = RESTARTS, seed: int = 0, screen: int = SCREEN_STEPS, keep: int = KEEP) -> dict[str, Any]:
    """Per target head (layer, head; default every head) the lowest BOS mass found at a
    non-trigger query over every class, with its input (float64 search; replay it exactly).
    Two rounds: every class of every head ``screen`` steps from one random start; then each
    head's ``keep`` lowest classes ``steps`` steps from their screened point and ``restarts`` - 1
    fresh starts."""
    import torch

    from empirical.training.model import from_network

    start, cpu = time.perf_counter(), time.process_time()
    targets = list(targets) if targets is not None else [(n, h) for n, ly in enumerate(net.layers) for h in range(ly.heads)]
    model = from_network(net, dtype=torch.float64)
    for p in model.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    n, cls = net.d - 3, classes(L)

    def run(grid, c, rounds):  # grid: (target index, i, j) per element
        t = torch.tensor([g[0] for g in grid])
        layer = torch.tensor([targets[k][0] for k in t.tolist()])
        head = torch.tensor([targets[k][1] for k in t.tolist()])
        best, best_c = _descend(model, net.d, c, layer, head, torch.tensor([g[1] for g in grid]),
                                torch.tensor([g[2] for g in grid]), rounds)
        return t, best, best_c

    def fresh(count):
        return torch.rand(count, L - 1, n, generator=gen, dtype=torch.float64) * 2 - 1

    grid = [(t, i, j) for t in range(len(targets)) for i, j in cls]
    t, best, best_c = run(grid, fresh(len(grid)), screen)
    chosen = []
    for k in range(len(targets)):
        rows = (t == k).nonzero().flatten()
        chosen += rows[torch.argsort(best[rows])[:keep]].tolist()
    second = [grid[r] for r in chosen for _ in range(restarts)]
    starts = torch.cat([torch.cat([best_c[r:r + 1], fresh(restarts - 1)]) for r in chosen])
    t2, best2, best_c2 = run(second, starts, steps)
    grid, t, best, best_c = grid + second, torch.cat([t, t2]), torch.cat([best, best2]), torch.cat([best_c, best_c2])
    found = []
    for k, (n_, h) in enumerate(targets):
        rows = (t == k).nonzero().flatten()
        b = int(rows[torch.argmin(best[rows])])
        found.append({"layer": n_, "head": h, "worst_float": float(best[b]), "query": grid[b][1],
                      "trigger": grid[b][2], "contents": best_c[b].tolist()})
    return {"heads": found, "steps": steps, "restarts": restarts, "screen_steps": screen, "kept_classes": keep,
            "seed": seed, "classes": len(cls), "seconds": time.perf_counter() - start,
            "cpu_seconds": time.process_time() - cpu}


def best_minima(*certs: dict | None) -> dict[tuple[int, int], float]:
    """Per head (layer, head) the largest certified minimum of the given stack certificates (each
    is sound, so their maximum is)."""
    out: dict[tuple[int, int], float] = {}
    for cert in certs:
        for h in (cert or {}).get("heads", []):
            key = (h["layer"], h["head"])
            out[key] = max(out.get(key, -math.inf), h["min_bos_certified"])
    return out


def open_heads(cert: dict, *others: dict | None, only: Sequence[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """The heads whose certified minimum (the largest of ``cert`` and ``others``) is below the
    sink level, of ``only`` when given: the ones a search can still settle."""
    level = cert.get("sink_level", 0.5)
    return [k for k, m in best_minima(cert, *others).items() if m < level and (only is None or k in only)]


def brackets(net, L: int, cert: dict, targets: Sequence[tuple[int, int]] | None = None, others: Sequence[dict] = (),
             **options) -> dict[str, Any]:
    """``attack`` on ``targets`` (default: every head), each worst input replayed exactly, and per
    head attacked its bracket [certified minimum (the largest of ``cert`` and ``others``), replayed
    upper end] and verdict (``refute.bracket``)."""
    from proofs.certify.stack import refute

    level = cert.get("sink_level", refute.SINK_LEVEL)
    mins = best_minima(cert, *others)
    found = attack(net, L, targets, **options) if targets is None or len(targets) else \
        {"heads": [], "cpu_seconds": 0.0, "seconds": 0.0}
    cpu = time.process_time()
    heads = []
    for w in found["heads"]:
        low, high = refute.replay_bos(net, w["contents"], w["trigger"], w["layer"], w["head"], w["query"])
        heads.append({"layer": w["layer"], "head": w["head"], **refute.bracket(mins[(w["layer"], w["head"])], high, level),
                      "worst_low": low, "worst_float": w["worst_float"], "query": w["query"], "trigger": w["trigger"],
                      "contents": w["contents"]})
    search = {k: v for k, v in found.items() if k != "heads"}
    return {"heads": heads, "search": search, "replay_cpu_seconds": time.process_time() - cpu,
            "cpu_seconds": found["cpu_seconds"] + time.process_time() - cpu, "sink_level": level,
            "counts": {v: sum(h["verdict"] == v for h in heads) for v in ("certified", "refuted", "unknown")},
            "method": "projected signed-gradient descent on the contents (float64 torch model), every (query, trigger) "
                      "class, lowest point and its corner; the worst input replayed in rationals / Arb balls"}


def summary_line(br: dict) -> str:
    """The brackets of one stack in a line: each searched head's [certified minimum, worst input
    found] (each on its safe side) and verdict."""
    from constructions.numbers import format_down, format_up

    return "; ".join(f"L{h['layer']}H{h['head']} [{format_down(h['certified_min'], 3)}, {format_up(h['worst_found'], 4)}] "
                     f"{h['verdict']}" for h in br["heads"])
