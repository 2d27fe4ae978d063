"""The explicit constructions in float: their exact weights through the torch model at any length.

``float_check`` runs a construction's weights through ``empirical.training.model`` on random
batches of the task at any length (the reference size L = 16 and far beyond it) and reports the
largest error and the BOS weights, to show that the exact construction generalises in length.
"""

from __future__ import annotations

from typing import Any

from constructions import reference, task


def float_check(net: reference.Network, L: int, batch: int = 32, seed: int = 0,
                device: str = "cpu", dtype: Any = None) -> dict[str, Any]:
    """Run ``net``'s weights in ``empirical.training.model`` on ``batch`` random sequences of length ``L``
    (trigger uniform in 2..L-1, content Uniform[-1, 1)) and compare with the task target.

    Returns the largest |output - target| and the BOS weights of every head: the largest
    a_i0 over all queries i >= 1, the smallest a_i0 over non-trigger queries, and the
    largest a_j0 at the trigger.
    """
    import torch

    from empirical.training.model import from_network

    dtype = dtype or torch.float64
    cfg = task.TaskConfig(d=net.d, L=L, residual=net.residual)
    model = from_network(net, device=device, dtype=dtype)
    batch_data = task.sample(cfg, batch, torch.Generator().manual_seed(seed), device, dtype)
    with torch.no_grad():
        out, cache = model(batch_data.x)  # [B, L, d]
    at_trigger = (torch.arange(L, device=batch_data.x.device) == batch_data.trigger.unsqueeze(-1))  # [B, L]
    bos = torch.stack([cache[f"L{n}.pattern"][..., 0] for n in range(len(net.layers))])  # [layers, B, H, L]
    bos = bos[..., 1:]  # queries 1..L-1
    trig = at_trigger[:, 1:].unsqueeze(0).unsqueeze(2).expand_as(bos)
    return {
        "L": L, "batch": batch, "seed": seed, "dtype": str(dtype).replace("torch.", ""),
        "max_abs_error": float((out - batch_data.y).abs().max()),
        "max_bos_weight": float(bos.abs().max()),
        "min_bos_weight_off_trigger": float(bos[~trig].min()),
        "max_bos_weight_off_trigger": float(bos[~trig].max()),
        "max_bos_weight_at_trigger": float(bos[trig].max()),
    }
