"""Sufficiency: a softmax head with a BOS logit gap beta, and its closed forms.

With E[r, c] the matrix with a single 1 in row r, column c (one score dimension, row 0):

    W_Q = beta * (E[0, BOS] + E[0, content] - E[0, trigger])
    W_K = E[0, BOS]
    W_V = I - E[BOS, BOS],   W_O = I

(W_K x_k)_0 = [k = 0], so every non-BOS key scores 0 and BOS scores beta * (W_Q x_i)_0 / beta:
+beta at BOS and content queries, -beta at the trigger query. Softmax then gives, at a query
i >= 1 that sees keys 0..i,

    non-trigger:  a_i0 = e^b / (e^b + i),    a_ik = 1 / (e^b + i)      (k = 1..i)
    trigger j:    a_j0 = e^-b / (e^-b + j),  a_jk = 1 / (e^-b + j)

(the BOS query has a_00 = 1). BOS's value is 0 and every other value is x_k itself, so the
output is o_i = sum_{k=1..i} x_k / (e^b + i) off the trigger and o_j = mean * j / (j + e^-b) at
it. The error against the single-layer target (y_i = 0, y_j = mean) is

    off the trigger:  o_i - y_i = sum_{k=1..i} x_k / (e^b + i)
    at the trigger:   o_j - y_j = -mean * e^-b / (j + e^-b)

On the content-flag coordinate at a query i < j every one of the i tokens carries flag 1, so
that error is i / (e^b + i) = 1 - a_i0 exactly: the error goes to 0 only as the BOS mass at
non-trigger queries goes to 1 (beta -> oo), and for every finite beta it is positive. With
content in [-1, 1] every coordinate sum has |.| <= i, so the worst-case max-abs error over all
inputs of length L is max((L-1)/(e^b + L-1), e^-b/(2 + e^-b)), attained by all-ones content.

The closed forms return sympy expressions, so they work for a numeric beta and for a symbol.
Each also takes an optional ``exp``: any function from gaps (multiples of beta) to numbers of a
field, so the same formulas can be evaluated exactly in Q(e^beta) by ``constructions.verify``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

from . import reference, task
from .errors import BadInput


def _sym(x: Any):
    """A number (int, Fraction, float) or sympy expression as a sympy expression, exactly."""
    import sympy

    if isinstance(x, Fraction):
        return sympy.Rational(x.numerator, x.denominator)
    return sympy.sympify(x)


def _check(d: int, beta: Any) -> None:
    if not isinstance(d, int) or isinstance(d, bool) or d < 4:
        raise BadInput(f"construction field 'd' must be an integer >= 4, got {d!r}")
    if isinstance(beta, bool):
        raise BadInput(f"construction field 'beta' must be a number, got {beta!r}")
    if isinstance(beta, (int, float, Fraction)) and not beta > 0:
        raise BadInput(f"construction field 'beta' must be > 0 (the BOS logit gap), got {beta!r}")


def build(d: int, beta: Any) -> reference.Network:
    """Single layer, single head, kind "softmax", with BOS logit gap ``beta``.

    ``beta`` may be an int or Fraction (exact weights), a float, or a sympy expression.
    """
    _check(d, beta)
    if isinstance(beta, int):
        beta = Fraction(beta)
    zero, one = Fraction(0), Fraction(1)
    try:
        import sympy

        if isinstance(beta, sympy.Basic):  # symbolic weights: keep every entry a sympy number
            zero, one = sympy.Integer(0), sympy.Integer(1)
    except ImportError:  # pragma: no cover
        pass
    W_Q = [[zero] * d for _ in range(d)]
    W_Q[0][task.BOS_FLAG] = beta * one
    W_Q[0][task.content_flag(d)] = beta * one
    W_Q[0][task.TRIGGER_FLAG] = -beta * one
    W_K = [[zero] * d for _ in range(d)]
    W_K[0][task.BOS_FLAG] = one
    W_V = [list(r) for r in reference.identity(d, zero, one)]
    W_V[task.BOS_FLAG][task.BOS_FLAG] = zero  # BOS's value is 0
    return reference.single_head("softmax", W_Q, W_K, W_V, reference.identity(d, zero, one))


# ----------------------------------------------------------------------------------------
# Closed forms (sympy expressions in beta and the query position).


def _sympy_exp(x: Any):
    import sympy

    return sympy.exp(_sym(x))


def _numbers(exp: Callable[[Any], Any] | None) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """(exp, number conversion): sympy by default; with a caller's exp, ints become Fractions
    (so that 0 / j stays exact) and other entries stay as they are."""
    return (_sympy_exp, _sym) if exp is None else (exp, _exact)


def _exact(x: Any) -> Any:
    return Fraction(x) if isinstance(x, int) and not isinstance(x, bool) else x


def bos_mass(beta: Any, i: int, at_trigger: bool = False, exp: Callable[[Any], Any] | None = None):
    """a_i0 at query ``i``: e^b/(e^b + i) off the trigger, e^-b/(e^-b + i) at it (1 at i = 0)."""
    exp, num = _numbers(exp)
    if i == 0:
        return num(1)
    weight = exp(-beta if at_trigger else beta)
    return weight / (weight + i)


def output(beta: Any, X: Sequence[Sequence[Any]], j: int | None = None,
           exp: Callable[[Any], Any] | None = None) -> list[list[Any]]:
    """The head's output rows on sequence ``X`` in closed form:
    sum_{k<=i} x_k * (1 - a_i0) / i at every query i >= 1, 0 at BOS."""
    j = task.trigger_position(X) if j is None else j
    _, num = _numbers(exp)
    d = len(X[0])
    rows = [[num(0)] * d]
    running = [num(0)] * d  # sum_{k=1..i} x_k
    for i in range(1, len(X)):
        running = [s + num(x) for s, x in zip(running, X[i])]
        non_bos = 1 - bos_mass(beta, i, i == j, exp)  # = i / (e^{+-b} + i)
        rows.append([s * non_bos / i for s in running])
    return rows


def error(beta: Any, X: Sequence[Sequence[Any]], j: int | None = None,
          exp: Callable[[Any], Any] | None = None) -> list[list[Any]]:
    """Output minus single-layer target, per position and coordinate, in closed form:
    sum_{k<=i} x_k/(e^b + i) off the trigger, -mean * e^-b/(j + e^-b) at it, 0 at BOS."""
    j = task.trigger_position(X) if j is None else j
    exp, num = _numbers(exp)
    d = len(X[0])
    rows = [[num(0)] * d]
    running = [num(0)] * d
    for i in range(1, len(X)):
        running = [s + num(x) for s, x in zip(running, X[i])]
        if i == j:
            rows.append([-(s / j) * bos_mass(beta, j, True, exp) for s in running])
        else:
            rows.append([s / (exp(beta) + i) for s in running])
    return rows


def content_flag_error(beta: Any, i: int, exp: Callable[[Any], Any] | None = None):
    """The error on the content-flag coordinate at a non-trigger query i < j: i/(e^b + i)."""
    exp, num = _numbers(exp)
    return num(i) / (exp(beta) + i)


def max_error_terms(beta: Any, L: int, exp: Callable[[Any], Any] | None = None) -> tuple[Any, Any]:
    """The two candidates of ``max_error``: (L-1)/(e^b + L-1) and e^-b/(2 + e^-b)."""
    exp, num = _numbers(exp)
    return num(L - 1) / (exp(beta) + (L - 1)), exp(-beta) / (exp(-beta) + 2)


def max_error(beta: Any, L: int):
    """Worst-case max-abs error over all sequences of length L with content in [-1, 1]:
    max((L-1)/(e^b + L-1), e^-b/(2 + e^-b)); attained by all-ones content (first term at the
    last query, after the trigger; second at the trigger j = 2)."""
    import sympy

    return sympy.Max(*max_error_terms(beta, L))


@dataclass(frozen=True)
class TradeOff:
    """Symbolic check that the error vanishes only as the non-trigger BOS mass tends to 1."""

    error_is_one_minus_bos_mass: bool  # i/(e^b+i) - (1 - a_i0) simplifies to 0 for symbolic b, i
    error_positive_for_finite_beta: bool  # i/(e^b+i) > 0 for real b, i >= 1
    bos_mass_limit: Any  # lim_{b->oo} a_i0 (expect 1)
    max_error_limit: Any  # lim_{b->oo} max_error(b, L) for symbolic L (expect 0)
    trigger_bos_mass_limit: Any  # lim_{b->oo} a_j0 at the trigger (expect 0)

    @property
    def holds(self) -> bool:
        return (self.error_is_one_minus_bos_mass and self.error_positive_for_finite_beta
                and self.bos_mass_limit == 1 and self.max_error_limit == 0
                and self.trigger_bos_mass_limit == 0)


def trade_off() -> TradeOff:
    """Prove, in sympy with symbols beta (real) and i, L (positive integers), that
    error = 1 - BOS mass at non-trigger queries, that it is positive for every finite beta,
    and that error -> 0 and BOS mass -> 1 together as beta -> oo."""
    import sympy

    b = sympy.Symbol("beta", real=True)
    i = sympy.Symbol("i", integer=True, positive=True)
    L = sympy.Symbol("L", integer=True, positive=True)
    e = content_flag_error(b, i)
    mass = bos_mass(b, i)
    identity = sympy.simplify(e - (1 - mass)) == 0
    positive = bool(e.is_positive)
    worst = [sympy.limit(term, b, sympy.oo) for term in max_error_terms(b, L)]
    return TradeOff(
        error_is_one_minus_bos_mass=bool(identity),
        error_positive_for_finite_beta=positive,
        bos_mass_limit=sympy.limit(mass, b, sympy.oo),
        max_error_limit=sympy.Max(*worst),
        trigger_bos_mass_limit=sympy.limit(bos_mass(b, i, at_trigger=True), b, sympy.oo),
    )
