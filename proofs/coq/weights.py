"""The task's tokens and the constructions' weights as the Coq development writes them, against
the Python definitions (``constructions.task``, ``relu_head``, ``cancelling_heads``, ``softmax_head``).

``token_mismatches`` evaluates the Coq tokens (``bos``, ``content_token``, ``trigger_token``:
if-chains over the coordinate r) for d = 4 .. 7 and compares them with ``task.make_sequence``; the
Coq sequence and targets are held to their text. The Coq matrices are sums of E[r, c] (``unit_mat r c``) and the identity (``id_mat``), possibly
negated or scaled by a real parameter: ``relu_W_Q``, ``relu_W_K`` (the ReLU head of T3) and
``cancel_W_Q``, ``cancel_W_K``, ``cancel_W_V``, ``neg_id_mat`` (the cancelling pair of T2),
``sufficiency_W_Q`` (with the cancelling pair's W_K and W_V: the softmax family's head).
``weight_mismatches`` evaluates them for d = 4 .. 7 and compares them entry by entry with
``constructions.relu_head.build(d)``, ``constructions.cancelling_heads.build(d, beta)`` and
``constructions.softmax_head.build(d, beta)``.
"""

from __future__ import annotations

import re

import sympy

from .statements import Definition, expression, split_top, strip_parens

DIMENSIONS = (4, 5, 6, 7)


def _index(text: str, d: int, defs: dict[str, Definition]) -> int:
    """A nat index of the development: a numeral, trigger_flag, bos_flag or (content_flag d)."""
    text = strip_parens(text)
    if text.isdigit():
        return int(text)
    name, *args = text.split()
    body = strip_parens(defs[name].body).replace("%nat", "")
    value = expression(body, defs).subs({sympy.Symbol(p): d for (p, _), _a in zip(defs[name].params, args)})
    return int(value)


def _term(text: str, d: int, defs: dict[str, Definition], env: dict) -> sympy.Matrix:
    text = strip_parens(text)
    if text.startswith("-"):
        return -_term(text[1:], d, defs, env)
    if "*" in text:
        coefficient, rest = text.split("*", 1)
        return sympy.sympify(env[coefficient.strip()]) * _term(rest, d, defs, env)
    words = re.findall(r"\([^()]*\)|\S+", text)
    if words[0] == "unit_mat":
        r, c = _index(words[1], d, defs), _index(words[2], d, defs)
        return sympy.Matrix(d, d, lambda i, j: 1 if (i, j) == (r, c) else 0)
    if words[0] == "id_mat":
        return sympy.eye(d)
    return matrix(words[0], d, defs, env)


def matrix(name: str, d: int, defs: dict[str, Definition], env: dict | None = None) -> sympy.Matrix:
    """The d x d matrix of Coq definition ``name`` (its real parameters bound by ``env``)."""
    body = defs[name].body
    body = re.sub(r"^fun r c =>", "", body).strip()
    body = re.sub(r"\s+r c\b", "", body)  # entrywise reading: unit_mat a b r c is E[a, b] at (r, c)
    total = sympy.zeros(d, d)
    for k, part in enumerate(split_top(body.replace(" - ", " + - "), "+")):
        total += _term(part, d, defs, env or {})
    return total


def _mats(layer, head: int) -> list[sympy.Matrix]:
    """(W_Q, W_K, W_V) of one head of a Python reference layer, and its block of W_O."""
    d = len(layer.W_Q[head])
    W_O = sympy.Matrix(layer.W_O)[:, head * d:(head + 1) * d]
    return [sympy.Matrix(layer.W_Q[head]), sympy.Matrix(layer.W_K[head]), sympy.Matrix(layer.W_V[head]), W_O]


def weight_mismatches(defs: dict[str, Definition]) -> list[str]:
    from constructions import cancelling_heads, relu_head, softmax_head

    beta = sympy.Symbol("beta", positive=True)
    out = []
    for d in DIMENSIONS:
        coq = {"relu": [[matrix("relu_W_Q", d, defs), matrix("relu_W_K", d, defs), sympy.eye(d), sympy.eye(d)]],
               "cancelling": [[matrix("cancel_W_Q", d, defs, {"s": -beta}), matrix("cancel_W_K", d, defs),
                               matrix("cancel_W_V", d, defs), sympy.eye(d)],
                              [matrix("cancel_W_Q", d, defs, {"s": beta}), matrix("cancel_W_K", d, defs),
                               matrix("cancel_W_V", d, defs), matrix("neg_id_mat", d, defs)]],
               "sufficiency": [[matrix("sufficiency_W_Q", d, defs, {"beta": beta}), matrix("cancel_W_K", d, defs),
                                matrix("cancel_W_V", d, defs), sympy.eye(d)]]}
        python = {"relu": relu_head.build(d).layers[0], "cancelling": cancelling_heads.build(d, beta).layers[0],
                  "sufficiency": softmax_head.build(d, beta).layers[0]}
        for name, heads in coq.items():
            for h, mats in enumerate(heads):
                for label, ours, theirs in zip(("W_Q", "W_K", "W_V", "W_O"), mats, _mats(python[name], h)):
                    if sympy.simplify(ours - theirs) != sympy.zeros(d, d):
                        out.append(f"{name} head {h} {label} at d = {d}: Coq {ours.tolist()}, Python {theirs.tolist()}")
    out += _head_shapes(defs)
    return out + token_mismatches(defs)


def _condition(text: str, r: int, d: int, defs: dict[str, Definition]) -> bool:
    text = strip_parens(text)
    if "&&" in text:
        return all(_condition(part, r, d, defs) for part in text.split("&&"))
    m = re.fullmatch(r"\((.+?) (<=\?|<\?) (.+?)\)%nat", text)
    if m:
        a, b = (int(expression(x, defs).subs({sympy.Symbol("r"): r, sympy.Symbol("d"): d})) for x in (m[1], m[3]))
        return a <= b if m[2] == "<=?" else a < b
    words = text.split(maxsplit=1)
    if words[0] == "Nat.eqb":
        _, rest = words
        arg = rest.removeprefix("r ").strip()
        return r == int(expression(arg, defs).subs(sympy.Symbol("d"), d))
    if words[0] in defs:  # a boolean definition such as is_content_coordinate d r
        return _condition(defs[words[0]].body, r, d, defs)
    raise ValueError(f"cannot read the condition {text!r}")


def _entry(text: str, r: int, d: int, defs: dict[str, Definition]) -> sympy.Expr:
    text = strip_parens(text)
    if text.startswith("if "):
        cond, rest = text[3:].split(" then ", 1)
        value, other = _split_else(rest)
        return _entry(value, r, d, defs) if _condition(cond, r, d, defs) else _entry(other, r, d, defs)
    if text.isdigit():
        return sympy.Integer(int(text))
    m = re.fullmatch(r"c \(r - (\d+)\)%nat", text)
    if m:
        return sympy.Symbol(f"c{r - int(m[1])}")
    raise ValueError(f"cannot read the entry {text!r}")


def _split_else(text: str) -> tuple[str, str]:
    """(then-branch, else-branch): the first " else " outside parentheses and nested ifs."""
    depth, i = 0, 0
    while i < len(text):
        if text.startswith("if ", i):
            depth += 1
        elif text.startswith(" else ", i):
            if depth == 0:
                return text[:i], text[i + 6:]
            depth -= 1
        i += 1
    raise ValueError(f"no else in {text!r}")


def token(name: str, d: int, defs: dict[str, Definition]) -> list[sympy.Expr]:
    """The d features of the Coq token ``name`` (its content is c0, c1, ...)."""
    body = re.sub(r"^fun r =>", "", defs[name].body).strip()
    return [_entry(body, r, d, defs) for r in range(d)]


EXPECTED_TEXT = {
    "sequence": "fun p => if Nat.eqb p 0 then bos d else if Nat.eqb p j then trigger_token d (cs p) "
                "else content_token d (cs p)",
    "target": "fun r => if Nat.eqb i j then / INR j * sum j (fun k => X (S k) r) else 0",
    "residual_target": "fun r => X i r + target j X i r",
    "is_norm": "(forall x y, N (vadd x y) <= N x + N y) /\\ (forall c x, N (vscale c x) = Rabs c * N x)",
    "vadd": "fun r => x r + y r",
    "vscale": "fun r => c * x r",
    "equal_content_error_le": "forall i r, (i < L)%nat -> (r < d)%nat -> "
                              "Rabs (f (equal_content d j c) i r - target j (equal_content d j c) i r) <= eta",
}


def token_mismatches(defs: dict[str, Definition]) -> list[str]:
    from constructions import task

    out = []
    for d in DIMENSIONS:
        content = [sympy.Symbol(f"c{q}") for q in range(d - 3)]
        rows = task.make_sequence([content] * 3, 2, sympy.Integer(0), sympy.Integer(1))  # BOS, content, trigger
        for name, row in (("bos", rows[0]), ("content_token", rows[1]), ("trigger_token", rows[2])):
            ours = token(name, d, defs)
            if ours != list(row):
                out.append(f"{name} at d = {d}: Coq {ours}, constructions.task {list(row)}")
    out += [f"{name}: Coq defines {defs[name].body if name in defs else 'nothing'}, expected {text}"
            for name, text in EXPECTED_TEXT.items() if name not in defs or defs[name].body != text]
    return out


def _head_shapes(defs: dict[str, Definition]) -> list[str]:
    """The heads assemble those matrices the way the Python constructions do."""
    expected = {"relu_head": "mk_head (relu_W_Q d) (relu_W_K d) id_mat id_mat",
                "cancel_head": "mk_head (cancel_W_Q s) cancel_W_K cancel_W_V out",
                "cancelling_pair": "[cancel_head (- beta) id_mat; cancel_head beta neg_id_mat]",
                "sufficiency_head": "mk_head (sufficiency_W_Q d beta) cancel_W_K cancel_W_V id_mat"}
    return [f"{name}: Coq defines {defs[name].body if name in defs else 'nothing'}, expected {body}"
            for name, body in expected.items() if name not in defs or " ".join(defs[name].body.split()) != body]
