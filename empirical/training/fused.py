"""The ``fused`` formulation of a layer's products: one autograd function per layer, block by block.

``empirical.training.formulations`` describes the products (s = y x^T with y = x G^T, a = kind(s),
z = a x, out = z M^T). ``bmm`` runs each product once over the whole ensemble batch
([S*B, L*H, d] tensors, 2.6 MB each at the 4 x 4, 5-member reference shape) and lets autograd
run the backward. Here one ``torch.autograd.Function`` runs the layer one block of members at
a time (``members_per_block``: one member at 4 x 4, whose [128, 64, 16] scores, pattern, y and
z take 0.5 MB each), forward and backward, so that a block's tensors are still in the core's
cache when the next product reads them, and the backward is written by hand:

    forward, per block:  y = x G^T;  s = y x^T + bias (0 / -inf);  a = kind(s), in place;
                         z = a x;  out = x + z M^T (residual) or z M^T
    backward, per block: gz = g M;  gM^T = z^T g;  ga = gz x^T (+ the pattern's gradient);
                         gx += a^T gz;  gs = kind'(ga);  gy = gs x;  gx += gs^T y + gy G;
                         gG^T = x^T gy

It saves x, a and z, recomputes a block's y in the backward (one small product, cheaper than
writing y out and reading it back), allocates the block buffers once per call, skips gx when
the input needs no gradient (the first layer), and never materialises a zero gradient for an
unused pattern (``set_materialize_grads(False)``). The kinds it writes out are ``KINDS``
(softmax and ReLU, the kinds of the six reference settings); a layer of any other kind, or
one whose member's pattern does not fill a block (``pays``), runs ``bmm``. Their weights are
the kinds' own torch forms (``constructions.attention``), in place: softmax over the keys,
ReLU divided by max(i, 1); their derivatives:

    softmax: gs = a * (ga - sum_k ga a)        (torch's own softmax backward kernel)
    ReLU:    gs = ga / max(i, 1) where a > 0, else 0   (torch's threshold_backward, as autograd)

(``a > 0`` exactly where the score is > 0, except for a score within a denormal of the kink,
where the subgradient 0 is taken.) It is an exact rewriting: float64 equals the exact evaluator
and autograd of ``bmm`` (``tests/test_formulations.py``, ``tests/test_fused.py``: values,
gradients, ``gradcheck``, the pattern's gradient); float32 differs from ``bmm`` only in the
order of roundings. Not twice differentiable (``once_differentiable``).
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

BLOCK = 128 * 64 * 16  # pattern elements per block: one member's at 4 x 4 (0.5 MB float32; a 2 MB L2 holds its tensors)


def _softmax(s, div):
    torch.softmax(s, -1, out=s)


def _softmax_grad(ga, a, div):
    return torch._softmax_backward_data(ga, a, -1, a.dtype)


def _relu(s, div):
    s.relu_().div_(div)  # relu(-inf) = 0 at the hidden keys


def _relu_grad(ga, a, div):
    return torch.ops.aten.threshold_backward(ga.div_(div), a, 0)  # autograd's relu backward


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


def members_per_block(S: int, B: int, LH: int, L: int) -> int:
    """As many members as keep a block's pattern within ``BLOCK`` elements (at least one), spread
    evenly over the blocks (1 at the 4 x 4 reference shape)."""
    k = max(1, BLOCK // (B * LH * L))
    return -(-S // -(-S // k))


def pays(B: int, LH: int, L: int) -> bool:
    """Whether one member's pattern fills a block (4 x 4 at the reference batch: yes; 2 x 2, 1 x 1:
    no). Below that the whole batch already fits the cache, and bmm, whose backward runs in C++,
    was as fast or faster (2 x 2 0.97-1.0x, 1 x 1 0.91-0.95x bmm's steps/s, paired rounds)."""
    return B * LH * L >= BLOCK


class _Layer(torch.autograd.Function):
    """xs [S, B, L, d], Gt [S, d, H*d], Mt [S, H*d, d], bias [L*H, L], div [L*H, 1] ->
    out [S, B*L, d], pattern [S, B, L*H, L] (rows: query, head). Block by block of k members;
    every block's views of a tensor come from one ``split`` (a view costs about as much as a
    small product does)."""

    @staticmethod
    def forward(ctx, xs, Gt, Mt, bias, div, kind, residual):
        S, B, L, d = xs.shape
        LH, Hd = bias.shape[0], Gt.shape[2]
        k = members_per_block(S, B, LH, L)
        weights = KINDS[kind][0]
        Z, yk = xs.new_empty(S, B * L, Hd), xs.new_empty(k, B * L, Hd)  # y: one block's, recomputed backward
        a, out = xs.new_empty(S, B, LH, L), xs.new_empty(S, B * L, d)
        rows = xs.view(S * B, L, d)
        blocks = zip(xs.view(S, B * L, d).split(k), rows.split(k * B), rows.transpose(1, 2).split(k * B),
                     a.view(S * B, LH, L).split(k * B), Z.split(k), Z.view(S * B, LH, d).split(k * B),
                     out.split(k), Gt.split(k), Mt.split(k))
        for x, x3, x3t, s, z, z3, o, G, M in blocks:  # x [k, B*L, d], x3 [k*B, L, d], ...
            n = x.shape[0]
            y = yk if n == k else yk[:n]
            y3 = y.view(n * B, LH, d)
            torch.bmm(x, G, out=y)
            torch.bmm(y3, x3t, out=s)
            weights(s.add_(bias), div)
            torch.bmm(s, x3, out=z3)
            if residual:
                torch.baddbmm(x, z, M, out=o)
            else:
                torch.bmm(z, M, out=o)
        ctx.save_for_backward(xs, Gt, Mt, div, a, Z)
        ctx.kind, ctx.residual, ctx.k = kind, residual, k
        ctx.set_materialize_grads(False)
        return out, a

    @staticmethod
    @once_differentiable
    def backward(ctx, gout, gpat):
        xs, Gt, Mt, div, a, Z = ctx.saved_tensors
        S, B, L, d = xs.shape
        LH, Hd, k = a.shape[2], Gt.shape[2], ctx.k
        grad = KINDS[ctx.kind][1]
        want_x = ctx.needs_input_grad[0]
        unused_out = gout is None  # the loss reads only the pattern: M gets no gradient, as under autograd
        gout = xs.new_zeros(S, B * L, d) if unused_out else gout.contiguous()
        gz, gy, ga = xs.new_empty(k, B * L, Hd), xs.new_empty(k, B * L, Hd), xs.new_empty(k * B, LH, L)
        gGt, gMt = torch.empty_like(Gt), torch.empty_like(Mt)
        x2, rows = xs.view(S, B * L, d), xs.view(S * B, L, d)
        pats = gpat.reshape(S * B, LH, L).split(k * B) if gpat is not None else None
        if want_x:
            gx = gout.clone() if ctx.residual else torch.zeros_like(gout)
            yk = xs.new_empty(k, B * L, Hd)
            gxs = zip(gx.split(k), gx.view(S * B, L, d).split(k * B), a.view(S * B, LH, L).transpose(1, 2).split(k * B),
                      Gt.split(k), Gt.transpose(1, 2).split(k))
        blocks = zip(gout.split(k), x2.split(k), rows.split(k * B), rows.transpose(1, 2).split(k * B),
                     x2.transpose(1, 2).split(k), a.view(S * B, LH, L).split(k * B), Z.transpose(1, 2).split(k),
                     Mt.transpose(1, 2).split(k), gGt.split(k), gMt.split(k))
        for j, (g, x, x3, x3t, xt, am, zt, Ms, gG, gM) in enumerate(blocks):
            n = g.shape[0]
            gz_, gy_, ga_ = (gz, gy, ga) if n == k else (gz[:n], gy[:n], ga[:n * B])
            gz3, gy3 = gz_.view(n * B, LH, d), gy_.view(n * B, LH, d)
            torch.bmm(g, Ms, out=gz_)
            torch.bmm(zt, g, out=gM)
            torch.bmm(gz3, x3t, out=ga_)
            if pats is not None:
                ga_.add_(pats[j])
            gs = grad(ga_, am, div)
            torch.bmm(gs, x3, out=gy3)
            torch.bmm(xt, gy_, out=gG)
            if want_x:
                gx2, gx3, at, G, Gs = next(gxs)
                y = yk if n == k else yk[:n]
                torch.bmm(x, G, out=y)  # y = x G^T again: cheaper than keeping it from the forward
                gx3.baddbmm_(at, gz3).baddbmm_(gs.transpose(1, 2), y.view(n * B, LH, d))
                gx2.baddbmm_(gy_, Gs)
        return (gx.view(S, B, L, d) if want_x else None), gGt, None if unused_out else gMt, None, None, None, None


def layer(kind: str, xs: torch.Tensor, Gt: torch.Tensor, Mt: torch.Tensor, bias: torch.Tensor, residual: bool):
    """The layer's output [S, B*L, d] and pattern [S, B, L, H, L]-ordered as [S, B, L*H, L]
    for xs [S, B, L, d] (``kind`` in ``KINDS``; bias: ``formulations.causal_bias``'s rows)."""
    S, B, L, d = xs.shape
    H = bias.shape[0] // L
    return _Layer.apply(xs.contiguous(), Gt, Mt, bias, divisor(L, H, xs), kind, residual)
