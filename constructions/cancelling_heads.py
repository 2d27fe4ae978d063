"""Softmax layers with several heads that solve the task while no head sinks off the trigger.

Every head here reads one score dimension: W_K = E[0, BOS], so (W_K x_k)_0 = [k is BOS], and
W_Q has at most the entry (0, trigger), so only the trigger query scores BOS differently from
the other keys. Every W_V = I - E[BOS, BOS] (BOS's value image is 0) and W_O = [n_1 I | ... |
n_H I]. Hence at every non-trigger query i >= 1 every head is uniform over keys 0..i (BOS mass
1/(i+1) <= 1/2), and the layer's output there is (sum_h n_h) sum_{k=1..i} x_k/(i+1). With
sum_h n_h = 0 it is exactly 0 = y_i. At the trigger j, head h with BOS score log rho_h has
BOS mass rho_h/(rho_h + j) and output S_j/(rho_h + j), S_j = sum_{k=1..j} x_k; the layer
outputs S_j sum_h n_h/(rho_h + j), and the target is S_j/j.

- ``build(d, beta)`` (the construction that refutes T2): two heads, rho = (e^-beta,
  e^beta), W_O = [I, -I]. Off the trigger the heads cancel exactly (zero error). At the trigger
  the error is S_j * factor(beta, j), factor = 1/(j + e^-b) - 1/(j + e^b) - 1/j -> 0; head 2
  puts e^b/(e^b + j) -> 1 on BOS there, at the trigger only. Worst case over contents in
  [-1, 1]: max_j j |factor| = max_j [e^-b/(j + e^-b) + j/(j + e^b)] (all-ones content).
- ``build_stack(d, beta)``: the same layer followed by a layer of two heads with W_Q = W_K =
  W_V = 0 (uniform rows) and W_O = 0, residual: the stream gains exactly the layer's output,
  so the residual error equals the single layer's error.
- ``build_trigger_parking(d, beta)`` (a control, not a refutation): two flag-reading heads with
  identical rows at every content query and opposite value maps M, -M, M = E[trigger, BOS] + the
  identity on the content and content-flag coordinates (BOS's image is the trigger flag, the
  trigger's is its content). At the trigger head 1 scores itself -beta, head 2 +beta (head 2
  parks on the trigger, not on BOS). On inputs whose trigger carries content 0 (the SMT
  instances' convention) the error is the cancelling pair's, S_j * trigger_factor(beta, j), and
  no head puts more than 1/2 on BOS at any query i >= 1; a trigger with content c_j adds about
  -c_j at the trigger. So the trigger's own content is what forces the sink of
  ``proofs.statements.t2_two_heads_flag_scores`` (its d3 rows), and (a') is false on instances where the
  trigger's content is fixed.
- ``build_interpolating(d, L, rhos)``: sum_h n_h/(rho_h + j) = 1/j for every j in 2..L-1 and
  sum_h n_h = 0, solved exactly in rationals (``interpolation_weights``). The layer then has
  error 0 on every input of length L, and every head's BOS mass at every query i >= 1 is
  <= max(1/2, rho_h/(rho_h + 2)) < 1: no sink anywhere, the trigger included. Two heads
  suffice at L = 4 (rho = (1, 6), n = (12/5, -12/5)); L - 1 heads at any L (rho_h = h).
  The BOS score log rho_h is irrational, so these weights are exact sympy numbers.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Sequence

from . import reference, task
from .errors import BadInput


def _check(d: int) -> None:
    if not isinstance(d, int) or isinstance(d, bool) or d < 4:
        raise BadInput(f"construction field 'd' must be an integer >= 4, got {d!r}")


def _numbers(x: Any) -> tuple[Any, Any]:
    """(zero, one) in the number type of ``x``: sympy for sympy numbers, else Fractions."""
    try:
        import sympy

        if isinstance(x, sympy.Basic):
            return sympy.Integer(0), sympy.Integer(1)
    except ImportError:  # pragma: no cover
        pass
    return Fraction(0), Fraction(1)


def _layer(d: int, trigger_bos_scores: Sequence[Any], n: Sequence[Any], zero: Any, one: Any) -> reference.Layer:
    """One layer: head h scores BOS by ``trigger_bos_scores[h]`` at the trigger query, 0 elsewhere;
    values I - E[BOS, BOS]; output blocks n_h I."""
    W_K = [[zero] * d for _ in range(d)]
    W_K[0][task.BOS_FLAG] = one
    W_V = [list(r) for r in reference.identity(d, zero, one)]
    W_V[task.BOS_FLAG][task.BOS_FLAG] = zero
    queries = []
    for s in trigger_bos_scores:
        W_Q = [[zero] * d for _ in range(d)]
        W_Q[0][task.TRIGGER_FLAG] = s
        queries.append(reference.as_matrix(W_Q))
    H = len(queries)
    W_O = tuple(tuple(n[c // d] * one if c % d == r else zero for c in range(H * d)) for r in range(d))
    return reference.Layer(tuple(queries), (reference.as_matrix(W_K),) * H, (reference.as_matrix(W_V),) * H, W_O)


def build(d: int, beta: Any) -> reference.Network:
    """Two heads, one layer: BOS scored -beta (head 1) and +beta (head 2) at the trigger only;
    W_O = [I, -I]. ``beta`` an int/Fraction (exact) or a sympy expression."""
    _check(d)
    if isinstance(beta, bool) or (isinstance(beta, (int, float, Fraction)) and not beta > 0):
        raise BadInput(f"construction field 'beta' must be > 0, got {beta!r}")
    beta = Fraction(beta) if isinstance(beta, int) else beta
    zero, one = _numbers(beta)
    return reference.Network("softmax", (_layer(d, (-beta * one, beta * one), (1, -1), zero, one),))


def build_stack(d: int, beta: Any) -> reference.Network:
    """``build``'s layer, then a layer of two all-zero heads with W_O = 0; residual."""
    first = build(d, beta).layers[0]
    zero, one = _numbers(first.W_Q[0][0][task.TRIGGER_FLAG])
    Z = reference.zeros(d, d, zero)
    second = reference.Layer((Z, Z), (Z, Z), (Z, Z), reference.zeros(d, 2 * d, zero))
    return reference.Network("softmax", (first, second), residual=True)


def build_trigger_parking(d: int, beta: Any) -> reference.Network:
    """Two heads: W_K = I, uniform rows off the trigger; at the trigger head 1 scores itself -beta,
    head 2 +beta; W_V = I, W_O = [M, -M] with M = E[trigger, BOS] + I on contents and content flag."""
    _check(d)
    beta = Fraction(beta) if isinstance(beta, int) else beta
    zero, one = _numbers(beta)
    t = task.TRIGGER_FLAG
    queries = []
    for sign in (-1, 1):
        W_Q = [[zero] * d for _ in range(d)]
        W_Q[t][t] = sign * beta * one
        queries.append(reference.as_matrix(W_Q))
    M = [[zero] * d for _ in range(d)]
    M[t][task.BOS_FLAG] = one
    for c in list(range(task.CONTENT_START, d - 1)) + [task.content_flag(d)]:
        M[c][c] = one
    W_O = tuple(tuple(M[r][c] if c < d else -M[r][c - d] for c in range(2 * d)) for r in range(d))
    eye = reference.identity(d, zero, one)
    layer = reference.Layer(tuple(queries), (eye, eye), (eye, eye), W_O)
    return reference.Network("softmax", (layer,))


# ----------------------------------------------------------------------------------------
# Closed forms of ``build`` (exp: any function from multiples of beta to a field, as in
# ``softmax_head``; sympy by default).


def _exp(exp: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    if exp is not None:
        return exp
    import sympy

    return lambda x: sympy.exp(sympy.sympify(x))


def bos_mass(beta: Any, i: int, head: int, at_trigger: bool, exp: Callable[[Any], Any] | None = None) -> Any:
    """a_i0 of head 0 or 1 at query i >= 1: 1/(i+1) off the trigger; e^-+b/(e^-+b + i) at it."""
    if not at_trigger:
        return _numbers(beta)[1] / (i + 1)
    w = _exp(exp)(-beta if head == 0 else beta)
    return w / (w + i)


def trigger_factor(beta: Any, j: int, exp: Callable[[Any], Any] | None = None) -> Any:
    """The trigger's error over S_j: 1/(j + e^-b) - 1/(j + e^b) - 1/j (zero error elsewhere)."""
    e = _exp(exp)
    return 1 / (e(-beta) + j) - 1 / (e(beta) + j) - _numbers(beta)[1] / j


def worst_error_at(beta: Any, j: int, exp: Callable[[Any], Any] | None = None) -> Any:
    """j |factor(j)| = e^-b/(j + e^-b) + j/(j + e^b): the worst-case error with the trigger at j
    (all-ones content)."""
    e = _exp(exp)
    return e(-beta) / (e(-beta) + j) + j / (e(beta) + j)


def worst_error_terms(beta: Any, L: int, exp: Callable[[Any], Any] | None = None) -> list[Any]:
    """``worst_error_at`` for j = 2..L-1; the worst case over the task is their max."""
    return [worst_error_at(beta, j, exp) for j in range(2, L)]


# ----------------------------------------------------------------------------------------
# Exact interpolating heads (zero error, no sink anywhere).


def interpolation_weights(L: int, rhos: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """n with sum_h n_h = 0 and sum_h n_h/(rho_h + j) = 1/j for j = 2..L-1, exactly; BadInput
    when the rational linear system has no solution (or many)."""
    import sympy

    rhos = [Fraction(r) for r in rhos]
    if any(r <= 0 for r in rhos) or len(set(rhos)) != len(rhos):
        raise BadInput(f"rho values must be distinct and > 0, got {[str(r) for r in rhos]}")
    R = [sympy.Rational(r.numerator, r.denominator) for r in rhos]
    rows = [[sympy.Integer(1)] * len(R)] + [[1 / (r + j) for r in R] for j in range(2, L)]
    rhs = [sympy.Integer(0)] + [sympy.Rational(1, j) for j in range(2, L)]
    solutions = sympy.linsolve((sympy.Matrix(rows), sympy.Matrix(rhs)))
    if len(solutions) != 1 or any(s.free_symbols for s in next(iter(solutions))):
        raise BadInput(f"no unique exact interpolation for L = {L} with rho = {[str(r) for r in rhos]}")
    return tuple(Fraction(int(s.p), int(s.q)) for s in next(iter(solutions)))


def default_rhos(L: int) -> tuple[Fraction, ...]:
    """(1, 6) at L = 4 (two heads); otherwise 1, 2, ..., L-1 (L - 1 heads)."""
    return (Fraction(1), Fraction(6)) if L == 4 else tuple(Fraction(h) for h in range(1, L))


def build_interpolating(d: int, L: int, rhos: Sequence[Fraction] | None = None) -> reference.Network:
    """One layer of len(rhos) heads, zero error on every input of length L (sympy weights)."""
    import sympy

    _check(d)
    task.TaskConfig(d=d, L=L)  # L >= 4, else bad input
    rhos = default_rhos(L) if rhos is None else tuple(Fraction(r) for r in rhos)
    n = interpolation_weights(L, rhos)
    zero, one = sympy.Integer(0), sympy.Integer(1)
    scores = [sympy.log(sympy.Rational(r.numerator, r.denominator)) for r in rhos]
    weights = [sympy.Rational(x.numerator, x.denominator) for x in n]
    return reference.Network("softmax", (_layer(d, scores, weights, zero, one),))
