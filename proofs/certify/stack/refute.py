"""A stack head's bracket [certified minimum, worst input found] and its verdict, the worst input
replayed exactly.

The upper end of a head's bracket is an actual input's BOS mass: the input (contents in
[-1, 1]^(d-3) at positions 1..L-1, trigger at j) is taken as exact rationals and run through the
exact evaluator (``constructions.reference``) in Arb ball arithmetic (``replay``), so the
replayed a_i0 is an interval that certainly contains the true value. Causal attention: a_i0 at
layer n depends on positions 0..i and layers 0..n only, so the replay is cut to those.

A head is *certified* when its certified minimum is >= the sink level (1/2), *refuted* when the
replayed BOS mass's upper end is below it, else *unknown* with the bracket's width. Both at
once is impossible for a sound certificate and a sound replay, and raises.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from constructions import reference, task
from constructions.errors import BadInput

from ..arithmetic import replay
from .affine_stack import SINK_LEVEL


def exact_contents(contents: Sequence[Sequence[Any]]) -> list[list[Fraction]]:
    """Contents as exact rationals (a float is one exactly), each checked to lie in [-1, 1]."""
    out = [[Fraction(v) for v in row] for row in contents]
    if any(abs(v) > 1 for row in out for v in row):
        raise BadInput("a content lies outside [-1, 1]: not an input of the task")
    return out


def replay_bos(net: reference.Network, contents: Sequence[Sequence[Any]], j: int, layer: int, head: int,
               i: int) -> tuple[float, float]:
    """(low, high): floats enclosing a_i0 of head ``head`` of layer ``layer`` at query ``i`` on the
    input ``contents`` (L - 1 rows, exact rationals or floats) with the trigger at ``j``."""
    X = task.make_sequence(exact_contents(contents), j)[: i + 1]
    cut = reference.Network(net.kind, net.layers[: layer + 1], net.residual)
    _, patterns = replay.replay(cut, X)
    a = patterns[layer][head][i][0]
    return replay.down(a), replay.up(a)


def bracket(certified_min: float, worst_high: float | None, level: float = SINK_LEVEL) -> dict[str, Any]:
    """The verdict of one head from its certified minimum (a lower bound on a_i0 over every input
    and non-trigger query) and the replayed upper end of its worst input found (None: not
    searched)."""
    certified = certified_min >= level
    refuted = worst_high is not None and worst_high < level
    if certified and refuted:
        raise ArithmeticError(f"certified minimum {certified_min} >= {level} but a replayed input has a_i0 <= "
                              f"{worst_high}: a bound is unsound")
    if worst_high is not None and worst_high < certified_min:
        raise ArithmeticError(f"a replayed input has a_i0 <= {worst_high} below the certified minimum {certified_min}")
    verdict = "certified" if certified else "refuted" if refuted else "unknown"
    width = None if worst_high is None else worst_high - certified_min
    return {"verdict": verdict, "certified_min": certified_min, "worst_found": worst_high, "width": width,
            "level": level}
