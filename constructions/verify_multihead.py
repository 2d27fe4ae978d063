"""Exact verification of the multi-head constructions of ``constructions.cancelling_heads``.

- ``verify_cancelling`` (the two-head layer with BOS gap beta, alone or in its residual stack):
  on every sequence of a finite instance the evaluator runs in Q(e^beta) (``verify.ExpRational``,
  exact). The verdict is "verified exactly" when every BOS mass equals the closed form
  (1/(i+1) at every non-trigger query i >= 1 in every head and layer; e^-+b/(e^-+b + j) in the
  first layer's heads at the trigger), the error is exactly 0 at every non-trigger position,
  equals S_j * trigger_factor at the trigger, and is certified (interval arithmetic) at most
  the closed-form worst case max_j [e^-b/(j + e^-b) + j/(j + e^b)].
- ``verify_zero_error`` (the interpolating heads, sympy weights log rho): the evaluator in sympy
  gives rational numbers; "verified exactly" when every output equals the target exactly.
  The largest BOS mass at any query i >= 1 (trigger included), over every head, is reported
  exactly.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any, Iterable

from . import balls, cancelling_heads, reference, task
from .errors import BadInput
from .numbers import interval_up
from .verify import (FAILED, VERIFIED, ExpRational, Verdict, _exact_t, _rational_beta, _rows, enclosure_precision,
                     exp_field_ops)


def _check_cancelling_masses(patterns, j: int, beta: Fraction, exp) -> str:
    for n, layer in enumerate(patterns):
        for h, P in enumerate(layer):
            for i in range(1, len(P)):
                expected = (cancelling_heads.bos_mass(beta, i, h, True, exp) if (i == j and n == 0)
                            else Fraction(1, i + 1))
                if P[i][0] != expected:
                    return f"layer {n} head {h} query {i}: BOS weight {P[i][0]!r}, closed form {expected!r}"
    return ""


@enclosure_precision
def verify_cancelling(net: reference.Network, beta: Any, cfg: task.TaskConfig,
                      values: Iterable[Any] = task.DEFAULT_VALUES, label: str = "cancelling") -> Verdict:
    """``build`` or ``build_stack``: closed-form masses and errors on every sequence, exactly."""
    beta = _rational_beta(beta)
    if net.kind != "softmax" or net.layers[0].heads != 2 or cfg.d != net.d or cfg.residual != net.residual:
        raise BadInput("verify_cancelling checks the two-head cancelling layer (or its stack) on a matching task")
    ops, t, values = exp_field_ops(beta), _exact_t(beta), tuple(values)
    bounds = cancelling_heads.worst_error_terms(beta, cfg.L, ops.exp)
    bound_low = max(balls.lo(b.enclose(t)) for b in bounds)
    start, n, failure, worst_hi, worst = time.perf_counter(), 0, "", -1.0, None
    for X, j in task.enumerate_sequences(cfg, values):
        n += 1
        Y, patterns = reference.forward(net, X, ops)
        E = [[y - t for y, t in zip(yr, tr)] for yr, tr in zip(Y, task.target(X, j, net.residual))]
        S = [sum((X[k][c] for k in range(2, j + 1)), X[1][c]) for c in range(cfg.d)]  # S_j
        factor = cancelling_heads.trigger_factor(beta, j, ops.exp)
        if not failure:
            failure = _check_cancelling_masses(patterns, j, beta, ops.exp)
        for i, row in enumerate(E):
            for c, e in enumerate(row):
                expected = factor * S[c] if i == j else ExpRational({})
                if not failure and e != expected:
                    failure = f"sequence {n} (trigger {j}): error at position {i}, coordinate {c} is not the closed form"
                if e.is_zero():
                    continue
                box = balls.magnitude(e.enclose(t))
                if balls.hi(box) > worst_hi:
                    worst_hi, worst = interval_up(box), (X, j, e, box)
                if not failure and not any(e == b or e == -b for b in bounds) and not balls.hi(box) < bound_low:
                    failure = f"sequence {n} (trigger {j}): |error| not certified below the closed-form worst case"
    X, j, e, box = worst
    off = Fraction(1, 2)  # every non-trigger query i >= 1 has 1/(i+1) <= 1/2 (checked above)
    at = cancelling_heads.bos_mass(beta, 2, 1, True, ops.exp).enclose(t)
    return Verdict(
        construction=label, verdict=FAILED if failure else VERIFIED,
        claim=("in Q(e^beta): every BOS mass equals its closed form (1/(i+1) off the trigger in every head), "
               "error 0 off the trigger, S_j * factor at it, <= max_j [e^-b/(j+e^-b) + j/(j+e^b)] (certified)"),
        d=cfg.d, L=cfg.L, values=tuple(str(v) for v in values), sequences=n,
        worst_error=f"{e!r} with E = e^{beta}, in {box}", worst_error_float=interval_up(box),
        largest_bos_weight=f"{off} off the trigger; head 2 at the trigger j = 2 in {at}",
        largest_bos_weight_float=interval_up(at), worst_sequence=_rows(X), worst_trigger=j, failure=failure,
        seconds=time.perf_counter() - start,
        details={"beta": str(beta), "max_bos_mass_off_trigger": float(off), "max_bos_mass_at_trigger": interval_up(at),
                 "closed_form_worst_error": max(interval_up(b.enclose(t)) for b in bounds)},
    )


def verify_zero_error(net: reference.Network, cfg: task.TaskConfig,
                      values: Iterable[Any] = task.DEFAULT_VALUES, label: str = "interpolating") -> Verdict:
    """Every sequence: output == target exactly (sympy); the largest BOS mass at queries >= 1."""
    import sympy

    if cfg.d != net.d or cfg.residual != net.residual:
        raise BadInput(f"task config (d={cfg.d}, residual={cfg.residual}) does not match the network")
    values = tuple(values)
    start, n, failure, largest = time.perf_counter(), 0, "", sympy.Integer(0)
    for X, j in task.enumerate_sequences(cfg, values):
        n += 1
        Xs = [[sympy.Rational(v.numerator, v.denominator) for v in row] for row in X]
        Y, patterns = reference.forward(net, Xs, "sympy")
        T = task.target(Xs, j, net.residual)
        if not failure and any(sympy.nsimplify(y - t) != 0 for yr, tr in zip(Y, T) for y, t in zip(yr, tr)):
            failure = f"sequence {n} (trigger {j}): output differs from the target"
        for layer in patterns:
            for P in layer:
                largest = max([largest] + [sympy.nsimplify(P[i][0]) for i in range(1, len(P))])
    return Verdict(
        construction=label, verdict=FAILED if failure else VERIFIED,
        claim="output equals the target exactly on every sequence; largest BOS weight at any query >= 1 reported",
        d=cfg.d, L=cfg.L, values=tuple(str(v) for v in values), sequences=n,
        worst_error="0" if not failure else "nonzero", worst_error_float=0.0 if not failure else float("nan"),
        largest_bos_weight=str(largest), largest_bos_weight_float=float(largest),
        worst_sequence=(), worst_trigger=0, failure=failure, seconds=time.perf_counter() - start,
    )
