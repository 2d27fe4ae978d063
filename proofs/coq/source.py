"""Where the Coq development is and how to read its files: ``_CoqProject`` and comments."""

from __future__ import annotations

from pathlib import Path

COQ_DIR = Path(__file__).resolve().parent


def project_files(source: Path = COQ_DIR) -> list[str]:
    """The ``.v`` files of ``_CoqProject``, in compile order."""
    lines = (Path(source) / "_CoqProject").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip().endswith(".v")]


def strip_comments(text: str) -> str:
    """The text with every (nested) Coq comment and string literal blanked."""
    out, depth, i, n = [], 0, 0, len(text)
    while i < n:
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
            out.append("  ")
        elif depth and text.startswith("*)", i):
            depth, i = depth - 1, i + 2
            out.append("  ")
        elif not depth and text[i] == '"':
            j = text.find('"', i + 1)
            j = n - 1 if j < 0 else j
            out.append(" " * (j - i + 1))
            i = j + 1
        else:
            out.append(text[i] if not depth or text[i] == "\n" else " ")
            i += 1
    return "".join(out)
