"""The source scan: an early, readable message for a sentence that would add an assumption or
change what a statement's text means.

It is not the guard the labels rest on: the kernel re-checker ``coqchk`` (``assumptions.recheck``)
lists every axiom the compiled development declares, the section variable turned axiom and the
admitted proof included, and every unsafe flag; the pins (``pins.py``) catch a Notation or a
shadowing definition by what the kernel prints. The scan reads the text with Coq's lexical rules
(``source.sentences``) and follows Sections and Modules by their names, so a one-line
``Section S. End S.`` or a Module's ``End`` does not fool its count.
"""

from __future__ import annotations

import re

from .source import sentences

# Sentences that would add an assumption or switch a kernel check off.
_FORBIDDEN = re.compile(
    r"\b(Admitted|admit|Admit\s+Obligations|Axioms?|Parameters?|Conjectures?)\b"
    r"|\bUnset\s+(Guard|Positivity|Universe)\s+Checking\b|\bbypass_check\b|\bDeclare\s+ML\s+Module\b"
    r"|\btyping\s*\(")
# Attributes and modifiers that may stand before a vernacular command.
_PREFIX = re.compile(r"^(?:#\[[^\]]*\]\s*|(?:Local|Global|Polymorphic|Monomorphic|Private|Program)\s+)*")
_SECTION_LOCAL = re.compile(r"(Variables?|Hypothes[ie]s|Context)\b")
# Sentences that change what a statement's text means to the fidelity parser (statements.py
# reads `<=` and `/` as the reals' own; a Notation or Coercion could make them mean another thing).
_REINTERPRETING = re.compile(r"\b(Notation|Infix|Coercion|Arguments)\b")
# A named object; two of one short name across modules let the parser read the wrong one.
_NAMED = re.compile(r"(?:Definition|Fixpoint|CoFixpoint|Theorem|Lemma|Corollary|Inductive|CoInductive|Record"
                    r"|Structure|Class|Instance|Example|Remark|Fact|Proposition)\s+(\w[\w']*)")  # not Let: Section-local
_OPENS = re.compile(r"(Section|Module(?:\s+Type)?)\s+(?:(?:Import|Export)\s+)?(\w[\w']*)")
_ENDS = re.compile(r"End\s+(\w[\w']*)$")


def _command(sentence: str) -> str:
    return sentence[_PREFIX.match(sentence).end():]


def scan(text: str, name: str = "") -> list[str]:
    """One line per sentence that adds an assumption: an axiom, an admitted proof, a kernel check
    switched off, or a Variable / Hypothesis / Context outside a Section (an axiom in disguise);
    or that reinterprets a statement's text: a Notation, Infix, Coercion or Arguments."""
    found, blocks = [], []  # blocks: the open Sections and Modules, innermost last, as (kind, name)
    for number, sentence in sentences(text):
        where, command = f"{name}:{number}", _command(sentence)
        m = _FORBIDDEN.search(sentence)
        if m:
            found.append(f"{where}: {m.group(0)}")
        m = _REINTERPRETING.search(sentence)
        if m:
            found.append(f"{where}: {m.group(0)} (changes what a statement's text means)")
        opened, ended = _OPENS.match(command), _ENDS.match(command)
        if opened and ":=" not in command:
            blocks.append((opened.group(1).split()[0], opened.group(2)))
        elif ended:
            if not blocks or blocks[-1][1] != ended.group(1):
                found.append(f"{where}: End {ended.group(1)} closes no open Section or Module")
            else:
                blocks.pop()
        elif _SECTION_LOCAL.match(command) and (not blocks or blocks[-1][0] != "Section"):
            found.append(f"{where}: {command.split()[0]} outside a Section")
    return found


def duplicate_names(texts: dict[str, str]) -> list[str]:
    """One line per short name that two modules (or one, twice) define: the fidelity parser keeps
    one of them, which need not be the one a theorem uses."""
    where: dict[str, list[str]] = {}
    for name, text in texts.items():
        for _, sentence in sentences(text):
            m = _NAMED.match(_command(sentence))
            if m:
                where.setdefault(m.group(1), []).append(name)
    return [f"{n} defined in {', '.join(files)} (one short name per development)"
            for n, files in where.items() if len(files) > 1]
