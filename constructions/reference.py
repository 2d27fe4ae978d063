"""The slow exact reference evaluator of constructions/SPEC.md section 2, over any numeric backend.

This is the semantics everything else is checked against: the torch model must agree with it
(float64, tight tolerance), constructions are verified with it in rational or symbolic
arithmetic, and z3 encodings build their terms with it.

A ``Network`` is a list of ``Layer``s of one attention kind. A layer has H heads, each with
d x d matrices W_Q, W_K, W_V, and one output map W_O of shape d x (H*d). Per head h and query i:

    s_ik = (W_Q x_i) . (W_K x_k)            for keys k = 0..i (causal)
    a_i  = kind.exact(s_i, i)                (see ``constructions.attention``)
    z_i  = W_V sum_k a_ik x_k                (a d-vector)
    out_i = W_O [z_i^(1); ...; z_i^(H)]

With ``residual`` the stream is X_{l+1} = X_l + out; without it (the single-layer task) the
output is ``out`` itself. Matrices are nested tuples (rows), of any number type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from . import attention
from .errors import BadInput

Matrix = tuple[tuple[Any, ...], ...]


def as_matrix(rows: Sequence[Sequence[Any]]) -> Matrix:
    return tuple(tuple(r) for r in rows)


def matvec(M: Sequence[Sequence[Any]], x: Sequence[Any]) -> list[Any]:
    return [_dot(row, x) for row in M]


def _dot(a: Sequence[Any], b: Sequence[Any]) -> Any:
    terms = [p * q for p, q in zip(a, b)]
    return sum(terms[1:], terms[0])


def zeros(rows: int, cols: int, zero: Any = 0) -> Matrix:
    return tuple(tuple(zero for _ in range(cols)) for _ in range(rows))


def identity(d: int, zero: Any = 0, one: Any = 1) -> Matrix:
    return tuple(tuple(one if r == c else zero for c in range(d)) for r in range(d))


@dataclass(frozen=True)
class Layer:
    """H heads: ``W_Q[h]``, ``W_K[h]``, ``W_V[h]`` are d x d; ``W_O`` is d x (H*d).

    ``extras[h]`` holds the head's extra kind parameters by name (see ``KindParam``):
    a number for a "scalar" parameter, a length-d sequence for a "vector" one.
    """

    W_Q: tuple[Matrix, ...]
    W_K: tuple[Matrix, ...]
    W_V: tuple[Matrix, ...]
    W_O: Matrix
    extras: tuple[Mapping[str, Any], ...] = field(default=())

    @property
    def heads(self) -> int:
        return len(self.W_Q)

    @property
    def d(self) -> int:
        return len(self.W_O)

    def head_extras(self, h: int) -> Mapping[str, Any]:
        return self.extras[h] if self.extras else {}


@dataclass(frozen=True)
class Network:
    kind: str
    layers: tuple[Layer, ...]
    residual: bool = False

    def __post_init__(self) -> None:
        attention.get(self.kind)  # unknown kinds are bad input here, not deep in a loop
        if not self.layers:
            raise BadInput("a network needs at least one layer")
        d = self.layers[0].d
        for n, layer in enumerate(self.layers):
            shapes = [(len(m), len(m[0])) for group in (layer.W_Q, layer.W_K, layer.W_V) for m in group]
            if any(s != (d, d) for s in shapes) or len(layer.W_Q) != len(layer.W_K) or len(layer.W_Q) != len(layer.W_V):
                raise BadInput(f"layer {n}: W_Q, W_K, W_V must be H matrices of shape {d} x {d}")
            if len(layer.W_O) != d or len(layer.W_O[0]) != layer.heads * d:
                raise BadInput(f"layer {n}: W_O must have shape {d} x {layer.heads * d}")

    @property
    def d(self) -> int:
        return self.layers[0].d


def single_head(kind: str, W_Q, W_K, W_V, W_O, extras: Mapping[str, Any] | None = None) -> Network:
    """The single-layer, single-head, non-residual network of the single-layer task."""
    layer = Layer((as_matrix(W_Q),), (as_matrix(W_K),), (as_matrix(W_V),), as_matrix(W_O),
                  (dict(extras),) if extras else ())
    return Network(kind, (layer,), residual=False)


def _kind_extras(kind: attention.AttentionKind, raw: Mapping[str, Any], x_i: Sequence[Any]) -> dict[str, Any]:
    """Scalars pass through; a vector parameter w becomes the query's projection w . x_i."""
    out = {}
    for p in kind.params:
        if p.name not in raw:
            raise BadInput(f"attention kind {kind.name!r} needs head parameter {p.name!r}")
        out[p.name] = _dot(raw[p.name], x_i) if p.shape == "vector" else raw[p.name]
    return out


def layer_forward(layer: Layer, kind: attention.AttentionKind, X: Sequence[Sequence[Any]], ops: attention.Ops):
    """One attention layer on rows ``X``: returns (out rows, patterns [H][L][L])."""
    L, d = len(X), len(X[0])
    concat = [[] for _ in range(L)]
    patterns = []
    for h in range(layer.heads):
        q = [matvec(layer.W_Q[h], x) for x in X]
        k = [matvec(layer.W_K[h], x) for x in X]
        v = [matvec(layer.W_V[h], x) for x in X]
        pattern = []
        for i in range(L):
            scores = [_dot(q[i], k[j]) for j in range(i + 1)]
            a = kind.exact(scores, i, ops, _kind_extras(kind, layer.head_extras(h), X[i]))
            pattern.append(list(a) + [ops.zero] * (L - i - 1))
            concat[i].extend(sum((a[j] * v[j][c] for j in range(1, i + 1)), a[0] * v[0][c]) for c in range(d))
        patterns.append(pattern)
    out = [matvec(layer.W_O, z) for z in concat]
    return out, patterns


def forward(net: Network, X: Sequence[Sequence[Any]], backend: str | attention.Ops = "fraction"):
    """Run ``net`` on one sequence ``X`` (L rows of d numbers).

    Returns ``(Y, patterns)`` with ``patterns[layer][head][query][key]`` (zero above the
    diagonal). Raises ``NotExpressible`` if the kind needs an operation the backend lacks.
    """
    ops = attention.ops(backend) if isinstance(backend, str) else backend
    kind = attention.get(net.kind)
    if len(X[0]) != net.d:
        raise BadInput(f"sequence has d = {len(X[0])} features, network expects {net.d}")
    stream = [list(x) for x in X]
    patterns = []
    for layer in net.layers:
        out, pat = layer_forward(layer, kind, stream, ops)
        patterns.append(pat)
        stream = [[s + o for s, o in zip(sr, orow)] for sr, orow in zip(stream, out)] if net.residual else out
    return stream, patterns
