"""The paper author's training step, re-implemented from its description for the speed comparison
(Ran-Milo's code, github.com/YuvMilo/sinks-are-provably-necessary, utils/models.py, utils/data.py,
utils/training.py; read, not copied). What makes their step cost what it costs is kept:

- the model: per layer one bias-free ``nn.Linear`` each for Q, K and V (d -> H*d, every head full
  width d) and one for O (H*d -> d), N(0, 0.02^2) weights; scores q k^T per head with no scaling,
  the causal mask built at every forward, ``masked_fill`` with the float minimum and softmax
  (ReLU: ``masked_fill`` 0, relu, divided by max(i, 1)); the residual stream for several layers;
- the data: an ``IterableDataset`` that builds one sequence at a time in Python (trigger drawn
  in 2..L-1, content U(-1, 1), flags, target), batched by a ``DataLoader`` (128, no workers);
- the step: ``MSELoss``, Adam (lr 1e-3 for one layer, 1e-4 for several, betas (0.9, 0.95), the
  default implementation), ``zero_grad(set_to_none=True)``, and two read-backs per step (the
  max-abs error for the stop rule and the loss for the progress bar; the bar itself is left out).

One seed per run: their loop trains the seeds one after another.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset


class SequenceStream(IterableDataset):
    """One task sequence at a time: x, y [L, d] (BOS flag 0, trigger flag 1, content flag d-1)."""

    def __init__(self, d: int, L: int, residual: bool):
        super().__init__()
        self.d, self.L, self.residual = d, L, residual

    def __iter__(self):
        d, L = self.d, self.L
        while True:
            j = torch.randint(2, L, ()).item()
            x = torch.zeros(L, d)
            x[0, 0] = 1.0
            x[1:, 2:-1] = torch.rand(L - 1, d - 3) * 2 - 1
            x[1:, -1] = 1.0
            x[j, 0], x[j, 1], x[j, -1] = 0.0, 1.0, 0.0
            mean = x[1:j + 1].mean(dim=0)
            y = x.clone() if self.residual else torch.zeros_like(x)
            y[j] = y[j] + mean
            yield x, y


class Layer(nn.Module):
    def __init__(self, d: int, heads: int, kind: str):
        super().__init__()
        self.d, self.heads, self.kind = d, heads, kind
        self.q, self.k, self.v = (nn.Linear(d, heads * d, bias=False) for _ in range(3))
        self.o = nn.Linear(heads * d, d, bias=False)
        for lin in (self.q, self.k, self.v, self.o):
            nn.init.normal_(lin.weight, mean=0.0, std=0.02)

    def forward(self, x):
        B, L, d = x.shape
        q = self.q(x).view(B, L, self.heads, d).transpose(1, 2)
        k = self.k(x).view(B, L, self.heads, d).transpose(1, 2)
        scores = q @ k.transpose(2, 3)
        future = torch.ones(L, L, dtype=torch.bool).triu(1)
        if self.kind == "softmax":
            a = scores.masked_fill(future, torch.finfo(scores.dtype).min).softmax(dim=-1)
        else:
            a = torch.relu(scores.masked_fill(future, 0.0))
            a = a / torch.arange(L, dtype=a.dtype).clamp_min(1).view(1, 1, L, 1)
        v = self.v(x).view(B, L, self.heads, d).transpose(1, 2)
        z = (a @ v).transpose(1, 2).contiguous().view(B, L, self.heads * d)
        return self.o(z)


class Stack(nn.Module):
    def __init__(self, d: int, layers: int, heads: int, kind: str):
        super().__init__()
        self.blocks = nn.ModuleList(Layer(d, heads, kind) for _ in range(layers))
        self.residual = layers > 1

    def forward(self, x):
        for block in self.blocks:
            x = block(x) + x if self.residual else block(x)
        return x


def step_fn(layers: int, heads: int, kind: str = "softmax", d: int = 16, L: int = 16, seed: int = 0):
    """One training step of the author's loop for one seed, as a function of no arguments."""
    torch.manual_seed(seed)
    net = Stack(d, layers, heads, kind)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3 if layers == 1 else 1e-4, betas=(0.9, 0.95))
    batches = iter(DataLoader(SequenceStream(d, L, layers > 1), batch_size=128, num_workers=0))
    loss_fn = nn.MSELoss()

    def step():
        x, y = next(batches)
        pred = net(x)
        loss = loss_fn(pred, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        worst = (pred - y).abs().max().item()
        return loss.item(), worst

    return step
