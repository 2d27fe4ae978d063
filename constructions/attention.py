"""Attention kinds as data: one registry used by the exact evaluator, the z3 encodings and the
torch model.

A kind maps one query's scores over the keys it sees to attention weights. It has two forms
that must agree (a test holds them equal):

- ``exact(scores, i, ops, extras)``: scalar form on a Python list ``scores[0..i]`` for query
  ``i``, over a numeric backend ``ops`` (fractions, sympy, z3, floats, mpmath, Arb balls). A backend that
  cannot represent an operation raises ``NotExpressible``; nothing is approximated silently.
- ``torch(scores, mask, extras)``: batched form on ``scores`` whose last dimension is the keys
  (e.g. [..., H, L, L], queries x keys, or the model's [..., L, H, L]) with a causal ``mask``
  that broadcasts against them (True where key <= query; [L, L], or [L, 1, L] for the model's
  layout). Nothing else about the layout is assumed: a query's position is read off the mask.
  ``torch(scores, mask, extras, hidden=True)`` says the caller has already put -inf at every key
  a query does not see (the model adds the causal bias inside its scores product, where it is
  free); every built-in kind maps a -inf score to weight 0, so it then skips its own masking
  pass. Callers go through ``kind.weights_torch``, which hands a form without the ``hidden``
  parameter (a plug-in's) the plain contract instead: scores [..., L, L], mask [L, L], finite.

``params`` lists extra per-head parameters a kind needs beyond W_Q, W_K, W_V, W_O:
a ``"scalar"`` (one number per head, e.g. a sink logit) or a ``"vector"`` (a d-vector w per
head; the kind receives the query's projection ``w . x_i``, e.g. a gate). Adding a kind is one
``register(AttentionKind(...))`` call; a kind from another package is found by ``get`` through
an entry point or an import path (``constructions.plugins``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .errors import BadInput, NotExpressible
from .numbers import exact_div


# ----------------------------------------------------------------------------------------
# Numeric backends for the exact evaluator.


def _not_expressible(backend: str, op: str) -> Callable[[Any], Any]:
    def fail(_x: Any) -> Any:
        raise NotExpressible(f"{op} is not expressible in the {backend} backend")

    return fail


@dataclass(frozen=True)
class Ops:
    """Scalar operations of one numeric backend."""

    name: str
    zero: Any
    one: Any
    exp: Callable[[Any], Any]
    relu: Callable[[Any], Any]
    sigmoid: Callable[[Any], Any]


def _fraction_ops() -> Ops:
    from fractions import Fraction

    return Ops(
        "fraction", Fraction(0), Fraction(1),
        exp=_not_expressible("fraction", "exp"),
        relu=lambda x: x if x > 0 else Fraction(0),
        sigmoid=_not_expressible("fraction", "sigmoid"),
    )


def _sympy_ops() -> Ops:
    import sympy

    return Ops(
        "sympy", sympy.Integer(0), sympy.Integer(1),
        exp=sympy.exp,
        relu=lambda x: sympy.Max(0, x),
        sigmoid=lambda x: 1 / (1 + sympy.exp(-x)),
    )


def _z3_ops() -> Ops:
    import z3

    return Ops(
        "z3", z3.RealVal(0), z3.RealVal(1),
        exp=_not_expressible("z3", "exp"),
        relu=lambda x: z3.If(x > 0, x, z3.RealVal(0)),
        sigmoid=_not_expressible("z3", "sigmoid"),
    )


def _float_ops() -> Ops:
    return Ops(
        "float", 0.0, 1.0,
        exp=math.exp,
        relu=lambda x: x if x > 0 else 0.0,
        sigmoid=lambda x: 1.0 / (1.0 + math.exp(-x)),
    )


def _mpmath_ops() -> Ops:
    import mpmath

    return Ops(
        "mpmath", mpmath.mpf(0), mpmath.mpf(1),
        exp=mpmath.exp,
        relu=lambda x: x if x > 0 else mpmath.mpf(0),
        sigmoid=lambda x: 1 / (1 + mpmath.exp(-x)),
    )


def _interval_ops() -> Ops:
    """Arb balls (``balls``): rigorous ball arithmetic, so each result certainly contains the true
    value (certified bounds of the abstaining heads, witness replays of ``proofs.certify``)."""
    from . import balls

    return Ops("interval", balls.ball(0), balls.ball(1), exp=balls.exp, relu=balls.relu, sigmoid=balls.sigmoid)


_BACKENDS: dict[str, Callable[[], Ops]] = {
    "fraction": _fraction_ops,
    "sympy": _sympy_ops,
    "z3": _z3_ops,
    "float": _float_ops,
    "mpmath": _mpmath_ops,
    "interval": _interval_ops,
}
BACKENDS = tuple(_BACKENDS)


def ops(backend: str) -> Ops:
    """The scalar operations of a backend by name."""
    try:
        return _BACKENDS[backend]()
    except KeyError:
        raise BadInput(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}") from None


# ----------------------------------------------------------------------------------------
# The registry.


@dataclass(frozen=True)
class KindParam:
    """An extra per-head parameter: ``shape`` is "scalar" or "vector" (length d)."""

    name: str
    shape: str
    init: float = 0.0  # initial value of a scalar, or of every entry of a vector


@dataclass(frozen=True)
class AttentionKind:
    name: str
    exact: Callable[[Sequence[Any], int, Ops, Mapping[str, Any]], list[Any]]
    torch: Callable[..., Any]
    normalised: bool  # rows sum to one on every input
    can_abstain: bool  # a row can put (almost) nothing anywhere
    prediction: str  # one line: is a sink necessary, and why
    params: tuple[KindParam, ...] = field(default=())

    def weights_torch(self, scores, mask, extras, hidden: bool = False):
        """The torch form, called the way the form expects. A built-in form takes ``hidden``
        and any layout (it reads positions off the mask). A form without a ``hidden`` parameter,
        such as a plug-in's, gets the plain contract: scores [..., L, L] (queries x keys) with
        the mask [L, L] and finite scores (0 at the hidden keys, which its own mask hides); the
        model's [..., L, H, L] layout is transposed for it and back."""
        if _takes_hidden(self.torch):
            return self.torch(scores, mask, extras, hidden=hidden)
        if mask.dim() == 3:  # the model's layout: scores [..., L, H, L], mask [L, 1, L]
            def swap(t):
                return t.transpose(-3, -2) if hasattr(t, "dim") and t.dim() >= 3 else t

            plain = self.weights_torch(swap(scores), mask[:, 0, :], {k: swap(v) for k, v in extras.items()}, hidden)
            return swap(plain)
        return self.torch(scores.masked_fill(~mask, 0.0) if hidden else scores, mask, extras)


def _takes_hidden(form: Callable[..., Any]) -> bool:
    import inspect

    try:
        return "hidden" in inspect.signature(form).parameters
    except (TypeError, ValueError):  # a callable without a signature: assume the plain form
        return False


_REGISTRY: dict[str, AttentionKind] = {}


def register(kind: AttentionKind) -> AttentionKind:
    if kind.name in _REGISTRY:
        raise ValueError(f"attention kind {kind.name!r} registered twice")
    _REGISTRY[kind.name] = kind
    return kind


def get(name: str) -> AttentionKind:
    """The kind called ``name``: every command's one lookup. A registered name, else a plug-in
    (an entry point of the group ``sinks.kinds``, or an import path ``package.module:NAME``),
    loaded once, checked (exact and torch forms must agree, ``constructions.plugins``) and
    registered under that name. An unknown name is bad input listing the valid ones."""
    kind = _REGISTRY.get(name) if isinstance(name, str) else None
    if kind is None and isinstance(name, str):
        kind = _load_plugin(name)
    if kind is None:
        raise BadInput(f"unknown attention kind {name!r}; valid: {', '.join(names())} "
                       f"(or a plug-in: package.module:NAME)")
    return kind


def _load_plugin(name: str) -> AttentionKind | None:
    from dataclasses import replace

    from . import plugins

    found = plugins.load_object(name)
    if found is None:
        return None
    if not isinstance(found, AttentionKind):
        raise BadInput(f"attention kind {name!r} is a {type(found).__name__}, not a constructions.attention.AttentionKind")
    kind = replace(found, name=name)  # the name it was found by: what records store and workers resolve
    plugins.refuse_if_forms_disagree(name, kind, ops("float"))
    _REGISTRY[name] = kind
    return kind


def names() -> tuple[str, ...]:
    """Registered kinds (built-in first), then installed plug-ins not loaded yet. An entry point
    named like a built-in kind is shadowed by it."""
    from . import plugins

    return tuple(_REGISTRY) + tuple(n for n in plugins.entry_point_names() if n not in _REGISTRY)


def relu_divisor(i: int) -> int:
    """ReLU rows divide by the number of non-BOS keys a query sees: max(i, 1)."""
    return max(i, 1)


# ---- softmax ---------------------------------------------------------------------------


def _softmax_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    # Shift by the BOS score: softmax is shift-invariant, and exp(0) = 1 keeps sympy tidy.
    e = [ops.exp(s - scores[0]) for s in scores]
    z = sum(e[1:], e[0])
    return [v / z for v in e]


def _hide(scores, mask):
    """-inf at the keys a query does not see. Adding a 0 / -inf bias gives the same numbers as
    masked_fill for finite scores, and costs one pass forward and none backward (masked_fill
    costs about three times as much on the model's [S, B, L, H, L] scores, forward and back)."""
    import torch

    bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device).masked_fill(~mask, float("-inf"))
    return scores + bias


def _softmax_torch(scores, mask, extras, hidden=False):
    return (scores if hidden else _hide(scores, mask)).softmax(dim=-1)


register(AttentionKind(
    name="softmax",
    exact=_softmax_exact,
    torch=_softmax_torch,
    normalised=True,
    can_abstain=False,
    prediction="sink needed: rows sum to one, so 'output nothing' must park mass on a content-free key (BOS)",
))


# ---- relu ------------------------------------------------------------------------------


def _relu_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    return [exact_div(ops.relu(s), relu_divisor(i)) for s in scores]


def _position_divisor_torch(scores, mask):
    """max(i, 1) per query row, read off the causal mask (query i sees i + 1 keys), shaped like
    the mask with one key column, so it broadcasts over scores in any layout."""
    return (mask.sum(dim=-1, keepdim=True) - 1).clamp(min=1).to(scores.dtype)


def _relu_torch(scores, mask, extras, hidden=False):
    import torch

    weights = torch.relu(scores) if hidden else torch.relu(scores) * mask  # relu(-inf) = 0
    return weights / _position_divisor_torch(scores, mask)


register(AttentionKind(
    name="relu",
    exact=_relu_exact,
    torch=_relu_torch,
    normalised=False,
    can_abstain=True,
    prediction="no sink needed: a row may be all zero, so 'output nothing' needs no key at all",
))


# ---- kinds beyond the paper (constructions/SPEC.md section 6) -------------------------
# Each can_abstain prediction is the same argument as for relu: a row whose total mass can go
# to ~0 (or into a slot that is not a key) outputs ~nothing without a content-free key, so no
# sink is forced; a kind whose rows sum to one over the keys is in softmax's position.


def _row_total(e: Sequence[Any]) -> Any:
    return sum(e[1:], e[0])


def _stable_slot_softmax(scores, mask, slot, hidden=False):
    """Softmax over the visible keys plus one extra logit ``slot`` (broadcast to [..., L, 1]),
    the slot's own weight dropped: exp(s_k) / (exp(slot) + sum_k' exp(s_k'))."""
    import torch

    slot = slot.expand(*scores.shape[:-1], 1)  # [..., L, 1]
    full = torch.cat([scores if hidden else _hide(scores, mask), slot], dim=-1)  # [..., L, L+1]
    return full.softmax(dim=-1)[..., :-1]


# ---- softmax1 ("off by one", Miller 2023) ----------------------------------------------


def _softmax1_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    # No shift here: the implicit "1" is exp(0) of a fixed zero logit, so softmax1 is not
    # shift-invariant.
    e = [ops.exp(s) for s in scores]
    z = ops.one + _row_total(e)
    return [v / z for v in e]


def _softmax1_torch(scores, mask, extras, hidden=False):
    return _stable_slot_softmax(scores, mask, scores.new_zeros(()).reshape(1), hidden)


register(AttentionKind(
    name="softmax1",
    exact=_softmax1_exact,
    torch=_softmax1_torch,
    normalised=False,
    can_abstain=True,
    prediction="no sink needed: driving every score far below 0 sends the row's mass to the implicit +1, i.e. nowhere",
))


# ---- sink_logit (a learned per-head logit column whose weight is dropped, as in gpt-oss) -


def _sink_logit_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    # Shift by the slot logit b: exp(s_k - b) / (1 + sum exp(s_k' - b)), the same numbers.
    e = [ops.exp(s - extras["sink"]) for s in scores]
    z = ops.one + _row_total(e)
    return [v / z for v in e]


def _sink_logit_torch(scores, mask, extras, hidden=False):
    return _stable_slot_softmax(scores, mask, extras["sink"], hidden)


register(AttentionKind(
    name="sink_logit",
    exact=_sink_logit_exact,
    torch=_sink_logit_torch,
    normalised=False,
    can_abstain=True,
    prediction="no BOS sink needed: 'output nothing' parks mass in the learned extra slot, which is not a key",
    params=(KindParam("sink", "scalar", 0.0),),
))


# ---- sigmoid (unnormalised, learned per-head bias) -------------------------------------
# Choice: rows divide by max(i, 1) exactly like relu. Without a divisor the trigger query
# (which has no positional encoding, so cannot know j) could not produce a mean of a variable
# number of tokens; sigmoid attention in practice uses a bias b = -log(n) for the same reason.
# The divisor does not normalise: a row's total still ranges over (0, (i+1)/max(i,1)).


def _sigmoid_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    return [exact_div(ops.sigmoid(s + extras["bias"]), relu_divisor(i)) for s in scores]


def _sigmoid_torch(scores, mask, extras, hidden=False):
    import torch

    weights = torch.sigmoid(scores + extras["bias"])  # sigmoid(-inf + b) = 0
    return (weights if hidden else weights * mask) / _position_divisor_torch(scores, mask)


register(AttentionKind(
    name="sigmoid",
    exact=_sigmoid_exact,
    torch=_sigmoid_torch,
    normalised=False,
    can_abstain=True,
    prediction="no sink needed: every weight sigmoid(s + b) can be ~0, so a row can put ~nothing anywhere",
    params=(KindParam("bias", "scalar", 0.0),),
))


# ---- gated softmax (softmax output times a sigmoid gate of the query) --------------------


def _gated_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    gate = ops.sigmoid(extras["gate"])  # the query's projection w_g . x_i
    return [gate * a for a in _softmax_exact(scores, i, ops, extras)]


def _gated_torch(scores, mask, extras, hidden=False):
    import torch

    return _softmax_torch(scores, mask, extras, hidden) * torch.sigmoid(extras["gate"])


register(AttentionKind(
    name="gated",
    exact=_gated_exact,
    torch=_gated_torch,
    normalised=False,
    can_abstain=True,
    prediction="no sink needed: closing the query's gate sigmoid(w_g . x_i) scales the whole row to ~0",
    params=(KindParam("gate", "vector", 0.0),),
))


# ---- sum-normalised sigmoid (a normalised control) --------------------------------------


def _sigmoid_norm_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    e = [ops.sigmoid(s) for s in scores]
    z = _row_total(e)
    return [v / z for v in e]


def _sigmoid_norm_torch(scores, mask, extras, hidden=False):
    import torch

    # softmax of log sigmoid(s) is sigmoid(s) / sum sigmoid(s), without underflow at s << 0.
    logs = torch.nn.functional.logsigmoid(scores)  # logsigmoid(-inf) = -inf
    logs = logs if hidden else _hide(logs, mask)
    return logs.softmax(dim=-1)


register(AttentionKind(
    name="sigmoid_norm",
    exact=_sigmoid_norm_exact,
    torch=_sigmoid_norm_torch,
    normalised=True,
    can_abstain=False,
    prediction="sink needed: rows sum to one like softmax, so 'output nothing' must park mass on BOS",
))


# ---- softpick (Zuhri et al. 2025, arXiv:2504.20966) -------------------------------------
# a_ik = ReLU(e^s_ik - 1) / (sum_k |e^s_ik - 1| + eps), the paper's formula with eps outside
# any shift. (The authors' code adds eps after shifting by the row max m, i.e. an effective
# eps e^m; the two differ only on rows that are (almost) all zero.) Not shift-invariant: a
# score <= 0 gives weight exactly 0, so a row whose scores are all <= 0 is all zero.

SOFTPICK_EPS = (1, 10 ** 8)  # eps = 1e-8, the reference implementation's default, as a ratio


def _softpick_exact(scores: Sequence[Any], i: int, ops: Ops, extras: Mapping[str, Any]) -> list[Any]:
    shifted = [ops.exp(s) - ops.one for s in scores]
    rectified = [ops.relu(v) for v in shifted]
    # |v| = 2 ReLU(v) - v: one case split per key for z3, not two
    z = _row_total([2 * r - v for r, v in zip(rectified, shifted)])
    eps = ops.one * SOFTPICK_EPS[0] / SOFTPICK_EPS[1]
    return [r / (z + eps) for r in rectified]


def _softpick_torch(scores, mask, extras, hidden=False):
    import torch

    # Multiply numerator and denominator by e^-m, m = max(0, largest visible score), so nothing
    # overflows; e^s - 1 is formed as e^(s+ - m)(1 - e^-s+) + e^-m (e^s- - 1) with s+ = max(s, 0),
    # s- = min(s, 0) (each term exact to rounding via expm1, and 0 on the other side of 0).
    s = scores.masked_fill(~mask, 0.0)  # hidden keys (-inf too): score 0 gives e^0 - 1 = 0, no weight
    m = s.amax(dim=-1, keepdim=True).clamp(min=0)
    pos, neg = s.clamp(min=0), s.clamp(max=0)
    diff = torch.exp(pos - m) * -torch.expm1(-pos) + torch.exp(-m) * torch.expm1(neg)  # e^-m (e^s - 1)
    eps = SOFTPICK_EPS[0] / SOFTPICK_EPS[1]
    return torch.relu(diff) / (diff.abs().sum(dim=-1, keepdim=True) + eps * torch.exp(-m))


register(AttentionKind(
    name="softpick",
    exact=_softpick_exact,
    torch=_softpick_torch,
    normalised=False,
    can_abstain=True,
    prediction="no sink needed: every score <= 0 gives weight exactly 0, so a row can be all zero",
))
