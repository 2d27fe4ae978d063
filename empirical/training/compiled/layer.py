"""The ``compiled`` formulation's layer: one autograd function around the compiled kernel
(``attend.cpp``), which runs the whole layer, forward and backward, sequence by sequence:

    forward:  (pattern, out) = layer(x, G^T, M^T)
    backward: (gx, gG^T, gM^T) = layer'(x, G^T, M^T, pattern, gout, the pattern's gradient)

G^T and M^T are ``AttentionLayer.maps()`` (products of W_Q, W_K, W_V, W_O, formed each step by
torch, so autograd carries their gradients to the parameters). It saves x and the pattern (the
backward recomputes y and z in registers), never materialises a zero gradient for an unused
pattern or output, and skips gx when the input needs no gradient (the first layer). An exact
rewriting: float64 equals the exact evaluator and ``bmm``'s autograd to ~1e-14
(``tests/test_compiled.py``); float32 differs from ``bmm`` in the order of roundings and in exp
(Cephes' polynomial, relative error ~1e-7, against torch's). Not twice differentiable.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable


class _CompiledLayer(torch.autograd.Function):
    """xs [S, B, L, d], Gt [S, d, H*d], Mt [S, H*d, d] -> out [S, B*L, d], pattern [S, B, L*H, L]."""

    @staticmethod
    def forward(ctx, xs, Gt, Mt, kernel, kind, residual):
        a, out = kernel.forward(kind, residual, xs, Gt, Mt)
        ctx.save_for_backward(xs, Gt, Mt, a)
        ctx.kernel, ctx.kind, ctx.residual = kernel, kind, residual
        ctx.set_materialize_grads(False)
        S, B, L, d = xs.shape
        return out.view(S, B * L, d), a

    @staticmethod
    @once_differentiable
    def backward(ctx, gout, gpat):
        xs, Gt, Mt, a = ctx.saved_tensors
        gout = None if gout is None else gout.contiguous().view(xs.shape)
        gpat = None if gpat is None else gpat.contiguous()
        gx, gGt, gMt = ctx.kernel.backward(ctx.kind, ctx.residual, xs, Gt, Mt, a, gout, gpat, ctx.needs_input_grad[0])
        return gx, gGt, gMt, None, None, None


def layer(kernel, kind: str, xs: torch.Tensor, Gt: torch.Tensor, Mt: torch.Tensor, residual: bool):
    """The layer's output [S, B*L, d] and pattern [S, B, L*H, L] (rows: query, head) for
    xs [S, B, L, d], with the kernel built for (L, d, xs.dtype) and ``kind`` in ``build.KINDS``."""
    return _CompiledLayer.apply(xs.contiguous(), Gt.contiguous(), Mt.contiguous(), kernel, kind, residual)
