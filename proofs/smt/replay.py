"""Replay: rebuild a real attention layer from a solver model and run it on EVERY sequence.

A model gives, per head, a score for each (query type, key type) pair and a value image u_b
for each token type. Because the instance's token vectors x_b are linearly independent, real
d x d weights realise them exactly: with X the (types x d) matrix of token vectors, G = X X^T
and P = G^-1 X (so X P^T = I),

    W_Q = (P^T S P)^T, W_K = I   gives  x_q^T W_Q^T W_K x_b = S_qb,
    W_V = I, W_O = U^T P         gives  W_O W_V x_b = u_b.

The layer then runs through ``constructions.reference`` (the one definition of every kind) on
every sequence of the instance, not every class: in mpmath at 50 digits for kinds with exp,
exactly in fractions otherwise. The replay reports the max-abs error, the minimum BOS mass over
covered non-trigger positions and the sequence where it occurs. A softmax model's scores are
log E, so a model is confirmed only if the real head (not the abstraction) meets eps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from constructions import reference
from constructions.errors import NotExpressible

from .classes import PositionClass
from .instance import BOS, Instance

DIGITS = 50


@dataclass
class HeadParams:
    """One head: ``scores[(q, b)]`` for query type q and key type b (missing pairs score 0) and
    ``values[b]`` = the d-vector W_O W_V x_b (missing types map to 0)."""

    scores: dict[tuple[int, int], Any]
    values: dict[int, list[Any]]
    extras: dict[str, Any] = field(default_factory=dict)  # scalar, or {type: projection} for a vector


@dataclass
class LayerModel:
    kind: str
    heads: list[HeadParams]
    exact: bool  # scores and values are exact rationals (no exp involved)

    def describe(self, inst: Instance, digits: int = 6) -> list[str]:
        lines = []
        for h, head in enumerate(self.heads):
            lines.append(f"head {h} ({self.kind}): scores s[q][k] (row = query type, column = key type)")
            keys = list(inst.types)
            lines.append("      " + "".join(f"{inst.type_label(k):>14}" for k in keys))
            for q in inst.query_types:
                row = "".join(f"{_short(head.scores.get((q, k), 0), digits):>14}" for k in keys)
                lines.append(f"{inst.type_label(q):>6}{row}")
            lines.append("  value images u_b = W_O W_V x_b:")
            for b in inst.types:
                vals = ", ".join(_short(v, digits) for v in head.values.get(b, [0] * inst.d))
                lines.append(f"{inst.type_label(b):>6}  [{vals}]")
        return lines


def _short(x: Any, digits: int) -> str:
    if isinstance(x, Fraction) and x.denominator == 1:
        return str(x.numerator)
    try:
        return f"{float(x):.{digits}g}"
    except (TypeError, ValueError):
        return str(x)


@dataclass
class Replay:
    ok: bool  # max error <= eps on every sequence
    eps: str
    max_error: str
    worst_error_sequence: list[str]
    min_bos_covered: str | None  # over covered non-trigger positions
    argmin_sequence: list[str]
    argmin_position: int | None
    max_bos_covered: str | None
    min_bos_pre_trigger: str | None
    min_bos_post_trigger: str | None
    sequences: int
    exact: bool
    seconds: float
    notes: list[str] = field(default_factory=list)


def _projector(inst: Instance):
    """P = (X X^T)^-1 X, exact rationals (types x d)."""
    import sympy

    X = sympy.Matrix(inst.token_vectors())
    if X.rank() < X.rows:
        raise NotExpressible("token vectors are linearly dependent: a type-level model need not be realisable")
    P = (X * X.T).inv() * X
    return [[Fraction(int(P[r, c].p), int(P[r, c].q)) for c in range(P.cols)] for r in range(P.rows)]


def build_network(inst: Instance, model: LayerModel, number) -> reference.Network:
    """The real layer realising ``model``; ``number`` converts a model entry (Fraction, str,
    mpf) into the backend's number type."""
    P = [[number(v) for v in row] for row in _projector(inst)]
    m, d = len(P), inst.d
    zero = number(0)
    eye = reference.identity(d, zero, number(1))
    W_Q, W_K, W_V, blocks, extras = [], [], [], [], []
    for head in model.heads:
        ex = {}
        for name, v in head.extras.items():
            if isinstance(v, dict):  # w . x_t = v[t] for every type: w = sum_t v[t] P_t
                ex[name] = [sum((number(v.get(t, 0)) * P[t][c] for t in range(m)), zero) for c in range(d)]
            else:
                ex[name] = number(v)
        extras.append(ex)
        S = [[number(head.scores.get((q, b), 0)) for b in range(m)] for q in range(m)]
        SP = [[sum((S[q][r] * P[r][c] for r in range(m)), zero) for c in range(d)] for q in range(m)]
        M = [[sum((P[q][a] * SP[q][b] for q in range(m)), zero) for b in range(d)] for a in range(d)]
        W_Q.append(reference.as_matrix([[M[b][a] for b in range(d)] for a in range(d)]))  # M^T
        W_K.append(eye)
        W_V.append(eye)
        U = [[number(v) for v in head.values.get(t, [0] * d)] for t in range(m)]
        blocks.append([[sum((U[t][r] * P[t][c] for t in range(m)), zero) for c in range(d)] for r in range(d)])
    W_O = reference.as_matrix([sum((blk[r] for blk in blocks), []) for r in range(d)])
    layer = reference.Layer(tuple(W_Q), tuple(W_K), tuple(W_V), W_O, tuple(extras) if any(extras) else ())
    return reference.Network(model.kind, (layer,), residual=False)


def _numbers(exact: bool):
    if exact:
        return (lambda v: Fraction(v)), "fraction"
    import mpmath

    def to_mpf(v):
        if isinstance(v, Fraction):
            return mpmath.mpf(v.numerator) / v.denominator
        return mpmath.mpf(v)

    return to_mpf, "mpmath"


def replay(inst: Instance, model: LayerModel, eps: Fraction | None = None, head: int = 0) -> Replay:
    """Run the real layer on every sequence; BOS mass is read from head ``head``."""
    import mpmath

    eps = inst.eps if eps is None else Fraction(eps)
    start = time.perf_counter()
    number, backend = _numbers(model.exact)
    with mpmath.workdps(DIGITS):
        net = build_network(inst, model, number)
        worst = (None, None)
        best_bos = (None, None, None)
        by_phase = {"pre": None, "post": None}
        max_bos = None
        count = 0
        for types in inst.type_sequences():
            count += 1
            X = [[number(v) for v in row] for row in inst.features(types)]
            Y, patterns = reference.forward(net, X, backend)
            target = inst.target(types)
            err = max(abs(Y[i][c] - number(target[i][c])) for i in range(len(types)) for c in range(inst.d))
            if worst[0] is None or err > worst[0]:
                worst = (err, types)
            seen_trigger = False
            for i in range(1, len(types)):
                if types[i] == inst.trigger:
                    seen_trigger = True
                    continue
                if seen_trigger and inst.covered == "pre_trigger":
                    continue
                bos = patterns[0][head][i][BOS]
                phase = "post" if seen_trigger else "pre"
                if by_phase[phase] is None or bos < by_phase[phase]:
                    by_phase[phase] = bos
                if max_bos is None or bos > max_bos:
                    max_bos = bos
                if best_bos[0] is None or bos < best_bos[0]:
                    best_bos = (bos, types, i)
        label = lambda seq: [inst.type_label(t) for t in seq] if seq else []
        fmt = lambda x: None if x is None else (str(x) if model.exact else mpmath.nstr(x, 12))
        ok = worst[0] <= number(eps)
        return Replay(
            ok=bool(ok), eps=str(eps), max_error=fmt(worst[0]), worst_error_sequence=label(worst[1]),
            min_bos_covered=fmt(best_bos[0]), argmin_sequence=label(best_bos[1]), argmin_position=best_bos[2],
            max_bos_covered=fmt(max_bos), min_bos_pre_trigger=fmt(by_phase["pre"]), min_bos_post_trigger=fmt(by_phase["post"]),
            sequences=count, exact=model.exact, seconds=time.perf_counter() - start,
        )


def class_bos_mass(inst: Instance, model: LayerModel, cls: PositionClass, head: int = 0):
    """BOS mass of the real layer at one class (via its representative sequence prefix)."""
    import mpmath

    from .classes import complete, representative

    number, backend = _numbers(model.exact)
    with mpmath.workdps(DIGITS):
        net = build_network(inst, model, number)
        types = complete(inst, representative(inst, cls))
        X = [[number(v) for v in row] for row in inst.features(types)]
        _, patterns = reference.forward(net, X, backend)
        return patterns[0][head][cls.size][BOS]
