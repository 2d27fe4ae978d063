"""The torch models of SPEC section 2, readable in one sitting.

One class covers both models: ``AttentionModel(kind, d, layers=1, heads=1, residual=False)`` is
the single-layer single-head model; ``layers=N, heads=H, residual=True`` is the multi-layer
residual model. Attention only: no MLP, LayerNorm, biases, positional encoding or 1/sqrt(d).

``ensemble=S`` gives every parameter a leading dimension of S independent models (one per
seed), so several seeds train in one batched computation. Shapes (``*E`` is ``(S,)`` or ``()``):

    x          [*E, B, L, d]   (or [B, L, d], broadcast to every member)
    W_Q/K/V    [*E, H, d, d]   per layer
    W_O        [*E, d, H*d]    per layer
    pattern    [*E, B, H, L, L]  (query x key), cached as "L{l}.pattern"

The attention weights come from ``constructions.attention`` (the same registry the exact
evaluator uses); a test holds this model equal to ``constructions.reference.forward``.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from constructions import attention, reference
from constructions.errors import BadInput

INIT_STD = 0.02


class AttentionLayer(nn.Module):
    def __init__(self, kind: attention.AttentionKind, d: int, heads: int, ensemble: tuple[int, ...]):
        super().__init__()
        self.kind, self.d, self.heads = kind, d, heads
        E = ensemble
        self.W_Q = nn.Parameter(torch.empty(*E, heads, d, d))
        self.W_K = nn.Parameter(torch.empty(*E, heads, d, d))
        self.W_V = nn.Parameter(torch.empty(*E, heads, d, d))
        self.W_O = nn.Parameter(torch.empty(*E, d, heads * d))
        self.extras = nn.ParameterDict({
            p.name: nn.Parameter(torch.empty(*E, heads, *((d,) if p.shape == "vector" else ())))
            for p in kind.params
        })

    def kind_extras(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Extra kind parameters shaped to broadcast against scores [*E, B, H, L, L]."""
        out = {}
        for p in self.kind.params:
            w = self.extras[p.name]
            if p.shape == "vector":  # the query's projection w . x_i: [*E, B, H, L, 1]
                out[p.name] = torch.einsum("...hd,...bld->...bhl", w, x).unsqueeze(-1)
            else:  # [*E, 1, H, 1, 1]
                out[p.name] = w.unsqueeze(-2).unsqueeze(-1).unsqueeze(-1)
        return out

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        L = x.shape[-2]
        q = torch.einsum("...hed,...bld->...bhle", self.W_Q, x)  # [*E, B, H, L, d]
        k = torch.einsum("...hed,...bld->...bhle", self.W_K, x)  # [*E, B, H, L, d]
        v = torch.einsum("...hed,...bld->...bhle", self.W_V, x)  # [*E, B, H, L, d]
        scores = q @ k.transpose(-1, -2)  # [*E, B, H, L, L]
        mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()  # key <= query
        pattern = self.kind.torch(scores, mask, self.kind_extras(x))  # [*E, B, H, L, L]
        z = (pattern @ v).movedim(-3, -2).flatten(-2)  # [*E, B, L, H*d], heads concatenated
        out = torch.einsum("...oc,...blc->...blo", self.W_O, z)  # [*E, B, L, d]
        return out, pattern


class AttentionModel(nn.Module):
    def __init__(
        self,
        kind: str,
        d: int,
        layers: int = 1,
        heads: int = 1,
        residual: bool = False,
        ensemble: int | None = None,
        seeds: Sequence[int] | int = 0,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
    ):
        super().__init__()
        if layers < 1 or heads < 1:
            raise BadInput(f"a model needs layers >= 1 and heads >= 1, got layers={layers}, heads={heads}")
        self.kind = attention.get(kind)
        self.d, self.n_layers, self.n_heads, self.residual = d, layers, heads, residual
        self.ensemble = ensemble
        E = () if ensemble is None else (ensemble,)
        self.layers = nn.ModuleList(AttentionLayer(self.kind, d, heads, E) for _ in range(layers))
        seeds = [seeds] if isinstance(seeds, int) else list(seeds)
        if len(seeds) != (ensemble or 1):
            raise BadInput(f"need one seed per ensemble member ({ensemble or 1}), got {len(seeds)}")
        self.reset_parameters(seeds)
        self.to(device=device, dtype=dtype)

    @torch.no_grad()
    def reset_parameters(self, seeds: Sequence[int]) -> None:
        """N(0, 0.02^2) weights, extra kind parameters at their ``init``.

        Member m draws from its own generator seeded with ``seeds[m]`` in a fixed parameter
        order, so a member's initial weights do not depend on the ensemble's size.
        """
        members = [self] if self.ensemble is None else range(self.ensemble)
        for m, seed in zip(range(len(members)), seeds):
            gen = torch.Generator().manual_seed(seed)
            for layer in self.layers:
                for W in (layer.W_Q, layer.W_K, layer.W_V, layer.W_O):
                    target = W if self.ensemble is None else W[m]
                    target.copy_(torch.randn(target.shape, generator=gen) * INIT_STD)
                for p in self.kind.params:
                    target = layer.extras[p.name] if self.ensemble is None else layer.extras[p.name][m]
                    target.fill_(p.init)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Returns the output [*E, B, L, d] and a cache with "L{l}.input" and "L{l}.pattern"."""
        cache = {}
        for n, layer in enumerate(self.layers):
            cache[f"L{n}.input"] = x
            out, cache[f"L{n}.pattern"] = layer(x)
            x = x + out if self.residual else out
        return x, cache


# ----------------------------------------------------------------------------------------
# Exact networks <-> torch models.


def from_network(net: reference.Network, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float64) -> AttentionModel:
    """Load an exact ``reference.Network`` (fractions, sympy numbers, floats) into a torch model."""
    first = net.layers[0]
    model = AttentionModel(net.kind, net.d, layers=len(net.layers), heads=first.heads,
                           residual=net.residual, device=device, dtype=dtype)

    def t(m):
        return torch.tensor([[float(v) for v in row] for row in m], dtype=dtype, device=device)

    with torch.no_grad():
        for layer, src in zip(model.layers, net.layers):
            if src.heads != first.heads:
                raise BadInput("every layer of a torch model has the same number of heads")
            for name in ("W_Q", "W_K", "W_V"):
                getattr(layer, name).copy_(torch.stack([t(m) for m in getattr(src, name)]))
            layer.W_O.copy_(t(src.W_O))
            for p in model.kind.params:
                values = [src.head_extras(h)[p.name] for h in range(src.heads)]
                layer.extras[p.name].copy_(
                    torch.tensor([[float(v) for v in w] if p.shape == "vector" else float(w) for w in values],
                                 dtype=dtype, device=device))
    return model


def to_network(model: AttentionModel, member: int | None = None) -> reference.Network:
    """The float weights of a torch model (one ensemble member) as a ``reference.Network``."""
    def pick(W: torch.Tensor) -> torch.Tensor:
        W = W.detach()
        return W if member is None else W[member]

    def rows(W: torch.Tensor) -> reference.Matrix:
        return tuple(tuple(float(v) for v in r) for r in W.detach().cpu().tolist())

    layers = []
    for layer in model.layers:
        extras = tuple(
            {p.name: (tuple(pick(layer.extras[p.name])[h].tolist()) if p.shape == "vector"
                      else float(pick(layer.extras[p.name])[h])) for p in model.kind.params}
            for h in range(model.n_heads)
        ) if model.kind.params else ()
        layers.append(reference.Layer(
            tuple(rows(pick(layer.W_Q)[h]) for h in range(model.n_heads)),
            tuple(rows(pick(layer.W_K)[h]) for h in range(model.n_heads)),
            tuple(rows(pick(layer.W_V)[h]) for h in range(model.n_heads)),
            rows(pick(layer.W_O)),
            extras,
        ))
    return reference.Network(model.kind.name, tuple(layers), model.residual)
