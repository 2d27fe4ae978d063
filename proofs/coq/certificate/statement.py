"""What a certificate's two theorems state, pinned by what the kernel prints.

A certificate ends in ``Theorem NAME_min_bos_mass : min_bos_mass_at_least d L NAME_M NAME_q`` and
``Theorem NAME_max_bos_at_trigger : max_bos_mass_at_trigger_at_most d L NAME_M NAME_p``. Their
names say nothing of their meaning: that lives in ``Head.v``'s definitions, in every definition
those unfold to, and in ``NAME_M := form NAME_N NAME_D``. So after the compile ``verify`` has
coqc print, with ``Set Printing All`` and every module Required but none Imported (each name with
its module), the two theorems' types, ``NAME_M``'s body and every generic definition in the pinned
closure (``ROOTS`` and what they mention, down to the standard library), and compares each with
``pinned.json``. Any difference means "not checked by the Coq kernel", with the difference.

Regenerate (after reading the diff of Head.v): ``python -m proofs.coq.certificate.statement --write``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from proofs.coq import pins
from proofs.coq.coqc import coqc_path, coqc_version, run_session
from proofs.coq.source import project_files

HERE = Path(__file__).resolve().parent
LIBRARY = "SinksCert"
PINNED = HERE / "pinned.json"
ROOTS = ("Head.min_bos_mass_at_least", "Head.max_bos_mass_at_trigger_at_most", "Checker.form")


def generic_modules() -> list[str]:
    return [f[:-2] for f in project_files(HERE)]


def _nat(n: int) -> str:
    """A nat literal as ``Set Printing All`` prints it."""
    return "S (" * (n - 1) + "S O" + ")" * (n - 1) if n > 0 else "O"


def expected(d: int, L: int, name: str) -> dict[str, str]:
    """What the kernel must print for the certificate's own constants."""
    c, d, L = f"{name}.{name}", f"({_nat(d)})" if d else "O", f"({_nat(L)})" if L else "O"
    return {f"{c}_min_bos_mass": f"{c}_min_bos_mass : Head.min_bos_mass_at_least {d} {L} {c}_M {c}_q",
            f"{c}_max_bos_at_trigger": (f"{c}_max_bos_at_trigger : Head.max_bos_mass_at_trigger_at_most "
                                        f"{d} {L} {c}_M {c}_p"),
            f"{c}_M": f"{c}_M = Checker.form {c}_N {c}_D : list (list QArith_base.Q)"}


def generate(coqc: str, build: Path, deadline: float) -> dict:
    """The record ``verify`` compares with: every generic constant in the closure of ``ROOTS``."""
    definitions = pins.print_closure(coqc, build, generic_modules(), set(ROOTS), deadline, LIBRARY)
    return {"coqc": coqc_version(coqc), "printing": " ".join(pins.PRINTING) + " Every module Required, none Imported.",
            "roots": list(ROOTS), "definitions": definitions}


def load(path: Path = PINNED) -> dict:
    return json.loads(Path(path).read_text())


def verify(coqc: str, build: Path, d: int, L: int, name: str, deadline: float, pinned: dict | None = None) -> str:
    """"" when the certificate ``name`` (compiled in ``build``) states the pinned statement; else
    the first difference."""
    pinned = load() if pinned is None else pinned
    own = expected(d, L, name)
    generic = sorted(pinned["definitions"])
    commands = ([f"Check {LIBRARY}.{n}." for n in own if not n.endswith("_M")] + [f"Print {LIBRARY}.{name}.{name}_M."]
                + [f"Print {LIBRARY}.{n}." for n in generic])
    outputs, error = pins.run_commands(coqc, build, generic_modules() + [name], commands, deadline, LIBRARY)
    if error:
        return error
    printed = dict(zip(list(own) + generic, outputs))
    want = {**own, **pinned["definitions"]}
    for n in list(own) + generic:
        if printed[n] != want[n]:
            return f"{n} is not the pinned statement: " + pins.first_difference(printed[n], want[n])
    return ""


def main(argv: list[str] | None = None) -> int:
    """``--write``: compile the generic files and record the pinned closure in pinned.json."""
    import shutil
    import tempfile

    argv = sys.argv[1:] if argv is None else argv
    coqc = coqc_path()
    if argv != ["--write"] or coqc is None:
        print("usage: python -m proofs.coq.certificate.statement --write (needs coqc)", file=sys.stderr)
        return 2
    deadline = time.monotonic() + 600
    with tempfile.TemporaryDirectory() as tmp:
        for f in project_files(HERE):
            shutil.copy(HERE / f, Path(tmp) / f)
            run = run_session([coqc, "-q", "-R", ".", LIBRARY, f], Path(tmp), deadline)
            if run.returncode != 0:
                print(f"{f} does not compile: {' '.join(run.stdout.split())[:400]}", file=sys.stderr)
                return 2
        record = generate(coqc, Path(tmp), deadline)
    tmp_file = PINNED.with_suffix(".json.tmp")
    tmp_file.write_text(json.dumps(record, indent=1) + "\n")
    tmp_file.replace(PINNED)
    print(f"wrote {PINNED}: {len(record['definitions'])} definitions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
