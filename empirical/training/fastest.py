"""Measure the formulations of ``empirical.training.formulations`` on this host and keep the fastest.

``choose_for_host(device)`` is what training calls before its first step: the formulation named
by ``$SINKS_FORMULATION``, else the one cached for this host, else a measurement now (about 3 s
of one core: ``measure``), whose choice (``formulations.choose``: bmm unless another is at least
15 % faster) is cached for the next process. On a GPU nothing is measured and ``bmm`` runs
(the measurement times the CPU). Either way the name is exported to ``$SINKS_FORMULATION``, so
the worker processes of a sweep all use the parent's choice.
"""

from __future__ import annotations

import time

import torch

from empirical.training import formulations

ROUNDS = 6


def choose_for_host(device: str = "cpu") -> tuple[str, str]:
    """(formulation, how it was chosen) for training on ``device`` in this process."""
    name, how = formulations.resolve()
    if how != "default" or not str(device).startswith("cpu"):
        return name, how
    name = formulations.choose(measure())
    formulations.store(name)
    formulations.use(name, "measured")
    return name, "measured"


def measure(names: list[str] | None = None, rounds: int = ROUNDS, layers: int = 4, heads: int = 4,
            members: int = 5, batch: int = 128, steps: int = 2) -> dict[str, float]:
    """Process CPU seconds of one float32 forward + backward of a ``layers`` x ``heads``,
    ``members``-member model on ``batch`` sequences of the reference shape, per formulation
    (automatic ones by default): interleaved rounds, each one's fastest."""
    from empirical.training.model import AttentionModel

    names = names or [n for n, f in formulations.FORMULATIONS.items() if f.automatic]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = AttentionModel("softmax", 16, layers=layers, heads=heads, residual=layers > 1,
                               ensemble=members, seeds=list(range(members)))
        x = torch.randn(members, batch, 16, 16, generator=torch.Generator().manual_seed(0))
        best = {n: float("inf") for n in names}
        for r in range(rounds + 1):  # round 0 warms up
            for n in names:
                start = time.process_time()
                for _ in range(steps):
                    out, _ = model.forward(x, formulation=n)
                    out.pow(2).sum().backward()
                if r:
                    best[n] = min(best[n], (time.process_time() - start) / steps)
        return best
    finally:
        torch.set_num_threads(threads)
