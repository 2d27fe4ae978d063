"""What a table builder is given and returns: the run's part records (``Records``), the
exception whose message becomes a cell when the run lacks what it reads (``NotInRun``), and the
registry entry of a generated table (``Table``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


class NotInRun(Exception):
    """A builder's input is not in this run; the message is the cell to print."""


class Records:
    """The part records of one run, as the builders read them."""

    def __init__(self, parts: Any):
        self.parts = parts

    def part(self, name: str) -> Any:
        record = self.parts.get(name)
        if record is None or record.get("status") != "ok":
            raise NotInRun(f"not in this run (`sinks reproduce --only {name}`)")
        return record

    def details(self, name: str) -> Any:
        return self.part(name)["details"]

    def claim(self, part: str, key: str) -> Any:
        for c in self.part(part)["claims"]:
            if c.get("id") == key:
                return c
        raise NotInRun(f"not in this run (claim {key} of part {part}: the default `sinks reproduce` has it)")

    def table(self, part: str, title_start: str) -> Any:
        for t in self.part(part)["tables"]:
            if t["title"].startswith(title_start):
                return t
        raise NotInRun(f"not in this run (table '{title_start}' of part {part})")


@dataclass(frozen=True)
class Table:
    doc: str  # the README (relative to the repository root) that holds the region
    build: Callable[[Records], tuple[list[str], list[list[str]]]]  # (columns, rows)
    from_run: bool = True  # False: the table comes from the code alone (no provenance line)
