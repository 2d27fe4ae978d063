"""Reading the Coq development's statements back into Python, to hold them to their twins.

``source_sentences(folder)`` gives the Coq sentences of the ``.v`` files (comments removed);
``definitions`` and ``theorems`` pick out ``Definition NAME PARAMS : TYPE := BODY`` and
``Theorem NAME : TYPE``. ``parse_prop`` turns a proposition into a tree of binders
(forall / exists), implications, conjunctions, negations and atoms; an atom that is a relation
between real expressions (``<=``, ``<``, ``=``, ...) becomes its sympy difference, with the real
definitions of the development (``f_pre eta``, ``m_r eta``, ``rho d h c``) unfolded, so two
statements that differ only in how a constant is written compare equal, and any other change does
not. Nothing is executed: the expressions are parsed by the small grammar below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import sympy

from .source import COQ_DIR, project_files, strip_comments

BINDERS = ("forall", "exists")
# Real-valued definitions are unfolded when their parameters have these types (f_pre eta, m_r eta,
# rho d h c, cancel_error_bound L beta); scores, weights and outputs stay names.
_UNFOLDED_PARAMETERS = ("R", "nat", "head", "content")
_TOKEN = re.compile(r"\s*(\d+(?:%\w+)?|[A-Za-z_][\w.']*(?:%\w+)?|\*\*|[-+*/^(),~])")


@dataclass(frozen=True)
class Definition:
    name: str
    params: tuple[tuple[str, str], ...]  # (name, type) per parameter
    type: str
    body: str


def source_sentences(folder: Path = COQ_DIR) -> list[str]:
    """Every sentence of the development's files, whitespace collapsed, in compile order."""
    out = []
    for name in project_files(folder):
        text = strip_comments((Path(folder) / name).read_text())
        out += [" ".join(s.split()) for s in re.split(r"\.(?=\s|$)", text) if s.strip()]
    return out


def _params(text: str) -> tuple[tuple[str, str], ...]:
    out = []
    for names, typ in re.findall(r"\(([^():]+):([^()]+)\)", text):
        out += [(n, " ".join(typ.split())) for n in names.split()]
    return tuple(out)


def definitions(sentences: list[str]) -> dict[str, Definition]:
    found = {}
    for s in sentences:
        m = re.match(r"Definition (\w+)((?:\s*\([^()]*\))*)\s*:\s*(.+?)\s*:=\s*(.*)$", s)
        if m:
            found[m.group(1)] = Definition(m.group(1), _params(m.group(2)), m.group(3), m.group(4))
    return found


def theorems(sentences: list[str]) -> dict[str, str]:
    """Theorem / Lemma / Corollary name -> its statement."""
    found = {}
    for s in sentences:
        m = re.match(r"(?:Theorem|Lemma|Corollary) (\w+)\s*:\s*(.*)$", s)
        if m:
            found[m.group(1)] = m.group(2)
    return found


# ----------------------------------------------------------------------------------------
# Splitting propositions at the top level.


def _depths(text: str) -> list[int]:
    depth, out = 0, []
    for ch in text:
        if ch == ")":
            depth -= 1
        out.append(depth)
        if ch == "(":
            depth += 1
    return out


def strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and min(_depths(text)[1:-1] or [1]) >= 1:
        text = text[1:-1].strip()
    return text


def _has_binder(text: str) -> bool:
    """Whether a forall / exists stands outside parentheses in ``text``."""
    depths = _depths(text)
    return any(depths[m.start(2)] == 0 for m in re.finditer(r"(^|[\s(])(forall|exists)\s", text))


def split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses; once a part holds a binder outside
    parentheses, that binder takes the rest of the text (forall and exists reach as far right as
    they can)."""
    parts, start, depths, i = [], 0, _depths(text), 0
    while i < len(text):
        if depths[i] == 0 and text.startswith(sep, i) and not (sep == "->" and text[i - 1:i] == "<"):
            part = text[start:i].strip()
            if _has_binder(part):
                break
            parts.append(part)
            start = i = i + len(sep)
            continue
        i += 1
    return parts + [text[start:].strip()]


def _binder_comma(text: str) -> int:
    depths = _depths(text)
    return next(i for i, ch in enumerate(text) if ch == "," and depths[i] == 0)


def parse_prop(text: str, defs: dict[str, Definition]):
    """The proposition as a tree: ("forall"|"exists", binders, body), ("->", [hyps], concl),
    ("/\\", [parts]), ("~", p) and ("atom", canonical form)."""
    text = strip_parens(" ".join(text.split()))
    head = text.split(" ", 1)[0]
    if head in BINDERS:
        k = _binder_comma(text)
        return (head, _normal(text[len(head):k]), parse_prop(text[k + 1:], defs))
    parts = split_top(text, "->")
    if len(parts) > 1:
        return ("->", [parse_prop(p, defs) for p in parts[:-1]], parse_prop(parts[-1], defs))
    parts = split_top(text, "/\\")
    if len(parts) > 1:
        return ("/\\", [parse_prop(p, defs) for p in parts])
    if text.startswith("~"):
        return ("~", parse_prop(text[1:], defs))
    return ("atom", canonical_atom(text, defs))


def _normal(text: str) -> str:
    text = " ".join(text.split())
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", text))


_RELATIONS = ("<=", ">=", "<>", "<", ">", "=")


def canonical_atom(text: str, defs: dict[str, Definition]):
    """("rel", op, sympy difference) for a relation between real expressions, else ("text", text)."""
    if re.fullmatch(r"\(.*\)%nat", text):
        return ("text", _normal(text))
    depths = _depths(text)
    for i in range(len(text)):
        if depths[i]:
            continue
        op = next((r for r in _RELATIONS if text.startswith(r, i)), None)
        if op is None:
            continue
        if op == "<>":
            return ("text", _normal(text))
        try:
            lhs, rhs = expression(text[:i], defs), expression(text[i + len(op):], defs)
        except SyntaxError:
            return ("text", _normal(text))
        if op in (">=", ">"):
            lhs, rhs, op = rhs, lhs, {">=": "<=", ">": "<"}[op]
        return ("rel", op, rhs - lhs)
    return ("text", _normal(text))


def same(a, b) -> bool:
    """Two parsed propositions are the same statement (relations compared as sympy differences)."""
    if a[0] != b[0]:
        return False
    if a[0] == "atom":
        x, y = a[1], b[1]
        if x[0] != y[0] or x[0] == "text":
            return x == y
        if x[1] != y[1]:
            return False
        return identically_zero(x[2] - y[2]) or (x[1] == "=" and identically_zero(x[2] + y[2]))
    if a[0] in BINDERS:
        return a[1] == b[1] and same(a[2], b[2])
    if a[0] == "->":
        return len(a[1]) == len(b[1]) and all(map(same, a[1], b[1])) and same(a[2], b[2])
    if a[0] == "/\\":
        return len(a[1]) == len(b[1]) and all(map(same, a[1], b[1]))
    return same(a[1], b[1])  # "~"


def identically_zero(expr) -> bool:
    """Whether a difference of rational functions (of names and exponentials) is identically 0."""
    return expr == 0 or sympy.cancel(sympy.together(sympy.expand(expr))) == 0


def show(node) -> str:
    """A readable rendering of a parsed proposition (for mismatch reports)."""
    kind = node[0]
    if kind == "atom":
        a = node[1]
        return a[1] if a[0] == "text" else f"0 {a[1]} {a[2]}" if a[1] != "=" else f"0 = {a[2]}"
    if kind in BINDERS:
        return f"({kind} {node[1]}, {show(node[2])})"
    if kind == "->":
        return " -> ".join([show(h) for h in node[1]] + [show(node[2])])
    if kind == "/\\":
        return " /\\ ".join(f"({show(p)})" for p in node[1])
    return f"~ ({show(node[1])})"


# ----------------------------------------------------------------------------------------
# Real expressions: + - * / ^, unary minus, application, parentheses.


def expression(text: str, defs: dict[str, Definition]) -> sympy.Expr:
    tokens = _tokens(text)
    parser = _Parser(tokens, defs)
    value = parser.sum()
    if parser.i != len(tokens):
        raise SyntaxError(f"unparsed {' '.join(tokens[parser.i:])!r} in {text!r}")
    return value


def _tokens(text: str) -> list[str]:
    out, i = [], 0
    text = text.strip()
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m:
            raise SyntaxError(f"cannot read {text[i:]!r}")
        out.append(m.group(1))
        i = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[str], defs: dict[str, Definition]):
        self.t, self.i, self.defs = tokens, 0, defs

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self) -> str:
        self.i += 1
        return self.t[self.i - 1]

    def sum(self):
        value = self.product()
        while self.peek() in ("+", "-"):
            value = value + self.product() if self.take() == "+" else value - self.product()
        return value

    def product(self):
        value = self.unary()
        while self.peek() in ("*", "/"):
            value = value * self.unary() if self.take() == "*" else value / self.unary()
        return value

    def unary(self):
        if self.peek() == "-":
            self.take()
            return -self.unary()
        base = self.application()
        if self.peek() in ("^", "**"):
            self.take()
            return base ** self.unary()
        return base

    def _atom_start(self) -> bool:
        tok = self.peek()
        return tok is not None and (tok == "(" or tok[0].isalnum() or tok[0] == "_")

    def application(self):
        start = self.i
        head = self.atom()
        args = []
        while isinstance(head, str) and self._atom_start():
            a0 = self.i
            args.append((self.atom(), self.t[a0:self.i]))
        if not isinstance(head, str):
            return head
        return self.apply(head, args, self.t[start:self.i])

    def atom(self):
        tok = self.take()
        if tok == "(":
            value = self.sum()
            if self.take() != ")":
                raise SyntaxError("expected )")
            return value
        if tok[0].isdigit() and "%" not in tok:
            return sympy.Integer(int(tok))
        if tok[0].isalnum() or tok[0] == "_":
            return tok  # a name (or 0%nat): resolved by apply, once its arguments are known
        raise SyntaxError(f"unexpected {tok!r}")

    def apply(self, name: str, args: list, tokens: list[str]):
        values = [a if not isinstance(a, str) else self.apply(a, [], [a]) for a, _ in args]
        if name == "exp" and len(values) == 1:
            return sympy.exp(values[0])
        if name == "INR" and len(values) == 1:
            return values[0]
        if name == "Rabs" and len(values) == 1:
            return sympy.Abs(values[0])
        d = self.defs.get(name)
        if (d is not None and d.type == "R" and len(d.params) == len(args)
                and all(t in _UNFOLDED_PARAMETERS for _, t in d.params)):
            try:
                return self.unfold(d, [toks for _, toks in args])
            except SyntaxError:  # a body beyond this grammar (fun, sums): kept as a name
                pass
        return sympy.Symbol(_opaque(tokens))

    def unfold(self, d: Definition, args: list[list[str]]):
        """The body of ``d`` with each parameter replaced by its argument's tokens."""
        bound = {p: (toks if len(toks) == 1 or _wrapped(toks) else ["(", *toks, ")"])
                 for (p, _), toks in zip(d.params, args)}
        body = [t for tok in _tokens(d.body) for t in bound.get(tok, [tok])]
        parser = _Parser(body, self.defs)
        value = parser.sum()
        if parser.i != len(body):
            raise SyntaxError(f"unparsed body of {d.name}")
        return value


def _wrapped(tokens: list[str]) -> bool:
    return tokens[0] == "(" and tokens[-1] == ")" and min(_depths(" ".join(tokens[1:-1])) or [0]) >= 0


def _opaque(tokens: list[str]) -> str:
    """The name of an application we do not unfold (softmax_weight d h X i 0, h_t d h c)."""
    return re.sub(r"\(\s+", "(", re.sub(r"\s+\)", ")", " ".join(tokens)))
