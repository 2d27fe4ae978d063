"""Exact verification of the constructions on every sequence of a finite instance.

A finite instance fixes d, L and a small set of rational content values; ``task.enumerate_sequences``
lists every sequence (all trigger positions, all contents). Each one goes through the exact
reference evaluator (``reference.forward``), never a float:

- ``verify_sink_free`` (ReLU heads and stacks): Fractions. The verdict is "verified exactly" when
  every output equals the task target and every attention weight on BOS is 0, at every query,
  head and layer; otherwise "failed", with the worst sequence.
- ``verify_softmax`` (the BOS-gap head): exp is not rational, so the evaluator runs in the field
  Q(t) with t = e^beta (``ExpRational``; beta rational, so t is transcendental by
  Lindemann-Weierstrass and Q(e^beta) is isomorphic to the rational functions Q(t): an identity
  there is an identity of real numbers). The verdict is "verified exactly" when, on every
  sequence, the evaluator's attention on BOS and its output error equal the closed forms of
  ``constructions.softmax_head`` identically in t, and every |error| is at most the closed-form
  worst case ``max_error(beta, L)`` (by exact equality with the bound, or by certified interval
  arithmetic, Arb balls, strictly below it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Sequence

from . import attention, balls, reference, softmax_head, task
from .errors import BadInput, NotExpressible
from .numbers import interval_down, interval_up

VERIFIED, FAILED = "verified exactly", "failed"


@dataclass(frozen=True)
class Verdict:
    """Outcome of one exact verification run (numbers as exact strings and as floats)."""

    construction: str
    verdict: str  # "verified exactly" | "failed"
    claim: str  # what was checked, one line
    d: int
    L: int
    values: tuple[str, ...]
    sequences: int  # sequences checked
    worst_error: str  # max |output - target| over the instance, exact (or exact form + enclosure)
    worst_error_float: float
    largest_bos_weight: str  # max a_i0 over every query >= 1 (and head, layer)
    largest_bos_weight_float: float
    worst_sequence: tuple[tuple[str, ...], ...]  # rows of the sequence with the worst error
    worst_trigger: int
    failure: str  # first failure found, one line ("" when verified)
    seconds: float
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict == VERIFIED


def _rows(X: Sequence[Sequence[Any]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(str(v) for v in row) for row in X)


# ----------------------------------------------------------------------------------------
# ReLU (and any kind expressible in Fractions): zero error, zero BOS weight.


def verify_sink_free(net: reference.Network, cfg: task.TaskConfig,
                     values: Iterable[Any] = task.DEFAULT_VALUES, label: str = "relu") -> Verdict:
    """Every sequence of the instance: output == target exactly, and a_i0 == 0 everywhere."""
    if cfg.d != net.d or cfg.residual != net.residual:
        raise BadInput(f"task config (d={cfg.d}, residual={cfg.residual}) does not match the "
                       f"network (d={net.d}, residual={net.residual})")
    values = tuple(values)
    start = time.perf_counter()
    worst_err, worst_bos, worst = Fraction(-1), Fraction(0), None
    failure, n = "", 0
    for X, j in task.enumerate_sequences(cfg, values):
        n += 1
        Y, patterns = reference.forward(net, X, "fraction")
        T = task.target(X, j, net.residual)
        err = max(abs(y - t) for yr, tr in zip(Y, T) for y, t in zip(yr, tr))
        bos = max(abs(head[i][0]) for layer in patterns for head in layer for i in range(1, len(X)))
        bos_query = max(abs(head[0][0]) for layer in patterns for head in layer)
        worst_bos = max(worst_bos, bos, bos_query)
        if err > worst_err:
            worst_err, worst = err, (X, j)
        if not failure and (err != 0 or bos != 0 or bos_query != 0):
            failure = (f"sequence {n} (trigger {j}): max |output - target| = {err}, "
                       f"max BOS weight = {max(bos, bos_query)}")
    X, j = worst
    return Verdict(
        construction=label, verdict=FAILED if failure else VERIFIED,
        claim="output equals the target exactly and attention on BOS is 0 at every query, head and layer",
        d=cfg.d, L=cfg.L, values=tuple(str(v) for v in values), sequences=n,
        worst_error=str(worst_err), worst_error_float=float(worst_err),
        largest_bos_weight=str(worst_bos), largest_bos_weight_float=float(worst_bos),
        worst_sequence=_rows(X), worst_trigger=j, failure=failure,
        seconds=time.perf_counter() - start,
    )


# ----------------------------------------------------------------------------------------
# Exact arithmetic in Q(e^beta).


def _padd(p: dict, q: dict, sign: int = 1) -> dict:
    out = dict(p)
    for k, c in q.items():
        v = out.get(k, 0) + sign * c
        if v:
            out[k] = v
        else:
            out.pop(k, None)
    return out


def _pmul(p: dict, q: dict) -> dict:
    out: dict = {}
    for a, c in p.items():
        for b, e in q.items():
            out = _padd(out, {a + b: c * e})
    return out


def _pscale(p: dict, c: Fraction) -> dict:
    return {k: v * c for k, v in p.items()} if c else {}


def _pstr(p: dict) -> str:
    if not p:
        return "0"
    terms = []
    for k in sorted(p, reverse=True):
        c = p[k]
        power = "" if k == 0 else ("E" if k == 1 else f"E^{k}")
        coeff = str(c) if (k == 0 or c not in (1, -1)) else ("-" if c == -1 else "")
        terms.append(f"{coeff}{'*' if coeff not in ('', '-') and power else ''}{power}")
    return " + ".join(terms).replace("+ -", "- ")


class ExpRational:
    """An element of Q(t), t = e^beta, as num/den with Laurent polynomials {power: Fraction}.

    Fractions (and ints) mix in as constants. Equality is exact (cross-multiplication), so a
    difference is 0 here iff it is 0 as a real number (t is transcendental). Fractions with the
    same denominator add without growing it, which keeps softmax rows (all over one sum) small.
    """

    __slots__ = ("num", "den")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, num: dict, den: dict | None = None):
        if den is not None and not den:
            raise ZeroDivisionError("ExpRational with a zero denominator")
        self.num = {k: Fraction(v) for k, v in num.items() if v}
        self.den = {0: Fraction(1)} if den is None else {k: Fraction(v) for k, v in den.items() if v}

    @classmethod
    def power(cls, n: int) -> "ExpRational":
        return cls({n: Fraction(1)})

    @staticmethod
    def _lift(x: Any) -> "ExpRational":
        if isinstance(x, ExpRational):
            return x
        if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
            return ExpRational({0: Fraction(x)})
        raise TypeError(f"cannot mix ExpRational with {type(x).__name__}")

    def __add__(self, other: Any) -> "ExpRational":
        o = self._lift(other)
        if self.den == o.den:
            return ExpRational(_padd(self.num, o.num), self.den)
        return ExpRational(_padd(_pmul(self.num, o.den), _pmul(o.num, self.den)), _pmul(self.den, o.den))

    __radd__ = __add__

    def __neg__(self) -> "ExpRational":
        return ExpRational(_pscale(self.num, Fraction(-1)), self.den)

    def __sub__(self, other: Any) -> "ExpRational":
        return self + (-self._lift(other))

    def __rsub__(self, other: Any) -> "ExpRational":
        return self._lift(other) - self

    def __mul__(self, other: Any) -> "ExpRational":
        if isinstance(other, (int, Fraction)) and not isinstance(other, bool):
            return ExpRational(_pscale(self.num, Fraction(other)), self.den)
        o = self._lift(other)
        return ExpRational(_pmul(self.num, o.num), _pmul(self.den, o.den))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> "ExpRational":
        o = self._lift(other)
        if not o.num:
            raise ZeroDivisionError("division by zero in Q(e^beta)")
        if self.den == o.den:  # (a/z) / (b/z) = a / b
            return ExpRational(self.num, o.num)
        return ExpRational(_pmul(self.num, o.den), _pmul(self.den, o.num))

    def __rtruediv__(self, other: Any) -> "ExpRational":
        return self._lift(other) / self

    def __eq__(self, other: Any) -> bool:
        try:
            o = self._lift(other)
        except TypeError:
            return NotImplemented
        return _pmul(self.num, o.den) == _pmul(o.num, self.den)

    def is_zero(self) -> bool:
        return not self.num

    def rational(self) -> Fraction:
        """This element as a Fraction; ``NotExpressible`` unless it is a constant."""
        if not self.num:
            return Fraction(0)
        if set(self.num) - {0} or set(self.den) != {0}:
            raise NotExpressible(f"{self!r} is not a rational constant")
        return self.num.get(0, Fraction(0)) / self.den[0]

    def key(self) -> tuple:
        """A hashable form of this representation (equal keys imply equal values)."""
        return tuple(sorted(self.num.items())), tuple(sorted(self.den.items()))

    def enclose(self, t: Any) -> Any:
        """A certified ball (``balls``) containing the value at t = ``t`` (a ball)."""
        def poly(p: dict) -> Any:
            return sum((balls.ball(c) * t ** k for k, c in p.items()), balls.ball(0))

        return poly(self.num) / poly(self.den)

    def __repr__(self) -> str:
        return f"({_pstr(self.num)})/({_pstr(self.den)})" if self.den != {0: 1} else f"{_pstr(self.num)}"


def exp_field_ops(beta: Fraction) -> attention.Ops:
    """Backend for ``reference.forward`` over Q(e^beta): exp(n * beta) = t^n for integers n.
    Any other exponent is not in this field and raises ``NotExpressible``."""
    beta = _rational_beta(beta)

    def exp(x: Any) -> ExpRational:
        if isinstance(x, ExpRational):  # a score computed from a stream that holds field elements
            x = x.rational()
        n = Fraction(x) / beta
        if n.denominator != 1:
            raise NotExpressible(f"exp({x}) is not a power of e^{beta}")
        return ExpRational.power(int(n))

    def no(op: str):
        def fail(_x: Any) -> Any:
            raise NotExpressible(f"{op} is not expressible in Q(e^beta)")
        return fail

    return attention.Ops("exp-field", ExpRational({}), ExpRational({0: 1}), exp=exp,
                         relu=no("relu"), sigmoid=no("sigmoid"))


def _rational_beta(beta: Any) -> Fraction:
    if isinstance(beta, bool) or not isinstance(beta, (int, Fraction)) or not beta > 0:
        raise BadInput(f"exact softmax verification needs a rational beta > 0, got {beta!r}")
    return Fraction(beta)


ENCLOSURE_BITS = 128  # Arb working precision while a verifier encloses Q(e^beta) values (bits)


def enclosure_precision(fn):
    """Run ``fn`` with Arb's working precision at ``ENCLOSURE_BITS`` (at least), restored on
    return: never a global change, so other ball users keep their precision."""
    import functools

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with balls.precision(ENCLOSURE_BITS):
            return fn(*args, **kwargs)

    return wrapped


def _exact_t(beta: Fraction) -> Any:
    """e^beta as a ball at the working precision (``enclosure_precision``)."""
    return balls.exp(balls.ball(beta))


# ----------------------------------------------------------------------------------------
# Softmax: evaluator == closed forms in Q(e^beta), |error| <= closed-form bound.


@enclosure_precision
def verify_softmax(net: reference.Network, beta: Any, cfg: task.TaskConfig,
                   values: Iterable[Any] = task.DEFAULT_VALUES, label: str = "softmax") -> Verdict:
    """Check the BOS-gap head against ``softmax_head``'s closed forms on every sequence."""
    beta = _rational_beta(beta)
    if net.kind != "softmax" or len(net.layers) != 1 or net.layers[0].heads != 1 or net.residual:
        raise BadInput("verify_softmax checks a single-layer, single-head, non-residual softmax network")
    if cfg.d != net.d or cfg.residual:
        raise BadInput(f"task config (d={cfg.d}, residual={cfg.residual}) does not match the network (d={net.d})")
    values = tuple(values)
    ops = exp_field_ops(beta)
    t = _exact_t(beta)
    bounds = softmax_head.max_error_terms(beta, cfg.L, ops.exp)
    bound_low = max(balls.lo(b.enclose(t)) for b in bounds)  # max(b1, b2) >= this, certified
    start = time.perf_counter()
    worst_hi, worst, largest_bos, failure, n = -1.0, None, None, "", 0
    min_mass_off, max_mass_at = None, None  # BOS mass: min off the trigger, max at it (intervals)
    boxes: dict = {}  # enclosures of values already seen (the same few recur across sequences)

    def enclose(x: ExpRational) -> Any:
        k = x.key()
        if k not in boxes:
            boxes[k] = x.enclose(t)
        return boxes[k]

    for X, j in task.enumerate_sequences(cfg, values):
        n += 1
        Y, patterns = reference.forward(net, X, ops)
        T = task.target(X, j)
        closed = softmax_head.error(beta, X, j, ops.exp)
        pattern = patterns[0][0]
        for i in range(1, len(X)):
            mass = pattern[i][0]
            if not failure and mass != softmax_head.bos_mass(beta, i, i == j, ops.exp):
                failure = f"sequence {n} (trigger {j}): BOS weight {mass} at query {i} differs from the closed form"
            box = enclose(mass)
            largest_bos = box if largest_bos is None or balls.hi(box) > balls.hi(largest_bos) else largest_bos
            if i == j:
                max_mass_at = box if max_mass_at is None or balls.hi(box) > balls.hi(max_mass_at) else max_mass_at
            else:
                min_mass_off = box if min_mass_off is None or balls.lo(box) < balls.lo(min_mass_off) else min_mass_off
            for c in range(cfg.d):
                e = Y[i][c] - T[i][c]
                if e.is_zero():
                    continue
                if not failure and e != closed[i][c]:
                    failure = (f"sequence {n} (trigger {j}): error {e} at position {i}, coordinate {c} "
                               f"differs from the closed form {closed[i][c]}")
                box = balls.magnitude(enclose(e))
                if balls.hi(box) > worst_hi:
                    worst_hi, worst = interval_up(box), (X, j, e, box)
                on_bound = any(e == b or e == -b for b in bounds)
                if not failure and not on_bound and not balls.hi(box) < bound_low:
                    failure = (f"sequence {n} (trigger {j}): |error| at position {i}, coordinate {c} "
                               f"is not certified below the closed-form bound max_error(beta, L)")
        if not failure and any(Y[0][c] != T[0][c] for c in range(cfg.d)):
            failure = f"sequence {n} (trigger {j}): BOS output differs from 0"
    X, j, e, box = worst if worst else (X, j, ExpRational({}), balls.magnitude(ExpRational({}).enclose(t)))
    return Verdict(
        construction=label, verdict=FAILED if failure else VERIFIED,
        claim=("evaluator in Q(e^beta) equals the closed-form BOS mass and error on every sequence, "
               "and max |error| <= max((L-1)/(e^b+L-1), e^-b/(2+e^-b)) (certified)"),
        d=cfg.d, L=cfg.L, values=tuple(str(v) for v in values), sequences=n,
        worst_error=f"{e!r} with E = e^{beta}, in {box}",
        worst_error_float=interval_up(box),
        largest_bos_weight=f"in {largest_bos}", largest_bos_weight_float=interval_up(largest_bos),
        worst_sequence=_rows(X), worst_trigger=j, failure=failure,
        seconds=time.perf_counter() - start,
        details={
            "beta": str(beta),
            "closed_form_bound": max(interval_up(b.enclose(t)) for b in bounds),
            "min_bos_mass_off_trigger": interval_down(min_mass_off),
            "max_bos_mass_at_trigger": interval_up(max_mass_at),
        },
    )
