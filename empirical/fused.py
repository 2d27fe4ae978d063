"""The ``fused`` formulation of a layer's products: one autograd function per layer, block by block.

``empirical.formulations`` describes the products (s = y x^T with y = x G^T, a = kind(s),
z = a x, out = z M^T). ``bmm`` runs each product once over the whole ensemble batch
([S*B, L*H, d] tensors, 2.6 MB each at the 4 x 4, 5-member reference shape) and lets autograd
run the backward. Here one ``torch.autograd.Function`` runs the layer one block of at most
``BLOCK`` sequences of one member at a time (the member's G and M as plain matrix products),
forward and backward, so that a block's scores, pattern, y and z (0.5 MB each) are still in the
core's cache when the next product reads them, and the backward is written by hand:

    forward, per block:  y = x G^T;  s = y x^T + bias (0 / -inf);  a = kind(s), in place;
                         z = a x;  out = x + z M^T (residual) or z M^T
    backward, per block: gz = g M;  gM^T += z^T g;  ga = gz x^T (+ the pattern's gradient);
                         gx += a^T gz;  gs = kind'(ga);  gy = gs x;  gx += gs^T y + gy G;
                         gG^T += x^T gy

It saves x, a, y and z (no recomputation), allocates the block buffers of the backward once per
call, skips gx when the input needs no gradient (the first layer), and never materialises a
zero gradient for an unused pattern (``set_materialize_grads(False)``). The kinds it writes out
are ``KINDS`` (softmax and ReLU, the kinds of the six reference settings); a layer of any other
kind runs ``bmm``. Their weights are the kinds' own torch forms (``constructions.attention``),
in place: softmax over the keys, ReLU divided by max(i, 1); their derivatives:

    softmax: gs = a * (ga - sum_k ga a)        (torch's own softmax backward kernel)
    ReLU:    gs = ga / max(i, 1) where a > 0, else 0

(``a > 0`` exactly where the score is > 0, except for a score within a denormal of the kink,
where the subgradient 0 is taken.) It is an exact rewriting: float64 equals the exact evaluator
and autograd of ``bmm`` (``tests/test_formulations.py``, ``tests/test_fused.py``: values,
gradients, ``gradcheck``, the pattern's gradient); float32 differs from ``bmm`` only in the
order of roundings. Not twice differentiable (``once_differentiable``).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable


def _softmax(s, div):
    torch.softmax(s, -1, out=s)


def _softmax_grad(ga, a, div):
    return torch._softmax_backward_data(ga, a, -1, a.dtype)


def _relu(s, div):
    s.relu_().div_(div)  # relu(-inf) = 0 at the hidden keys


def _relu_grad(ga, a, div):
    return ga.div_(div).masked_fill_(a <= 0, 0.0)


KINDS = {"softmax": (_softmax, _softmax_grad), "relu": (_relu, _relu_grad)}

_DIVISORS: dict[tuple, torch.Tensor] = {}


def supports(kind: str) -> bool:
    return kind in KINDS


def divisor(L: int, H: int, like: torch.Tensor) -> torch.Tensor:
    """max(i, 1) per row (query i, head h) of the [L*H, L] score rows, as [L*H, 1] (built once)."""
    key = (L, H, str(like.device), like.dtype)
    if key not in _DIVISORS:
        i = torch.arange(L, device=like.device).clamp(min=1).to(like.dtype)
        _DIVISORS[key] = i.repeat_interleave(H).view(L * H, 1)
    return _DIVISORS[key]


class _Layer(torch.autograd.Function):
    """xs [S, B, L, d], Gt [S, d, H*d], Mt [S, H*d, d], bias [L*H, L], div [L*H, 1] ->
    out [S, B*L, d], pattern [S, B, L*H, L] (rows: query, head). Member by member; every
    per-member view comes from one ``unbind`` (a view costs as much as a small product)."""

    @staticmethod
    def forward(ctx, xs, Gt, Mt, bias, div, kind, residual):
        S, B, L, d = xs.shape
        LH, Hd = bias.shape[0], Gt.shape[2]
        weights = KINDS[kind][0]
        Y, Z = xs.new_empty(S, B * L, Hd), xs.new_empty(S, B * L, Hd)
        a, out = xs.new_empty(S, B, LH, L), xs.new_empty(S, B * L, d)
        x2, x3, x3t = xs.view(S, B * L, d).unbind(0), xs.unbind(0), xs.transpose(2, 3).unbind(0)
        y3, z3 = Y.view(S, B, LH, d).unbind(0), Z.view(S, B, LH, d).unbind(0)
        for m, (x, y, s, z, o, G, M) in enumerate(zip(x2, Y.unbind(0), a.unbind(0), Z.unbind(0), out.unbind(0),
                                                       Gt.unbind(0), Mt.unbind(0))):
            torch.mm(x, G, out=y)
            torch.bmm(y3[m], x3t[m], out=s)
            weights(s.add_(bias), div)
            torch.bmm(s, x3[m], out=z3[m])
            if residual:
                torch.addmm(x, z, M, out=o)
            else:
                torch.mm(z, M, out=o)
        ctx.save_for_backward(xs, Gt, Mt, div, a, Y, Z)
        ctx.kind, ctx.residual = kind, residual
        ctx.set_materialize_grads(False)
        return out, a

    @staticmethod
    @once_differentiable
    def backward(ctx, gout, gpat):
        xs, Gt, Mt, div, a, Y, Z = ctx.saved_tensors
        S, B, L, d = xs.shape
        LH, Hd = a.shape[2], Gt.shape[2]
        grad = KINDS[ctx.kind][1]
        want_x = ctx.needs_input_grad[0]
        unused_out = gout is None  # the loss reads only the pattern: M gets no gradient, as under autograd
        gout = xs.new_zeros(S, B * L, d) if unused_out else gout.contiguous()
        gz, gy, ga = xs.new_empty(B * L, Hd), xs.new_empty(B * L, Hd), xs.new_empty(B, LH, L)
        gz3, gy3 = gz.view(B, LH, d), gy.view(B, LH, d)
        gGt, gMt = torch.empty_like(Gt), torch.empty_like(Mt)
        x2 = xs.view(S, B * L, d)
        x3, x3t, x2t = xs.unbind(0), xs.transpose(2, 3).unbind(0), x2.transpose(1, 2).unbind(0)
        gpats = gpat.unbind(0) if gpat is not None else None
        if want_x:
            gx = gout.clone() if ctx.residual else torch.zeros_like(gout)
            gx2, gx3 = gx.unbind(0), gx.view(S, B, L, d).unbind(0)
            at, y3, Gs = a.transpose(2, 3).unbind(0), Y.view(S, B, LH, d).unbind(0), Gt.transpose(1, 2).unbind(0)
        for m, (g, am, zt, Mt_, gG, gM) in enumerate(zip(gout.unbind(0), a.unbind(0), Z.transpose(1, 2).unbind(0),
                                                          Mt.transpose(1, 2).unbind(0), gGt.unbind(0), gMt.unbind(0))):
            torch.mm(g, Mt_, out=gz)
            torch.mm(zt, g, out=gM)
            torch.bmm(gz3, x3t[m], out=ga)
            if gpats is not None:
                ga.add_(gpats[m])
            gs = grad(ga, am, div)
            torch.bmm(gs, x3[m], out=gy3)
            torch.mm(x2t[m], gy, out=gG)
            if want_x:
                gx3[m].baddbmm_(at[m], gz3).baddbmm_(gs.transpose(1, 2), y3[m])
                gx2[m].addmm_(gy, Gs[m])
        return (gx.view(S, B, L, d) if want_x else None), gGt, None if unused_out else gMt, None, None, None, None


def layer(kind: str, xs: torch.Tensor, Gt: torch.Tensor, Mt: torch.Tensor, bias: torch.Tensor, residual: bool):
    """The layer's output [S, B*L, d] and pattern [S, B, L, H, L]-ordered as [S, B, L*H, L]
    for xs [S, B, L, d] (``kind`` in ``KINDS``; bias: ``formulations.causal_bias``'s rows)."""
    S, B, L, d = xs.shape
    H = bias.shape[0] // L
    return _Layer.apply(xs.contiguous(), Gt, Mt, bias, divisor(L, H, xs), kind, residual)
