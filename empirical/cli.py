"""The ``sinks`` command line.

Each subcommand lives in ``empirical/commands/<name>.py`` with ``add_parser(subparsers)`` (which
sets ``run`` as the default handler) and imports heavy packages (torch, z3) inside its handler,
so ``sinks prove`` never loads torch. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from constructions.errors import BadInput

COMMANDS = ("reproduce", "prove", "construct", "search", "train", "certify", "beyond", "sweep", "report", "task", "probe")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sinks",
        description="Check that attention sinks are necessary in softmax transformers "
        "(Ran-Milo, arXiv:2603.11487): proofs, constructions, SMT search and training.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"empirical.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except BadInput as e:
        print(f"sinks: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
