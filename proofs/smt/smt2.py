"""SMT-LIB 2 text: the terms the encodings are written in, and the files ``--emit-smt2`` writes.

The encodings build SMT-LIB text directly (building z3 Python terms was the main cost in the
feasibility study, and the text is what the hard-killed worker and a second solver read).
Sums and products are guarded: an empty sum is ``0.0`` and a one-term sum is the term itself,
never the one-argument ``(+ x)`` that z3's ``to_smt2`` can emit and cvc5 rejects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Iterable

from constructions.files import write_atomic

ZERO = "0.0"


def num(x) -> str:
    """An exact rational constant."""
    x = Fraction(x)
    body = f"{abs(x.numerator)}.0" if x.denominator == 1 else f"(/ {abs(x.numerator)}.0 {x.denominator}.0)"
    return f"(- {body})" if x < 0 else body


def add(*terms: str) -> str:
    terms = [t for t in terms if t != ZERO]
    if not terms:
        return ZERO
    return terms[0] if len(terms) == 1 else f"(+ {' '.join(terms)})"


def total(terms: Iterable[str]) -> str:
    return add(*terms)


def mul(*factors: str) -> str:
    if any(f == ZERO for f in factors):
        return ZERO
    factors = [f for f in factors if f != "1.0"]
    if not factors:
        return "1.0"
    return factors[0] if len(factors) == 1 else f"(* {' '.join(factors)})"


def scale(c, term: str) -> str:
    """c * term for a rational constant c (0 and 1 simplified away)."""
    c = Fraction(c)
    if c == 0:
        return ZERO
    return term if c == 1 else mul(num(c), term)


def sub(a: str, b: str) -> str:
    if b == ZERO:
        return a
    return f"(- {a} {b})"


def le(a: str, b: str) -> str:
    return f"(<= {a} {b})"


def lt(a: str, b: str) -> str:
    return f"(< {a} {b})"


def and_(*parts: str) -> str:
    parts = [p for p in parts if p != "true"]
    if not parts:
        return "true"
    return parts[0] if len(parts) == 1 else f"(and {' '.join(parts)})"


def or_(*parts: str) -> str:
    if not parts:
        return "false"
    return parts[0] if len(parts) == 1 else f"(or {' '.join(parts)})"


def abs_le(x: str, bound: str) -> list[str]:
    """|x| <= bound as two linear facts."""
    return [le(x, bound), le(f"(- {x})" if x != ZERO else ZERO, bound)]


@dataclass
class Script:
    """Declarations plus assertions of one query (no check-sat: the runner adds the check)."""

    decls: dict[str, str] = field(default_factory=dict)  # name -> sort
    asserts: list[str] = field(default_factory=list)

    def real(self, name: str) -> str:
        self.decls.setdefault(name, "Real")
        return name

    def add(self, *facts: str) -> None:
        for f in facts:
            if f != "true":
                self.asserts.append(f)

    def text(self, declared: dict[str, str] | None = None) -> str:
        """The script; constants already in ``declared`` (a base script's) are not redeclared."""
        lines = [f"(declare-const {n} {s})" for n, s in self.decls.items() if not declared or n not in declared]
        lines += [f"(assert {a})" for a in self.asserts]
        return "\n".join(lines) + "\n"

    def extended(self, extra: "Script") -> "Script":
        out = Script(dict(self.decls), list(self.asserts))
        for name, sort in extra.decls.items():
            out.decls.setdefault(name, sort)
        out.asserts += extra.asserts
        return out


def write_query(directory: str | Path, filename: str, script_text: str, header: dict[str, str]) -> Path:
    """One self-contained SMT-LIB 2 file: header comments (instance, step, expected answer),
    the script, ``(check-sat)``. Written atomically."""
    lines = [f"; {k}: {v}" for k, v in header.items()]
    body = "\n".join(lines) + "\n(set-logic ALL)\n" + script_text + "(check-sat)\n(exit)\n"
    return write_atomic(Path(directory) / filename, lambda f: f.write(body))
