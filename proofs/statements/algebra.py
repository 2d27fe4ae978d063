"""Small sympy tools shared by the statement modules: closing an identity, and checking a
non-negativity certificate.

An inequality ``target >= 0`` is *proved* here by a certificate: a list of terms
``coefficient * atom_1 * ... * atom_r`` with non-negative rational coefficients, where every
atom is an expression known to be >= 0, and ``target - sum(terms)`` simplifies to 0. Each atom
says why it is non-negative:

- ``premise``: a hypothesis of the statement (for example eta - delta >= 0 from |delta| <= eta);
- ``lemma:<name>``: the conclusion of another registered statement, accepted only when the
  running statement declares ``<name>`` among its citations (``CITES``, see ``verdict.timed``);
  whether that lemma is itself proved is settled by the registry, which makes a statement
  ``proved`` only if every statement it cites is proved in the same run;
- ``positive``: sympy itself decides ``is_nonnegative`` from the symbols' assumptions
  (ratios of exponentials, positive weights);
- ``interval``: a function of eta alone, checked non-negative on the stated eta interval by
  sympy (``minimum`` over the closed interval).

Nothing is taken on trust except premises and other lemmas, and the check can fail: a wrong
coefficient, a missing term or a sign error leaves a non-zero residual.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator, Sequence

import sympy


def canonical_sums(expr: sympy.Expr) -> sympy.Expr:
    """Rename the dummy index of every Sum to one symbol, so equal sums compare equal."""
    k = sympy.Symbol("k__", integer=True)
    return expr.replace(lambda e: isinstance(e, sympy.Sum) and len(e.variables) == 1,
                        lambda e: e.xreplace({e.variables[0]: k}))


def is_zero(expr: sympy.Expr) -> bool:
    """True only when sympy reduces ``expr`` to exactly 0 (never a numerical guess)."""
    expr = sympy.sympify(expr)
    for attempt in (sympy.cancel, sympy.simplify):
        reduced = attempt(canonical_sums(attempt(canonical_sums(expr))))
        if reduced == 0:
            return True
    return False


@dataclass(frozen=True)
class Atom:
    """An expression claimed >= 0, and why (see the module docstring)."""

    name: str
    expr: sympy.Expr
    why: str  # "premise" | "lemma:<name>" | "positive" | "interval"


_CITED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("cited", default=frozenset())


@contextlib.contextmanager
def citing(names: Sequence[str]) -> Iterator[None]:
    """While a statement is checked: the lemmas it declares, the only ones its atoms may cite."""
    token = _CITED.set(frozenset(names))
    try:
        yield
    finally:
        _CITED.reset(token)


def atom_holds(atom: Atom, eta: sympy.Symbol | None = None, interval: sympy.Interval | None = None) -> bool:
    """Whether the atom's non-negativity is justified: premises are; a lemma's conclusion only
    when the running statement declares that lemma (its verdict is checked by the registry)."""
    if atom.why == "premise":
        return True
    if atom.why.startswith("lemma:"):
        return atom.why.removeprefix("lemma:") in _CITED.get()
    if atom.why == "positive":
        return bool(sympy.sympify(atom.expr).is_nonnegative)
    if atom.why == "interval":
        if eta is None or interval is None or atom.expr.free_symbols - {eta}:
            return False
        return bool(sympy.minimum(atom.expr, eta, interval) >= 0)
    return False


Term = tuple[sympy.Expr, Sequence[str]]  # (coefficient, atom names)


def certificate(target: sympy.Expr, terms: Sequence[Term], atoms: Sequence[Atom],
                eta: sympy.Symbol | None = None, interval: sympy.Interval | None = None) -> tuple[bool, str]:
    """Check ``target >= 0`` from ``target == sum(coef * prod(atoms))``; returns (ok, why)."""
    table = {a.name: a for a in atoms}
    total = sympy.Integer(0)
    for coef, names in terms:
        coef = sympy.sympify(coef)
        if not (coef.is_number and coef.is_nonnegative):
            return False, f"coefficient {coef} is not a non-negative number"
        product = coef
        for name in names:
            if name not in table:
                return False, f"atom {name!r} is not declared"
            product *= table[name].expr
        total += product
    for name in {n for _, names in terms for n in names}:
        if not atom_holds(table[name], eta, interval):
            return False, f"atom {name!r} ({table[name].why}) is not justified"
    if not is_zero(target - total):
        return False, "target - sum(terms) did not simplify to 0"
    used = sorted({n for _, names in terms for n in names})
    whys = ", ".join(f"{n} [{table[n].why}]" for n in used)
    return True, f"{len(terms)} non-negative terms over atoms {whys}"


def adopt(expr, symbols: Sequence[sympy.Symbol]) -> sympy.Expr:
    """``expr`` (a string or expression) with its free symbols replaced, by name, by ``symbols``
    (which carry the assumptions a check relies on)."""
    expr = sympy.sympify(expr, locals={s.name: s for s in symbols})
    by_name = {s.name: s for s in symbols}
    return expr.xreplace({s: by_name[s.name] for s in expr.free_symbols if s.name in by_name})
