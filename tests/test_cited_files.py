"""Every ``results/`` file the READMEs cite is written by the command they name beside it: a
reader who runs that command finds the file. Checked against what the commands write (the parts'
files, REPORT.md, claims.json; ``sinks prove`` and ``sinks search`` on their defaults), not by a
full run."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from empirical.pipeline import published, reproduce
from empirical.pipeline.published import claims_table

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md"]
CITED = re.compile(r"results/[\w./-]+\.(?:json|md|png)")
COMMAND = re.compile(r"`?(sinks [a-z]+(?: [^`;|()]*)?)`?")


def test_written_by_is_what_the_commands_write():
    for part in reproduce.PARTS:
        assert f"results/{reproduce.part_path(Path('results'), part).name}" in \
            claims_table.written_by(f"`sinks reproduce --only {part}`")
    every = claims_table.written_by("sinks reproduce")
    assert {f"results/{reproduce.REPORT}", f"results/{published.DIGEST}"} <= every
    for command, name in (("prove", "proofs.json"), ("search", "smt.json")):
        module = __import__(f"empirical.pipeline.commands.{command}", fromlist=["run"])
        source = inspect.getsource(module)
        assert f'Path(args.out) / "{name}"' in source and 'p.add_argument("--out", default="results"' in source
        assert claims_table.written_by(f"`sinks {command} x`") == {f"results/{name}"}
    assert claims_table.written_by("`sinks construct relu`") == set()
    assert claims_table.written_by("`sinks beyond --kinds softpick`") == set()


def _segments(text: str):
    """(line number, a clause, the commands it names: its own, else its table row's first cell's)."""
    for n, line in enumerate(text.splitlines(), 1):
        cells = line.split("|")
        row = COMMAND.findall(cells[1]) if line.startswith("|") and len(cells) > 2 else []
        for cell in cells:
            for segment in re.split(r";|\. ", cell):
                yield n, segment, COMMAND.findall(segment) or row


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_results_file_a_readme_cites_comes_from_the_command_beside_it(readme):
    wrong = []
    for n, segment, commands in _segments(readme.read_text()):
        for cited in CITED.findall(segment):
            if not any(cited in claims_table.written_by(c) for c in commands):
                wrong.append(f"line {n}: {cited} beside {commands or 'no command'}")
    assert not wrong, "\n".join(wrong)


def test_a_row_citing_a_file_its_command_does_not_write_names_the_command_that_does():
    row = claims_table.Row("c", "`sinks construct relu`", "`tests/t.py`", "`results/constructions.json`", None)
    assert row.check() == ("`sinks construct relu`; `results/constructions.json` from "
                           "`sinks reproduce --only constructions`; `tests/t.py`")
    row = claims_table.Row("c", "`sinks reproduce --only smt`", "`tests/t.py`", "`results/smt.json`", None)
    assert row.check() == "`sinks reproduce --only smt` (`results/smt.json`); `tests/t.py`"
