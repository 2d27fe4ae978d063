"""Real heads from solver models: pattern weights E become scores log E (or the kind's own link),
re-parametrised slice models are mapped back. The replay then checks the head on every sequence."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from . import encode
from .instance import BOS, Instance
from .replay import DIGITS, HeadParams, LayerModel


def to_mpf(v):
    import mpmath

    if isinstance(v, Fraction):
        return mpmath.mpf(v.numerator) / v.denominator
    return mpmath.mpf(v)


def softmax_model(inst: Instance, weights: dict[tuple[int, int], Any], values: dict[int, list[Any]],
                  kind: str = "softmax") -> LayerModel:
    """Real scores realising pattern weights E (missing pairs weigh 1): log E for softmax,
    softmax1 and sink_logit (slot logit 0); for sigmoid_norm, sigmoid(s_qb) = c_q E_qb with
    c_q = 1 / (2 max(1, max_b E_qb)) < 1 per query row (the normalisation cancels c_q)."""
    import mpmath

    with mpmath.workdps(DIGITS):
        scores = {}
        for q in inst.query_types:
            row = {b: to_mpf(weights.get((q, b), Fraction(1))) for b in inst.types}
            if kind == "sigmoid_norm":
                c = 1 / (2 * max([mpmath.mpf(1)] + list(row.values())))
                scores.update({(q, b): mpmath.log(c * w / (1 - c * w)) for b, w in row.items()})
            else:
                scores.update({(q, b): mpmath.log(w) for b, w in row.items()})
        extras = {"sink": mpmath.mpf(0)} if kind == "sink_logit" else {}
    return LayerModel(kind, [HeadParams(scores, values, extras)], exact=False)


def _values_from(inst: Instance, model: dict[str, Any], prefix: str = "U") -> dict[int, list[Any]]:
    out = {}
    for b in inst.types:
        out[b] = [model.get(f"{prefix}_{b}_{c}", Fraction(0)) for c in range(inst.d)]
    return out


def pattern_model(inst: Instance, model: dict[str, Any], kind: str = "softmax") -> LayerModel:
    weights = {(q, b): model[encode.e_name(q, b)] for q in inst.query_types for b in inst.types
               if encode.e_name(q, b) in model}
    return softmax_model(inst, weights, _values_from(inst, model), kind)


def reparam_model(inst: Instance, model: dict[str, Any], eta: Fraction, kind: str = "softmax") -> LayerModel:
    """Map a re-parametrised model back: u_b = w_b / E_Tb, E_ab = R_ab E_Tb,
    u_T = (A - u_BOS) / E_TT, and the content->trigger weights (unconstrained in the slice)
    set to a small eta."""
    import mpmath

    T = inst.trigger
    with mpmath.workdps(DIGITS):
        get = lambda name, default=Fraction(1): to_mpf(model.get(name, default))
        F = {b: get(encode.f_name(b)) for b in inst.query_types}
        values = {BOS: [get(encode.u_name(BOS, c), Fraction(0)) for c in range(inst.d)]}
        for b in inst.content_types:
            values[b] = [get(encode.w_name(b, c), Fraction(0)) / F[b] for c in range(inst.d)]
        values[T] = [(get(encode.a_name(c), Fraction(0)) - values[BOS][c]) / F[T] for c in range(inst.d)]
        weights = {(T, b): F[b] for b in inst.query_types}
        for a in inst.content_types:
            for b in inst.content_types:
                weights[(a, b)] = get(encode.r_name(a, b)) * F[b]
            weights[(a, T)] = to_mpf(eta)
        return softmax_model(inst, weights, values, kind)


# ---- the search -------------------------------------------------------------------------


def mapped_back(inst: Instance, model: dict[str, Any], kind: str = "softmax") -> LayerModel:
    vmax = max([abs(float(v)) for v in model.values() if isinstance(v, Fraction)] + [1.0])
    eta = Fraction(inst.eps) / Fraction(8) / Fraction(math.ceil(vmax))
    return reparam_model(inst, model, eta if eta > 0 else Fraction(1, 10 ** 6), kind)
