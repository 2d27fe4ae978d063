"""What the kernel says a development assumes: ``Print Assumptions`` read strictly, and the
independent re-check by ``coqchk``.

``parse_assumptions`` reads one ``Print Assumptions`` output: either exactly ``Closed under the
global context``, or header lines (``Axioms:``, ``Section Variables:``, ...) each followed by entries
``NAME : TYPE`` whose type goes on over indented lines (or ``NAME`` alone with its type on the next
lines). Every type is attributed to its name; a line that fits none of these makes the whole output
unreadable, which the caller treats as a failed check, so no phrase inside a type can change the
reading.

``recheck`` runs ``coqchk -o`` (Coq's kernel re-checker, a separate program from ``coqc``) on the
compiled ``.vo`` files. Every module of the development is checked (``-norec``: the installed
libraries it loads, the standard library among them, are admitted, not re-checked), and its context
summary must show no axiom declared by the development (an ``Axiom`` in any Module, a ``Local
Axiom``, a ``Hypothesis`` outside a Section, an ``Admitted`` proof), no constant relying on
type-in-type or on an unsafe (co)fixpoint, no inductive whose positivity is assumed, and a
predicative Set. Which of the installed libraries' axioms a theorem uses is ``Print Assumptions``'
view, per theorem.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .coqc import Timeout, children_cpu, run_session

_HEADERS = ("Axioms", "Section Variables", "Opaque constants", "Transparent constants")
_NAME = r"[A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*"
_ENTRY = re.compile(rf"({_NAME})(?: : (.*))?")
_FLAG = re.compile(rf"({_NAME}) (is assumed to be (?:guarded|positive)|relies on .*)\.?")
CLOSED = "Closed under the global context"


def parse_assumptions(block: str) -> tuple[tuple[str, ...], str]:
    """(axioms, problem) of one ``Print Assumptions`` output: the names listed under ``Axioms:``;
    ``problem`` is non-empty for any other kind of assumption (a section variable, an unsafe flag)
    and for any output that does not read as the format above."""
    lines = [ln for ln in block.rstrip().splitlines() if ln.strip()]
    if [ln.strip() for ln in lines] == [CLOSED]:
        return (), ""
    if not lines:
        return (), "unreadable Print Assumptions output: nothing printed"
    axioms, problems, header, entry, typed = [], [], None, None, False

    def unreadable(at: str) -> tuple[tuple[str, ...], str]:
        return tuple(axioms), f"unreadable Print Assumptions output at {at[:80]!r}"

    for line in lines:
        if line[0].isspace() or (line.startswith(":") and entry is not None and not typed):
            if entry is None or not (typed or line.lstrip().startswith(":")):
                return unreadable(line.strip())
            typed = True  # the type of the current entry goes on
            continue
        if entry is not None and not typed:  # a name with no type before the next line
            return unreadable(entry)
        if line.endswith(":") and line[:-1] in _HEADERS:
            header, entry = line[:-1], None
            continue
        flag, m = _FLAG.fullmatch(line), _ENTRY.fullmatch(line)
        if header is None or not (flag or m):
            return unreadable(line.strip())
        if flag:
            problems.append(f"{flag.group(1)} {flag.group(2)}")
            entry = None
            continue
        entry, typed = m.group(1), m.group(2) is not None
        if header == "Axioms":
            axioms.append(entry)
        else:
            problems.append(f"{header}: {entry}")
    if entry is not None and not typed:
        return unreadable(entry)
    return tuple(axioms), "; ".join(problems)


@dataclass(frozen=True)
class Recheck:
    """What ``coqchk -o`` said of a compiled development."""

    ran: bool
    ok: bool
    reason: str  # why not ok ("" when ok); why not run
    command: str = ""
    checked: tuple[str, ...] = ()  # the libraries coqchk checked (not admitted)
    own_axioms: tuple[str, ...] = ()  # axioms the development itself declares (must be none)
    library_axioms: int = 0  # axioms of the admitted installed libraries, listed but not the development's
    context: dict = field(default_factory=dict)  # the context summary's sections, as coqchk printed them
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self) | {"summary": self.summary()}

    def summary(self) -> str:
        if not self.ran:
            return f"coqchk not run: {self.reason}"
        if not self.ok:
            return f"coqchk FAILED: {self.reason}"
        c = self.context
        return (f"coqchk -o re-checked {len(self.checked)} libraries of the development: axioms declared by it: "
                f"{', '.join(self.own_axioms) or '<none>'}; type-in-type: {c.get('type-in-type', '?')}; unsafe "
                f"(co)fixpoints: {c.get('unsafe (co)fixpoints', '?')}; positivity assumed: "
                f"{c.get('positivity assumed', '?')}; theory: {c.get('theory', '?')}")


_SECTIONS = {"Theory": "theory", "Axioms": "axioms",
             "Constants/Inductives relying on type-in-type": "type-in-type",
             "Constants/Inductives relying on unsafe (co)fixpoints": "unsafe (co)fixpoints",
             "Inductives whose positivity is assumed": "positivity assumed"}


def _context(output: str) -> dict[str, list[str]] | None:
    """The context summary's sections: name -> its entries (a section on one line: [its text])."""
    head = output.rfind("CONTEXT SUMMARY\n===============")
    if head < 0:
        return None
    sections, current = {}, None
    for line in output[head:].splitlines()[2:]:
        if line.startswith("* "):
            title, _, rest = line[2:].partition(":")
            current = _SECTIONS.get(title.strip())
            if current is None:
                sections.setdefault("unknown sections", []).append(title.strip())
                continue
            sections[current] = [rest.strip()] if rest.strip() else []
        elif line.strip() and current is not None:
            sections[current].append(line.strip())
    return sections


def recheck(build: Path, library: str, modules: list[str], deadline: float, bytecode: bool = False) -> Recheck:
    """``coqchk -o`` on ``modules`` (short names, compiled in ``build`` under ``-R . library``)."""
    coqchk = shutil.which("coqchk")
    if coqchk is None:
        return Recheck(False, False, "coqchk not found (it ships with Debian's coq package)")
    argv = [coqchk, "-o", "-R", ".", library] + (["-bytecode-compiler", "yes"] if bytecode else [])
    for m in modules:
        argv += ["-norec", f"{library}.{m}"]
    start, cpu0 = time.monotonic(), children_cpu()
    try:
        run = run_session(argv, build, deadline)
    except Timeout:
        return Recheck(True, False, "coqchk timed out (hard-killed)", " ".join(argv[1:]))

    def done(reason: str, **kw) -> Recheck:
        return Recheck(True, not reason, reason, "coqchk " + " ".join(argv[1:]), cpu_seconds=children_cpu() - cpu0,
                       wall_seconds=time.monotonic() - start, **kw)

    out = run.stdout
    checked = tuple(re.findall(r"^Checking library: (\S+)", out, flags=re.M))
    if run.returncode != 0 or "Modules were successfully checked" not in out:
        return done(f"coqchk refused the development: {' '.join(out[-600:].split())}", checked=checked)
    missing = [m for m in modules if f"{library}.{m}" not in checked]
    sections = _context(out)
    if sections is None or set(sections) != set(_SECTIONS.values()):
        return done("coqchk printed no readable context summary", checked=checked)
    own = tuple(a for a in sections["axioms"] if a.split(".")[0] == library)
    problems = ([f"not re-checked: {', '.join(missing)}"] if missing else []) \
        + ([f"axioms declared by the development: {', '.join(own)}"] if own else []) \
        + [f"{k}: {', '.join(v)}" for k, v in sections.items() if k not in ("axioms", "theory") and v != ["<none>"]] \
        + ([f"theory: {sections['theory'][0]}"] if sections["theory"] != ["Set is predicative"] else [])
    context = {k: ", ".join(v) for k, v in sections.items() if k != "axioms"}
    return done("; ".join(problems), checked=checked, own_axioms=own,
                library_axioms=len(sections["axioms"]) - len(own), context=context)

