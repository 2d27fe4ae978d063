"""Linear SMT-LIB facts as exact rows ``coeffs . x  op  rhs`` (op one of <=, <, =), in Fractions.

The LP certificates (``farkas``) are checked against the very text a step emits, so that the
exact check and an SMT solver read the same query. Only the terms the encodings write are
accepted: numerals, constants, + - * / with at most one non-constant factor per product; anything
else (a product of two unknowns) raises ``NotLinear``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

Linear = dict  # variable name -> Fraction; the key "" holds the constant term


class NotLinear(ValueError):
    pass


@dataclass(frozen=True)
class Row:
    coeffs: tuple[tuple[str, Fraction], ...]  # sorted by variable name, no zero coefficients
    op: str  # "<=", "<" or "="
    rhs: Fraction


def _tokens(text: str) -> list[str]:
    return text.replace("(", " ( ").replace(")", " ) ").split()


def _sexpr(tokens: list[str], pos: int = 0):
    if tokens[pos] != "(":
        return tokens[pos], pos + 1
    out, pos = [], pos + 1
    while tokens[pos] != ")":
        item, pos = _sexpr(tokens, pos)
        out.append(item)
    return out, pos + 1


def _number(atom: str) -> Fraction | None:
    try:
        return Fraction(atom)
    except ValueError:
        return None


def _combine(parts: list[Linear], signs: list[int]) -> Linear:
    out: Linear = {}
    for part, sign in zip(parts, signs):
        for v, c in part.items():
            out[v] = out.get(v, Fraction(0)) + sign * c
    return {v: c for v, c in out.items() if c != 0}


def _const(term: Linear) -> Fraction | None:
    """The value of a constant term, or None when it has a variable."""
    return term.get("", Fraction(0)) if set(term) <= {""} else None


def _term(e) -> Linear:
    if isinstance(e, str):
        n = _number(e)
        return ({"": n} if n else {}) if n is not None else {e: Fraction(1)}
    op, args = e[0], [_term(a) for a in e[1:]]
    if op == "+":
        return _combine(args, [1] * len(args))
    if op == "-":
        return _combine(args, [-1]) if len(args) == 1 else _combine(args, [1] + [-1] * (len(args) - 1))
    if op == "*":
        out, scale = {"": Fraction(1)}, Fraction(1)
        for a in args:
            c = _const(a)
            if c is not None:
                scale *= c
            elif _const(out) is not None and out.get("", 0) == 1:
                out = a
            else:
                raise NotLinear(f"product of two unknowns in {e!r}")
        return {v: scale * c for v, c in out.items() if scale * c != 0}
    if op == "/" and len(args) == 2 and _const(args[1]):
        return {v: c / _const(args[1]) for v, c in args[0].items()}
    raise NotLinear(f"not a linear term: {e!r}")


@lru_cache(maxsize=200_000)
def parse_fact(fact: str) -> Row:
    """One asserted fact (the text inside ``(assert ...)``) as a row; facts repeat across the
    box LPs of an instance, so parses are cached."""
    e, _ = _sexpr(_tokens(fact))
    if not isinstance(e, list) or len(e) != 3 or e[0] not in ("<=", ">=", "<", ">", "="):
        raise NotLinear(f"not a linear comparison: {fact}")
    op, lhs, rhs = e[0], _term(e[1]), _term(e[2])
    diff = _combine([lhs, rhs], [1, -1]) if op in ("<=", "<", "=") else _combine([rhs, lhs], [1, -1])
    const = diff.pop("", Fraction(0))
    return Row(tuple(sorted(diff.items())), {">=": "<=", ">": "<"}.get(op, op), -const)


def parse_facts(facts: list[str]) -> list[Row]:
    return [parse_fact(f) for f in facts]
