"""The ensemble being trained, shrunk as its members stop.

``empirical.training.train`` trains the seeds of a run as one ensemble model (a leading member dimension
on every parameter). A member that meets the stop rule must never move again; rather than keep
computing it with its loss masked out, ``Ensemble.drop`` removes it from the computation: its
final weights are written into ``store`` (the full-size model, one slot per seed, which is what
gets evaluated), and training continues on a smaller working model holding only the members
still training, with their Adam moments and step counts carried over unchanged. Members do not
interact (own data, own loss term, elementwise Adam; on the CPU a member's numbers are bit for
bit those of a single run of its seed, ``tests/test_training_part.py``), so dropping the others
changes nothing for them; it only saves their share of every later step.
"""

from __future__ import annotations

from typing import Any


class Ensemble:
    def __init__(self, store, config: Any, make_optimizer):
        self.store = store  # every member; stopped members' weights are final here
        self.model = store  # the members still training
        self.config = config
        self.make_optimizer = make_optimizer
        self.opt = make_optimizer(store, config)
        self.live = list(range(len(config.seeds)))  # store index of each working-model member

    def write_back(self) -> None:
        """Copy the training members' current weights into their slots of ``store``."""
        import torch

        if self.model is self.store or not self.live:
            return
        idx = torch.tensor(self.live, dtype=torch.long, device=next(self.store.parameters()).device)
        with torch.no_grad():
            for full, part in zip(self.store.parameters(), self.model.parameters()):
                full.index_copy_(0, idx, part.detach())

    def drop(self, members: list[int]) -> None:
        """Stop ``members`` (store indices): keep their weights, train only the others."""
        import torch

        from empirical.training.model import AttentionModel

        self.write_back()
        keep = [i for i, m in enumerate(self.live) if m not in set(members)]
        self.live = [self.live[i] for i in keep]
        if not keep:
            return
        c = self.config
        device = next(self.store.parameters()).device
        smaller = AttentionModel(c.kind, c.d, layers=c.layers, heads=c.heads, residual=c.residual,
                                 ensemble=len(keep), seeds=[c.seeds[m] for m in self.live], device=device)
        opt = self.make_optimizer(smaller, c)
        idx = torch.tensor(keep, dtype=torch.long, device=device)
        with torch.no_grad():
            for old, new in zip(self.model.parameters(), smaller.parameters()):
                new.copy_(old.detach().index_select(0, idx))
                state = self.opt.state.get(old)
                if state:
                    opt.state[new] = {k: (v.index_select(0, idx).clone() if torch.is_tensor(v) and v.dim() > 0
                                          else (v.clone() if torch.is_tensor(v) else v))
                                      for k, v in state.items()}
        self.model, self.opt = smaller, opt
