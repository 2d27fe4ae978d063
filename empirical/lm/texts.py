"""The probe texts and how they become token sequences.

The default set (``data/probe_texts.txt``, shipped with the package) is 102 texts written for
this project, one a line: prose, dialogue, news, instructions, code, SQL, HTML, legal and
medical text, poetry, arithmetic, and German, French, Spanish and Italian, each at least 72
tokens long in SmolLM2's tokenizer, so that every one gives 64 tokens (the length of Gu et al.'s
probe set). The first texts span the genres: ablations run on a prefix of the set.

Position 0 of a probe sequence is the first token the tokenizer gives for the text. SmolLM2's
tokenizer prepends no BOS token, so by default position 0 is the text's own first token (``The``
in most English lines); ``bos=True`` prepends the tokenizer's BOS id (SmolLM2: 1,
``<|im_start|>``) and position 0 is that token. Either way every sequence is cut to exactly
``tokens`` tokens, position 0 included; a text that is shorter is bad input naming its line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from constructions.errors import BadInput

DEFAULT_TOKENS = 64  # Gu et al.'s probe length


@dataclass(frozen=True)
class ProbeSet:
    texts: tuple[str, ...]
    source: str  # "default" or the file's path
    ids: tuple[tuple[int, ...], ...]  # [N][T]
    bos: int | None  # the prepended BOS id, or None
    first_tokens: tuple[str, ...]  # what position 0 is, per text (decoded)

    def hash(self) -> str:
        """sha256 of the token ids and texts: two runs with the same hash read the same input."""
        blob = json.dumps({"texts": self.texts, "ids": self.ids, "bos": self.bos}, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


def default_texts() -> list[str]:
    text = resources.files("empirical.lm").joinpath("data/probe_texts.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def read_texts(path: str | Path) -> list[str]:
    """One text a line; blank lines are skipped. A missing, undecodable or empty file is bad input."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BadInput(f"texts file not found: {path}") from None
    except (UnicodeDecodeError, IsADirectoryError) as e:
        raise BadInput(f"texts file {path} is not UTF-8 text: {e}") from None
    texts = [line for line in lines if line.strip()]
    if not texts:
        raise BadInput(f"texts file {path} has no texts (one a line)")
    return texts


def tokenise(tokenizer, texts: list[str], tokens: int = DEFAULT_TOKENS, bos: bool = False,
             source: str = "default") -> ProbeSet:
    """Each text as exactly ``tokens`` ids (BOS first if ``bos``); see the module docstring."""
    if tokens < 2:
        raise BadInput(f"--tokens must be at least 2 (position 0 and one query after it), got {tokens}")
    bos_id = None
    if bos:
        bos_id = getattr(tokenizer, "bos_token_id", None)
        if bos_id is None:
            raise BadInput("the tokenizer has no BOS token to prepend; drop --bos")
    rows, short = [], []
    for n, text in enumerate(texts, start=1):
        ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
        ids = ([bos_id] if bos else []) + ids
        if len(ids) < tokens:
            short.append(f"{n} ({len(ids)})")
        rows.append(tuple(ids[:tokens]))
    if short:
        shown = ", ".join(short[:5]) + (" ..." if len(short) > 5 else "")
        raise BadInput(f"{len(short)} text(s) shorter than --tokens {tokens} tokens, at line(s) {shown}; "
                       "give longer texts or a smaller --tokens")
    first = tuple(tokenizer.convert_ids_to_tokens(r[0]) for r in rows)
    return ProbeSet(tuple(texts), source, tuple(rows), bos_id, first)
