"""The torch models of constructions/SPEC.md section 2, readable in one sitting.

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

How a layer is computed (the same function, arranged so that every product is one batched
matrix product on contiguous memory, with no permute copies; measured in
tests/benchmarks/test_bench_train.py). A head's score is a bilinear form and its output a
linear map of the attended inputs:

    s_ik = (W_Q x_i) . (W_K x_k) = (G x_i) . x_k          G = W_K^T W_Q      [d, d] per head
    out_i = sum_h W_O^h W_V^h sum_k a_ik x_k = sum_h M_h z_i^h,   M_h = W_O^h W_V^h

so per layer: y = x G^T for all heads at once ([S, B*L, d] x [S, d, H*d]), scores = y x^T per
sequence ([S*B, L*H, d] x [S*B, d, L], laid out [S, B, L(query), H, L(key)], with the causal
-inf bias added inside the product by ``baddbmm``), the kind's weights on that layout (keys on
the last dim, the mask broadcast as [L, 1, L], told the scores are already hidden), z = a x per sequence,
and out = z M^T ([S, B*L, H*d] x [S, H*d, d]). The parameters stay W_Q, W_K, W_V, W_O;
G and M are d x d products formed each step, so gradients reach the same parameters.
That is the ``bmm`` formulation; ``empirical.training.formulations`` holds it and other exact rewritings
of the same products (per-head blocks, values first, ...) and picks the fastest for the host
(``forward(x, formulation=name)`` runs a given one).
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from constructions import attention, reference
from constructions.errors import BadInput
from empirical.training import formulations

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
        """Extra kind parameters shaped to broadcast against scores [S, B, L, H, L]
        (``x`` is [S, B, L, d] with the ensemble flattened to S)."""
        out = {}
        for p in self.kind.params:
            w = self.extras[p.name].reshape(-1, self.heads, *((self.d,) if p.shape == "vector" else ()))
            if p.shape == "vector":  # the query's projection w . x_i: [S, B, L, H, 1]
                S, B, L, d = x.shape
                proj = torch.bmm(x.reshape(S, B * L, d), w.transpose(1, 2))  # [S, B*L, H]
                out[p.name] = proj.reshape(S, B, L, self.heads, 1)
            else:  # [S, 1, 1, H, 1]
                out[p.name] = w.reshape(-1, 1, 1, self.heads, 1)
        return out

    def maps(self) -> tuple[torch.Tensor, torch.Tensor]:
        """G^T = (W_K^T W_Q)^T per head as [S, d, H*d] and M^T = (W_O^h W_V^h)^T as [S, H*d, d]."""
        d, H = self.d, self.heads
        W_Q, W_K, W_V = (W.reshape(-1, H, d, d) for W in (self.W_Q, self.W_K, self.W_V))
        S = W_Q.shape[0]
        G = W_K.transpose(-1, -2) @ W_Q  # [S, H, d, d]: y_i^h = G_h x_i
        M = self.W_O.reshape(S, d, H, d).transpose(1, 2) @ W_V  # [S, H, d, d]: W_O^h W_V^h
        return G.reshape(S, H * d, d).transpose(1, 2), M.transpose(-1, -2).reshape(S, H * d, d)

    _maps = maps  # the name before the formulations module

    def forward(self, x: torch.Tensor, residual: bool = False,
                formulation: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's output (``x`` + output with ``residual``, added inside the last product)
        and its pattern [*E, B, H, L, L]; ``formulation``: one of ``empirical.training.formulations``
        (default: the one chosen for this host)."""
        E = self.W_Q.shape[:-3]  # () or (S,)
        if E and x.dim() == 3:  # one batch for every member
            x = x.expand(*E, *x.shape)
        B, L, d = x.shape[-3:]
        form = formulations.get(formulation or formulations.current())
        out, pattern = form.layer(self, x.reshape(-1, B, L, d), residual)  # [S, B*L, d], [S, B, H, L, L]
        return out.view(*E, B, L, d), pattern if E else pattern[0]


_causal_mask = formulations.causal_mask  # the names before the formulations module
_causal_bias = formulations.causal_bias


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

    def forward(self, x: torch.Tensor, formulation: str | None = None) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Returns the output [*E, B, L, d] and a cache with "L{l}.input" and "L{l}.pattern"
        (``formulation``: see ``AttentionLayer.forward``)."""
        cache = {}
        for n, layer in enumerate(self.layers):
            cache[f"L{n}.input"] = x
            x, cache[f"L{n}.pattern"] = layer(x, residual=self.residual, formulation=formulation)
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
