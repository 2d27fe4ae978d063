"""Heads of the kinds that can abstain, solving the single-layer task with NO sink.

Every construction is one head with W_V = W_O = I and scores (and gate) that read only the
three flags b (BOS), t (trigger), c (content); nb = t + c is "not BOS". With gap g:

    softmax1    s_ik = g (t_i - c_i - b_i) nb_k - g b_k
                trigger query: +g on non-BOS keys, -g on BOS; other queries: -g on every key.
                Mass at other queries goes to the implicit "+1": 1/(e^g + i + 1) per key.
    sink_logit  s_ik = 2g t_i nb_k - g b_k, extra slot logit g
                trigger query: 2g on non-BOS keys, -g on BOS; other queries: 0 / -g, so the
                slot (logit g) takes ~all the mass: 1/(e^g + i + e^-g) per non-BOS key.
    gated       softmax scores as for softmax1, gate w_g = g (t - c - b): the gate is
                sigmoid(g) at the trigger and sigmoid(-g) elsewhere.
    sigmoid     s_ik = g t_i nb_k, bias -g/2: weights sigmoid(+-g/2) / max(i, 1).
    softpick    s_ik = g t_i nb_k: every score off the trigger (and BOS's at it) is 0, and
                ReLU(e^0 - 1) = 0, so those rows are EXACTLY zero at any g; the trigger row is
                (e^g - 1)/(j (e^g - 1) + eps) on keys 1..j.

In each, as g -> oo every attention weight tends to its target weight (1/j on keys 1..j at the
trigger j, 0 everywhere else, BOS included), so the error vanishes with the BOS mass tending to
0, not to 1: no sink. (The softmax family of ``softmax_head`` is the contrast: there the error is
exactly 1 - BOS mass.)

Verification (``verify``), for a length L and all trigger positions j:

- Content-blindness is checked on the weights (W_Q, W_K and the gate have zero columns on the
  content coordinates), so a head's pattern depends only on (L, j). With W_V = W_O = I the error
  at query i, coordinate c, is sum_k (a_ik - w_ik) x_kc; over every input with content in
  [-1, 1] its worst case is exactly max(a_i0, sum_{k>=1} |a_ik - w_ik|) (BOS flag coordinate,
  resp. a content coordinate with x_kc = sign(a_ik - w_ik); the flag coordinates are dominated).
- Exact: with the gap g = log E (softpick: log(1 + E)) for a positive symbol E, sympy turns every weight into an
  algebraic function of E; ``sympy.limit`` shows each tends to its target weight as E -> oo.
- Certified: for numeric gaps, the same pattern in ball arithmetic (Arb) gives a
  rigorous upper bound on the worst-case error and on the BOS mass: the trade-off curve.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from . import attention, reference, task
from .errors import BadInput
from .numbers import interval_up

FLAGS = (task.BOS_FLAG, task.TRIGGER_FLAG)  # plus content_flag(d)


def _numbers(gap: Any) -> tuple[Any, Any, Any]:
    """(zero, one, gap) in the number type of ``gap``: Fraction, sympy or Arb ball."""
    if isinstance(gap, (int, Fraction)) and not isinstance(gap, bool):
        if not gap > 0:
            raise BadInput(f"construction field 'gap' must be > 0, got {gap!r}")
        return Fraction(0), Fraction(1), Fraction(gap)
    from . import balls

    if balls.is_ball(gap):
        return balls.ball(0), balls.ball(1), gap
    import sympy

    if isinstance(gap, sympy.Basic):
        return sympy.Integer(0), sympy.Integer(1), gap
    raise BadInput(f"construction field 'gap' must be an int, Fraction, sympy number or Arb ball, got {gap!r}")


def _matrix(d: int, zero: Any, entries: dict[tuple[int, int], Any]) -> list[list[Any]]:
    rows = [[zero] * d for _ in range(d)]
    for (r, c), v in entries.items():
        rows[r][c] = v
    return rows


def _head(kind: str, d: int, zero: Any, one: Any, q: dict, k: dict, extras: dict | None = None) -> reference.Network:
    I = reference.identity(d, zero, one)
    return reference.single_head(kind, _matrix(d, zero, q), _matrix(d, zero, k), I, I, extras)


def _check_d(d: int) -> None:
    if not isinstance(d, int) or isinstance(d, bool) or d < 4:
        raise BadInput(f"construction field 'd' must be an integer >= 4, got {d!r}")


def build_softmax1(d: int, gap: Any) -> reference.Network:
    _check_d(d)
    zero, one, g = _numbers(gap)
    b, t, c = task.BOS_FLAG, task.TRIGGER_FLAG, task.content_flag(d)
    q = {(0, t): g, (0, c): -g, (0, b): -g, (1, b): -g, (1, t): -g, (1, c): -g}
    k = {(0, t): one, (0, c): one, (1, b): one}
    return _head("softmax1", d, zero, one, q, k)


def build_sink_logit(d: int, gap: Any) -> reference.Network:
    _check_d(d)
    zero, one, g = _numbers(gap)
    b, t, c = task.BOS_FLAG, task.TRIGGER_FLAG, task.content_flag(d)
    q = {(0, t): 2 * g, (1, b): -g, (1, t): -g, (1, c): -g}
    k = {(0, t): one, (0, c): one, (1, b): one}
    return _head("sink_logit", d, zero, one, q, k, {"sink": g})


def build_gated(d: int, gap: Any) -> reference.Network:
    _check_d(d)
    zero, one, g = _numbers(gap)
    b, t, c = task.BOS_FLAG, task.TRIGGER_FLAG, task.content_flag(d)
    q = {(0, t): g, (0, c): -g, (0, b): -g, (1, b): -g, (1, t): -g, (1, c): -g}
    k = {(0, t): one, (0, c): one, (1, b): one}
    gate = [zero] * d
    gate[t], gate[c], gate[b] = g, -g, -g
    return _head("gated", d, zero, one, q, k, {"gate": tuple(gate)})


def build_sigmoid(d: int, gap: Any) -> reference.Network:
    _check_d(d)
    zero, one, g = _numbers(gap)
    t, c = task.TRIGGER_FLAG, task.content_flag(d)
    return _head("sigmoid", d, zero, one, {(0, t): g}, {(0, t): one, (0, c): one}, {"bias": -g / 2})


def build_softpick(d: int, gap: Any) -> reference.Network:
    _check_d(d)
    zero, one, g = _numbers(gap)
    t, c = task.TRIGGER_FLAG, task.content_flag(d)
    return _head("softpick", d, zero, one, {(0, t): g}, {(0, t): one, (0, c): one})


@dataclass(frozen=True)
class Construction:
    name: str  # the attention kind it is for
    build: Callable[[int, Any], reference.Network]
    summary: str
    # The exact check takes gap = log(E) (or log(1 + E): softpick's weights are Max(0, e^g - 1),
    # whose sign sympy knows only when e^g - 1 = E is a positive symbol); either -> oo with E.
    gap_plus_one: bool = False


CONSTRUCTIONS = {
    c.name: c for c in (
        Construction("softmax1", build_softmax1, "non-trigger scores all -g: mass goes to the implicit +1"),
        Construction("sink_logit", build_sink_logit, "non-trigger mass parked in the extra slot (logit g)"),
        Construction("gated", build_gated, "gate sigmoid(-g) closes every non-trigger row"),
        Construction("sigmoid", build_sigmoid, "bias -g/2: every non-trigger weight sigmoid(-g/2)/max(i,1)"),
        Construction("softpick", build_softpick, "non-trigger scores 0: ReLU(e^0 - 1) = 0, rows exactly zero",
                     gap_plus_one=True),
    )
}


def get(name: str) -> Construction:
    try:
        return CONSTRUCTIONS[name]
    except KeyError:
        raise BadInput(f"no abstaining construction for {name!r}; valid: {', '.join(CONSTRUCTIONS)}") from None


# ----------------------------------------------------------------------------------------
# Verification.


def check_content_blind(net: reference.Network) -> None:
    """Raise BadInput unless the head's scores and gate read only the flags and W_V = W_O = I
    (the preconditions of the worst-case formula in the module docstring)."""
    layer, d = net.layers[0], net.d
    content = range(task.CONTENT_START, d - 1)
    if len(net.layers) != 1 or layer.heads != 1 or net.residual:
        raise BadInput("the abstaining-head verifier takes one single-head, non-residual layer")
    for name, M in (("W_Q", layer.W_Q[0]), ("W_K", layer.W_K[0])):
        if any(M[r][c] != 0 for r in range(d) for c in content):
            raise BadInput(f"{name} reads content coordinates; the pattern would depend on content")
    for p in attention.get(net.kind).params:
        if p.shape == "vector" and any(layer.head_extras(0)[p.name][c] != 0 for c in content):
            raise BadInput(f"head parameter {p.name!r} reads content coordinates")
    for name, M in (("W_V", layer.W_V[0]), ("W_O", layer.W_O)):
        if any(M[r][c] != (1 if r == c else 0) for r in range(d) for c in range(d)):
            raise BadInput(f"{name} must be the identity for the worst-case formula")


def pattern(net: reference.Network, L: int, j: int, ops: attention.Ops) -> list[list[Any]]:
    """The head's pattern [query][key] at length L with the trigger at j (content-blind, so
    any content gives it; zeros are used)."""
    zero, one = ops.zero, ops.one
    X = task.make_sequence([[zero] * (net.d - 3) for _ in range(L - 1)], j, zero, one)
    return reference.forward(net, X, ops)[1][0][0]


def target_weight(i: int, k: int, j: int, one: Any = Fraction(1)) -> Any:
    """The weight the exact mean needs: 1/j on keys 1..j at the trigger, 0 elsewhere (in the
    number type of ``one``; an interval encloses 1/j)."""
    return one / j if i == j and 1 <= k <= j else one * 0


def row_errors(P: list[list[Any]], j: int, one: Any) -> list[tuple[Any, Any]]:
    """Per query i: (a_i0, sum_{k>=1} |a_ik - w_ik|); their max is the worst-case error at i."""
    out = []
    for i, row in enumerate(P):
        dev = [abs(row[k] - target_weight(i, k, j, one)) for k in range(1, i + 1)]
        out.append((row[0], sum(dev[1:], dev[0]) if dev else 0 * row[0]))
    return out


@dataclass(frozen=True)
class LimitCheck:
    name: str
    L: int
    weights_checked: int  # distinct (weight expression, target) pairs whose limit was taken
    all_weights_converge: bool  # every weight -> its target weight as the gap -> oo
    failures: tuple[str, ...]


def verify_limit(name: str, L: int, d: int = 4) -> LimitCheck:
    """Exact (sympy): with gap = log E, every weight of every pattern at length L (all trigger
    positions) tends to its target weight as E -> oo."""
    import sympy

    E = sympy.Symbol("E", positive=True)
    construction = get(name)
    gap = sympy.log(1 + E) if construction.gap_plus_one else sympy.log(E)
    return check_limit(construction.build(d, gap), E, L, name)


def check_limit(net: reference.Network, E: Any, L: int, name: str = "") -> LimitCheck:
    """``verify_limit`` for any content-blind head whose weights are built from log(E)."""
    import sympy

    check_content_blind(net)
    ops = attention.ops("sympy")
    pairs = set()
    for j in range(2, L):
        P = pattern(net, L, j, ops)
        pairs |= {(sympy.simplify(P[i][k]), target_weight(i, k, j, ops.one)) for i in range(L) for k in range(i + 1)}
    failures = []
    for expr, w in sorted(pairs, key=str):
        limit = sympy.limit(expr, E, sympy.oo)
        if sympy.simplify(limit - w) != 0:
            failures.append(f"{expr} -> {limit}, target {w}")
    return LimitCheck(name, L, len(pairs), not failures, tuple(failures))


@dataclass(frozen=True)
class CurvePoint:
    gap: float
    max_error: float  # certified upper bound on the worst-case max-abs error over all inputs
    max_bos_mass: float  # certified upper bound on a_i0 over every query i >= 1
    max_nontrigger_row_mass: float  # certified upper bound on sum_k a_ik off the trigger


def certified_point(name: str, gap: float, L: int, d: int = 4) -> CurvePoint:
    """Ball-arithmetic bounds (Arb, ``balls``) at one numeric gap, over every trigger position
    and every input of length L with content in [-1, 1]. Each figure is an interval's upper end
    rounded toward +inf (``numbers.interval_up``), at Arb's working precision ``balls.WORK_BITS``."""
    from . import balls

    with balls.precision():
        return _certified_point(name, gap, L, d)


def _certified_point(name: str, gap: float, L: int, d: int) -> CurvePoint:
    from . import balls

    ops = attention.ops("interval")
    net = get(name).build(d, balls.ball(gap))
    err = bos = row = 0.0
    for j in range(2, L):
        P = pattern(net, L, j, ops)
        for i, (a0, dev) in enumerate(row_errors(P, j, ops.one)):
            err = max(err, interval_up(a0), interval_up(dev))
            if i >= 1:
                bos = max(bos, interval_up(a0))
            if i != j:
                row = max(row, interval_up(sum(P[i][1:], P[i][0])))
    return CurvePoint(gap, err, bos, row)


def trade_off(name: str, gaps: tuple[float, ...], L: int) -> list[CurvePoint]:
    """The certified error / BOS mass curve against the gap."""
    return [certified_point(name, g, L) for g in gaps]
