"""What the kernel says each twin proves, pinned by text: the run-time half of statement fidelity.

``tests/test_coq_fidelity.py`` holds the *source text* of the twins to the Python statements. What
the kernel checked can still differ from that text (a Notation, a shadowing definition, a
definition the parser does not read). So after the compile ``verify`` has coqc print, with
``Set Printing All`` (no notation, no implicit argument hidden) and every module Required but none
Imported (each project name printed with its module, ``T1.T1a``; the standard library's with
theirs, ``Rdefinitions.Rle``), the type of every main theorem and the body of every project
constant that type mentions, transitively, down to the standard library. Each text must equal the
one recorded in ``pinned.json``, which ``generate`` wrote once from the development that passed the
fidelity test; the file also records the Python side (``twins.expected_props`` and friends), so a
Python constant changed since the pinning also fails closed. Any difference makes the theorem
(and so its twin) ``unknown`` with the first differing text in the reason.

Regenerate (after the fidelity test passes): ``python -m proofs.coq.pins --write``.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from .coqc import LIBRARY, compiled, coqc_path, coqc_version, run_session
from .source import COQ_DIR

PINNED = COQ_DIR / "pinned.json"
PRINTING = ("Set Printing All.", "Set Printing Width 100000.")  # one line per printed term
_MARKER = "sinks_pin_marker_"


def python_side() -> dict:
    """The Coq statements the Python constants imply (what the fidelity test compared the source to)."""
    from . import twins

    return {"props": twins.expected_props(), "theorem_types": dict(twins.THEOREM_TYPES),
            "definitions": {n: [list(p), str(e)] for n, (p, e) in twins.expected_definitions().items()}}


def references(text: str, modules: list[str], library: str = LIBRARY) -> set[str]:
    """The project constants a printed text mentions, as ``Module.name`` (with no module Imported,
    coqc prints every project name with its module, or with ``Sinks.`` in front when that is short
    of unique)."""
    pattern = rf"(?<![\w.']){library}\.({'|'.join(map(re.escape, modules))})\.([A-Za-z_][\w']*)" \
              rf"|(?<![\w.'])({'|'.join(map(re.escape, modules))})\.([A-Za-z_][\w']*)"
    out = set()
    for m in re.finditer(pattern, text):
        module, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        out.add(f"{module}.{name}")
    return out


def _script(modules: list[str], commands: list[str], library: str) -> str:
    """Require every module (Import none), then each command behind a marker."""
    lines = [f"Require {' '.join(f'{library}.{m}' for m in modules)}.", *PRINTING]
    for k, command in enumerate(commands):
        lines += [f"Definition {_MARKER}{k} := tt.", f"Print {_MARKER}{k}.", command]
    return "\n".join(lines) + "\n"


def run_commands(coqc: str, build: Path, modules: list[str], commands: list[str],
                 deadline: float, library: str = LIBRARY) -> tuple[list[str], str]:
    """(each command's output with its whitespace collapsed, error); one coqc run for them all."""
    script = build / "sinks_pins.v"
    script.write_text(_script(modules, commands, library))
    r = run_session([coqc, "-q", "-R", ".", library, script.name], build, deadline)
    if r.returncode != 0:
        return [], f"coqc could not print the pinned terms: {' '.join(r.stdout.split())[:400]}"
    parts = re.split(rf"^{_MARKER}(\d+) = tt\s*: unit\n", r.stdout, flags=re.M)
    outputs = [" ".join(text.split()) for text in parts[2::2]]
    if len(outputs) != len(commands):
        return [], f"coqc printed {len(outputs)} of {len(commands)} pinned terms"
    return outputs, ""


def _type_of(checked: str, constant: str) -> str:
    """The type in ``Check``'s output ("T1.t1 : and T1.T1a ..."), without the theorem's own name."""
    head = f"{constant} : "
    return checked[len(head):] if checked.startswith(head) else checked


def _print(name: str) -> str:
    return f"Print {LIBRARY}.{name}."


def _locate(coqc: str, build: Path, theorems: list[str], modules: list[str], deadline: float) -> dict[str, str]:
    """Theorem short name -> ``Module.name`` (the development must define each exactly once)."""
    outputs, error = run_commands(coqc, build, modules, [f"Locate {t}." for t in theorems], deadline)
    if error:
        raise RuntimeError(error)
    found = {}
    for name, text in zip(theorems, outputs):
        hits = re.findall(rf"Constant {LIBRARY}\.(\w+)\.{re.escape(name)}\b", text)
        if len(hits) != 1:
            raise RuntimeError(f"{name}: Locate found {hits or 'nothing'} in the development")
        found[name] = f"{hits[0]}.{name}"
    return found


def references_of(texts: list[str], modules: list[str], library: str = LIBRARY) -> set[str]:
    return set().union(set(), *(references(text, modules, library) for text in texts))


def print_closure(coqc: str, build: Path, modules: list[str], names: set[str], deadline: float,
                  library: str = LIBRARY) -> dict[str, str]:
    """``Print`` of every constant in ``names`` and of every project constant those mention,
    transitively: round by round until no new constant appears (RuntimeError when coqc fails)."""
    definitions: dict[str, str] = {}
    todo = set(names)
    while todo:
        batch = sorted(todo)
        outputs, error = run_commands(coqc, build, modules, [f"Print {library}.{n}." for n in batch], deadline,
                                      library)
        if error:
            raise RuntimeError(error)
        definitions.update(zip(batch, outputs))
        todo = references_of(outputs, modules, library) - set(definitions)
    return dict(sorted(definitions.items()))


def generate(coqc: str, build: Path, theorems: list[str], modules: list[str], deadline: float) -> dict:
    """The record ``verify`` compares with: every theorem's printed type and every project constant
    it unfolds to, printed round by round until no new constant appears."""
    located = _locate(coqc, build, theorems, modules, deadline)
    outputs, error = run_commands(coqc, build, modules, [f"Check {LIBRARY}.{located[t]}." for t in theorems],
                                   deadline)
    if error:
        raise RuntimeError(error)
    outputs = [_type_of(text, located[t]) for t, text in zip(theorems, outputs)]
    record = {t: {"constant": located[t], "type": text} for t, text in zip(theorems, outputs)}
    definitions = print_closure(coqc, build, modules, references_of(outputs, modules), deadline)
    return {"coqc": coqc_version(coqc), "printing": " ".join(PRINTING) + " Every module Required, none Imported.",
            "python": python_side(), "theorems": record, "definitions": definitions}


def closure(name: str, pinned: dict, modules: list[str]) -> list[str]:
    """The pinned constants theorem ``name``'s type unfolds to, transitively."""
    seen, todo = set(), references(pinned["theorems"][name]["type"], modules)
    while todo:
        seen |= todo
        todo = set().union(*(references(pinned["definitions"].get(n, ""), modules) for n in todo)) - seen
    return sorted(seen)


def first_difference(got: str, want: str, width: int = 80) -> str:
    k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return f"coqc prints ...{got[max(k - 20, 0):k + width]}... where the pin has ...{want[max(k - 20, 0):k + width]}..."


def load(path: Path = PINNED) -> dict:
    return json.loads(Path(path).read_text())


def qualified(theorems: list[str], pinned: dict | None = None) -> dict[str, str]:
    """Theorem -> its pinned constant as coqc reads it (``Sinks.T1.t1_single_layer_sink``)."""
    record = (load() if pinned is None else pinned)["theorems"]
    return {t: f"{LIBRARY}.{record[t]['constant']}" for t in theorems if t in record}


def verify(coqc: str, build: Path, theorems: list[str], modules: list[str], deadline: float,
           pinned: dict | None = None) -> dict[str, str]:
    """Theorem -> why what the kernel checked is not what was pinned (absent when it is)."""
    pinned = load() if pinned is None else pinned
    if pinned.get("python") != python_side():
        why = ("the Python statements changed since the Coq statements were pinned (run the fidelity test, then "
               "python -m proofs.coq.pins --write)")
        return {t: why for t in theorems}
    failed = {t: "not pinned (no recorded kernel-printed type)" for t in theorems if t not in pinned["theorems"]}
    wanted = [t for t in theorems if t not in failed]
    needed = {t: closure(t, pinned, modules) for t in wanted}
    constants = sorted(set().union(set(), *needed.values()))
    commands = ([f"Check {LIBRARY}.{pinned['theorems'][t]['constant']}." for t in wanted]
                + [_print(n) for n in constants])
    outputs, error = run_commands(coqc, build, modules, commands, deadline)
    if error:
        return {**failed, **{t: error for t in wanted}}
    types = [_type_of(text, pinned["theorems"][t]["constant"]) for t, text in zip(wanted, outputs)]
    printed = dict(zip([f"theorem {t}" for t in wanted] + constants, types + outputs[len(wanted):]))
    for t in wanted:
        if printed[f"theorem {t}"] != pinned["theorems"][t]["type"]:
            failed[t] = f"its kernel-printed type is not the pinned one: " + first_difference(
                printed[f"theorem {t}"], pinned["theorems"][t]["type"])
            continue
        changed = [n for n in needed[t] if printed[n] != pinned["definitions"][n]]
        if changed:
            failed[t] = (f"{changed[0]}, which its type unfolds to, is not the pinned definition: "
                         + first_difference(printed[changed[0]], pinned["definitions"][changed[0]]))
    return failed


def main(argv: list[str] | None = None) -> int:
    """``--write``: compile the installed development and record its pins in pinned.json."""
    from .source import project_files
    from .twins import main_theorems

    argv = sys.argv[1:] if argv is None else argv
    if argv != ["--write"]:
        print("usage: python -m proofs.coq.pins --write", file=sys.stderr)
        return 2
    coqc = coqc_path()
    if coqc is None:
        print("coqc not found", file=sys.stderr)
        return 2
    deadline = time.monotonic() + 900
    build = compiled(COQ_DIR, deadline)
    record = generate(coqc, build, main_theorems(), [f[:-2] for f in project_files()], deadline)
    tmp = PINNED.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    tmp.replace(PINNED)
    print(f"wrote {PINNED}: {len(record['theorems'])} theorems, {len(record['definitions'])} definitions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
