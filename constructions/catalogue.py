"""Every explicit construction by name: ``verify(name, ...)`` builds it and verifies it exactly.

Kept apart from ``verify`` (the single-head verifiers) because it also dispatches to
``verify_multihead``, which builds on ``verify``'s primitives: one module above both, no cycle.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable

from . import cancelling_heads, relu_head, softmax_head, task, verify_multihead
from .errors import BadInput
from .verify import Verdict, verify_sink_free, verify_softmax


def verify(construction: str, d: int = 4, L: int = 5, values: Iterable[Any] = task.DEFAULT_VALUES,
           beta: Any = Fraction(10), layers: int = 1, heads: int = 1) -> Verdict:
    """Build ``construction`` (one of ``CONSTRUCTIONS``) and verify it exactly."""
    if construction == "relu":
        return verify_sink_free(relu_head.build(d), task.TaskConfig(d=d, L=L), values, "relu")
    if construction == "relu-stack":
        net = relu_head.build_stack(d, layers, heads)
        return verify_sink_free(net, task.TaskConfig(d=d, L=L, residual=True), values,
                                f"relu-stack {layers}x{heads}")
    if construction == "softmax":
        return verify_softmax(softmax_head.build(d, beta), beta, task.TaskConfig(d=d, L=L), values,
                              f"softmax beta={beta}")
    if construction in ("cancelling", "cancelling-stack"):
        stack = construction == "cancelling-stack"
        net = (cancelling_heads.build_stack if stack else cancelling_heads.build)(d, beta)
        return verify_multihead.verify_cancelling(net, beta, task.TaskConfig(d=d, L=L, residual=stack), values,
                                                  f"{construction} beta={beta}")
    if construction == "interpolating":
        return verify_multihead.verify_zero_error(cancelling_heads.build_interpolating(d, L), task.TaskConfig(d=d, L=L),
                                                  values, "interpolating")
    raise BadInput(f"unknown construction {construction!r}; valid: {', '.join(CONSTRUCTIONS)}")


CONSTRUCTIONS = ("relu", "relu-stack", "softmax", "cancelling", "cancelling-stack", "interpolating")
