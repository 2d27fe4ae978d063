"""T3: an explicit ReLU head that solves the task exactly with no attention on BOS.

Write e_r for the r-th unit vector and E[r, c] for the matrix with a single 1 in row r, column c.
The head uses one score dimension (row 0 of W_Q and W_K):

    W_Q = E[0, trigger]                      (W_Q x)_0 = [x is the trigger]
    W_K = E[0, trigger] + E[0, content]      (W_K x)_0 = [x is not BOS]
    W_V = I,  W_O = I

so s_ik = [x_i is the trigger] * [x_k is not BOS] (the trigger flag and the content flag are
complementary on non-BOS tokens, and both are 0 on BOS). Then, with a_ik = ReLU(s_ik)/max(i, 1):

- at the trigger query j (j >= 2): s_j0 = 0 and s_jk = 1 for k = 1..j, so a_jk = 1/j on the
  non-BOS keys and a_j0 = 0; the output W_O W_V sum_k a_jk x_k = (1/j) sum_{k=1..j} x_k is the
  target exactly;
- at every other query i (BOS included): x_i has trigger flag 0, so s_ik = 0 for every key k,
  the row is all zero (no mass anywhere, BOS included) and the output is 0 = y_i.

Every step is rational, so the evaluator in Fractions gives zero error on every input; the
proof above is for all real contents and all lengths. (W_V = I passes BOS's features too, but
BOS never receives weight, so its value never reaches an output.)

``build_stack`` puts this head first in a residual stack whose other heads and layers have zero
output maps: layer 0 adds the trigger's mean at position j and nothing elsewhere, so
X_1 = X + y_single = the residual target, and every later layer adds W_O z = 0.
"""

from __future__ import annotations

from fractions import Fraction

from . import reference, task
from .errors import BadInput

ZERO, ONE = Fraction(0), Fraction(1)


def _unit(d: int, entries: list[tuple[int, int]]) -> reference.Matrix:
    """The d x d matrix with ones at ``entries`` (row, column), zeros elsewhere."""
    rows = [[ZERO] * d for _ in range(d)]
    for r, c in entries:
        rows[r][c] += ONE
    return reference.as_matrix(rows)


def _check_d(d: int) -> None:
    if not isinstance(d, int) or isinstance(d, bool) or d < 4:
        raise BadInput(f"construction field 'd' must be an integer >= 4, got {d!r}")


def head_weights(d: int) -> tuple[reference.Matrix, reference.Matrix, reference.Matrix]:
    """(W_Q, W_K, W_V) of the sink-free head, exact Fractions."""
    _check_d(d)
    W_Q = _unit(d, [(0, task.TRIGGER_FLAG)])
    W_K = _unit(d, [(0, task.TRIGGER_FLAG), (0, task.content_flag(d))])
    W_V = reference.identity(d, ZERO, ONE)
    return W_Q, W_K, W_V


def build(d: int) -> reference.Network:
    """Single layer, single head, kind "relu": zero error and zero BOS weight on every input."""
    W_Q, W_K, W_V = head_weights(d)
    return reference.single_head("relu", W_Q, W_K, W_V, reference.identity(d, ZERO, ONE))


def build_stack(d: int, layers: int, heads: int) -> reference.Network:
    """Residual stack: layer 0 head 0 is the head of ``build``; every other head has zero
    W_Q, W_K, W_V and a zero block in W_O, and every later layer has W_O = 0."""
    _check_d(d)
    for name, value in (("layers", layers), ("heads", heads)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise BadInput(f"construction field {name!r} must be an integer >= 1, got {value!r}")
    W_Q, W_K, W_V = head_weights(d)
    zero = reference.zeros(d, d, ZERO)
    first_W_O = tuple(
        tuple(ONE if (c == r) else ZERO for c in range(heads * d)) for r in range(d)
    )  # [I | 0 | ... | 0]: only head 0 reaches the stream
    stack = [reference.Layer((W_Q,) + (zero,) * (heads - 1), (W_K,) + (zero,) * (heads - 1),
                             (W_V,) + (zero,) * (heads - 1), first_W_O)]
    for _ in range(layers - 1):
        stack.append(reference.Layer((zero,) * heads, (zero,) * heads, (zero,) * heads,
                                     reference.zeros(d, heads * d, ZERO)))
    return reference.Network("relu", tuple(stack), residual=True)
