"""Where the Coq development is and how to read its files: ``_CoqProject``, comments and sentences.

``strip_comments`` follows Coq's own lexer (``clexer.ml``), because a scan that reads comments
differently from Coq can be fooled into skipping text that Coq compiles: comments nest, and a
string inside a comment is lexed as a string, so ``(* " *) " *)`` is one comment that ends at its
last ``*)``; in a string ``""`` is an escaped quote. ``tests/test_coq_lexer.py`` holds it to
``coqc`` on adversarial texts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

COQ_DIR = Path(__file__).resolve().parent


def project_files(source: Path = COQ_DIR) -> list[str]:
    """The ``.v`` files of ``_CoqProject``, in compile order."""
    lines = (Path(source) / "_CoqProject").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip().endswith(".v")]


def _string_end(text: str, start: int) -> int:
    """The index just past the string literal whose opening quote is at ``start`` (``""`` inside
    it is an escaped quote); ``len(text)`` when it is never closed (coqc then refuses the file)."""
    k, n = start + 1, len(text)
    while k < n:
        if text[k] == '"':
            if text.startswith('""', k):
                k += 2
                continue
            return k + 1
        k += 1
    return n


def _comment_end(text: str, start: int) -> int:
    """The index just past the comment opened at ``start`` (nested comments and strings inside it
    as Coq lexes them); ``len(text)`` when it is never closed (coqc then refuses the file)."""
    depth, k, n = 1, start + 2, len(text)
    while k < n and depth:
        if text.startswith("(*", k):
            depth, k = depth + 1, k + 2
        elif text.startswith("*)", k):
            depth, k = depth - 1, k + 2
        elif text[k] == '"':
            k = _string_end(text, k)
        else:
            k += 1
    return k


def strip_comments(text: str) -> str:
    """The text with every comment and string literal blanked (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("(*", i):
            end = _comment_end(text, i)
        elif text[i] == '"':
            end = _string_end(text, i)
        else:
            out.append(text[i])
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i = end
    return "".join(out)


# A sentence ends at a period followed by a blank or the end of the text (``Sinks.T1`` and ``..``
# do not end one); bullets and braces in front of a sentence are not part of it.
_END = re.compile(r"\.(?=\s|$)")
_LEAD = re.compile(r"^[\s\-+*{}]*")


def sentences(text: str) -> Iterator[tuple[int, str]]:
    """(line number, sentence) of every sentence outside comments and strings, in order, each with
    its bullets and surrounding whitespace removed and its inner whitespace collapsed."""
    stripped, start, line, counted = strip_comments(text), 0, 1, 0
    ends = [m.start() for m in _END.finditer(stripped)] + [len(stripped)]
    for end in ends:
        body = stripped[start:end]
        lead = _LEAD.match(body).end()
        if body[lead:].strip():
            line += stripped.count("\n", counted, start + lead)
            counted = start + lead
            yield line, " ".join(body[lead:].split())
        start = end + 1
