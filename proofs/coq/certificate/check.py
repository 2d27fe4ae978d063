"""Compile a certificate (``export.coq_text``) with coqc against the generic development.

``check(cert, name)`` copies the generic files named in ``_CoqProject`` (the semantics, the
checker and its soundness proof) and the certificate's own file into a temporary folder, compiles
them in order, and reads back, from the certificate file itself, the kernel's ``Check`` of its
two theorems (which must be ``min_bos_mass_at_least d L NAME_M NAME_q`` and
``max_bos_mass_at_trigger_at_most d L NAME_M NAME_p``, ``export.statements``) and their ``Print
Assumptions``. The certificate passes only if every file compiles, no file adds an assumption of
its own (``kernel.scan``), each theorem's type is the expected one, and every assumption is one of
``ALLOWED``: the standard library's reals (``kernel.ALLOWED_AXIOMS``), excluded middle (which the
standard library's ``exp_ineq1_le``, 1 + x <= exp x, rests on; ``Certified.exp_small`` and
``TriggerSound.exp_down_sound`` use it), and the primitive 63-bit integers (``Uint63`` /
``PrimInt63``) that the interval tactic computes with.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from proofs.coq import kernel
from proofs.coq.assumptions import parse_assumptions, recheck
from proofs.coq.source import project_files
from proofs.coq.coqc import Timeout, children_cpu, coqc_path, coqc_version, run_session

from . import statement

HERE = Path(__file__).resolve().parent
LIBRARY = "SinksCert"
INSTALL_HINT = "apt-get install -y coq libcoq-interval libcoq-flocq libcoq-coquelicot"
ALLOWED = tuple(kernel.ALLOWED_AXIOMS) + ("Classical_Prop.classic",)
PRIMITIVE = re.compile(r"^(Uint63|PrimInt63)\.")  # the interval tactic's machine integers


@dataclass
class CoqCheck:
    ran: bool
    ok: bool
    reason: str
    theorem: str = ""
    statement: str = ""  # the kernel's Check output
    assumptions: tuple[str, ...] = ()
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0  # coqc's own CPU (children's rusage)
    coqc: str = ""
    size: dict = field(default_factory=dict)
    recheck: dict = field(default_factory=dict)  # what coqchk -o said of the compiled certificate

    def to_dict(self) -> dict:
        return asdict(self)


def generic_files() -> list[str]:
    """The generic .v files in compile order (``_CoqProject``)."""
    return project_files(HERE)


def available() -> str:
    """'' when coqc and the Interval library are installed, else why not (a skip reason)."""
    coqc = coqc_path()
    if coqc is None:
        return f"coqc not found (install: {INSTALL_HINT})"
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "Probe.v"
        probe.write_text("From Interval Require Import Tactic.\n")
        try:
            run = run_session([coqc, probe.name], Path(tmp), time.monotonic() + 120)
        except Timeout:
            return "coqc did not load the Interval library within 120 s"
    if run.returncode != 0:
        return f"the Coq Interval library is missing (install: {INSTALL_HINT})"
    return ""


def _coqc(coqc: str, build: Path, name: str, deadline: float):
    """coqc on one file of the certificate's library (its whole session killed at ``deadline``)."""
    return run_session([coqc, "-R", ".", LIBRARY, name], build, deadline)


_GENERIC: dict[tuple, tuple[Path, float, float]] = {}  # (coqc, texts) -> (compiled generic folder, wall s, CPU s)


def _generic_build(coqc: str, deadline: float, texts: dict[str, str]) -> tuple[Path, float, float]:
    """The generic files compiled once per process (kept in a temporary folder until exit)."""
    key = (coqc, tuple(texts.items()))
    if key not in _GENERIC:
        import atexit

        folder = Path(tempfile.mkdtemp(prefix="sinks-coq-generic-"))
        atexit.register(shutil.rmtree, folder, True)
        start, cpu0 = time.monotonic(), children_cpu()
        for f in generic_files():
            (folder / f).write_text(texts[f])
            run = _coqc(coqc, folder, f, deadline)
            if run.returncode != 0:
                shutil.rmtree(folder, True)
                raise GenericFailure(f"{f} does not compile: {' '.join(run.stdout.split())[:400]}")
        _GENERIC[key] = (folder, time.monotonic() - start, children_cpu() - cpu0)
    return _GENERIC[key]


class GenericFailure(Exception):
    pass


def _blocks(output: str, names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(the Check output, the Print Assumptions block) of each theorem printed at the end."""
    starts = [output.find(f"{n}\n") for n in names]
    out = []
    for k, start in enumerate(starts):
        if start < 0:
            out.append(("", ""))
            continue
        end = starts[k + 1] if k + 1 < len(starts) and starts[k + 1] > start else len(output)
        lines = output[start:end].splitlines()
        m = 1
        while m < len(lines) and (not lines[m] or lines[m][0].isspace()):
            m += 1
        out.append((" ".join(" ".join(lines[:m]).split()), "\n".join(lines[m:])))
    return out


def check(cert, name: str, timeout: float = 900.0, source: Path = HERE) -> CoqCheck:
    """Compile ``cert`` (an ``export.Certificate``) as NAME.v and check its theorem; ``source``:
    the folder of the generic files (a scratch copy in the tests' plants)."""
    from .export import coq_text, statements, theorems

    coqc = coqc_path()
    names = theorems(name)
    theorem = " and ".join(names)
    missing = available()
    if missing:
        return CoqCheck(False, False, missing, theorem)
    text = coq_text(cert, name) + "".join(f"Check {n}.\nPrint Assumptions {n}.\n" for n in names)
    files = generic_files()
    size = {"certificate_lines": text.count("\n"), "certificate_bytes": len(text.encode()),
            "leaves": cert.leaves, "depth": cert.depth, "trigger_leaves": cert.trigger_leaves,
            "trigger_depth": cert.trigger_depth,
            "exp_facts": sum(len(t) for t in cert.tables.values()) + sum(len(t) for t in cert.trigger_tables.values()),
            "generic_lines": sum((Path(source) / f).read_text().count("\n") for f in files)}
    generic_texts = {f: (Path(source) / f).read_text() for f in files}
    found = [line for f, t in (generic_texts | {f"{name}.v": text}).items() for line in kernel.scan(t, f)]
    version = coqc_version(coqc)
    if found:
        return CoqCheck(True, False, "; ".join(found), theorem, coqc=version, size=size)
    start, cpu0 = time.monotonic(), children_cpu()
    deadline = start + timeout

    def failed(reason: str) -> CoqCheck:
        return CoqCheck(True, False, reason, theorem, coqc=version, size=size,
                        wall_seconds=time.monotonic() - start, cpu_seconds=children_cpu() - cpu0)

    try:
        generic, size["generic_wall_seconds"], size["generic_cpu_seconds"] = _generic_build(coqc, deadline, generic_texts)
        start, cpu0 = time.monotonic(), children_cpu()  # the certificate's own time from here
        with tempfile.TemporaryDirectory(prefix="sinks-coq-cert-") as tmp:
            build = Path(tmp)
            for f in generic.iterdir():
                shutil.copy(f, build / f.name)
            (build / f"{name}.v").write_text(text)
            run = _coqc(coqc, build, f"{name}.v", deadline)
            if run.returncode != 0:
                return failed(f"{name}.v does not compile: {' '.join(run.stdout.split())[:400]}")
            out = run.stdout
            pinned = statement.verify(coqc, build, cert.d, cert.L, name, deadline)
            rechecked = recheck(build, LIBRARY, statement.generic_modules() + [name], deadline, bytecode=True)
    except GenericFailure as e:
        return failed(str(e))
    except Timeout:
        return failed(f"coqc ran past {timeout:.0f} s")
    wall, cpu = time.monotonic() - start, children_cpu() - cpu0
    problems, printed, axioms = [f"not the pinned statement: {pinned}"] if pinned else [], [], []
    problems += [] if rechecked.ok else [rechecked.summary()]
    for (said, block), expected in zip(_blocks(out, names), statements(cert, name)):
        printed.append(said)
        if said != expected:
            problems.append(f"the theorem states {said!r}, not {expected!r}")
        found_axioms, problem = parse_assumptions(block)
        axioms += [a for a in found_axioms if a not in axioms]
        problems += [problem] if problem else []
    extra = [a for a in axioms if a not in ALLOWED and not PRIMITIVE.match(a)]
    problems += [f"assumes {', '.join(extra)}"] if extra else []
    reason, said, axioms = "; ".join(problems), " / ".join(printed), tuple(axioms)
    return CoqCheck(True, not reason, reason or "checked by the Coq kernel", theorem, said, axioms,
                    wall, cpu, version, size, rechecked.to_dict())

