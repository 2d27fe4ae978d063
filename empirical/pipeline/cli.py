"""The ``sinks`` command line.

Each subcommand lives in ``empirical/pipeline/commands/<name>.py`` with ``add_parser(subparsers)`` (which
sets ``run`` as the default handler) and imports heavy packages (torch, z3) inside its handler,
so ``sinks prove`` never loads torch. Bad input is one line on stderr and exit status 2. The
dispatch sets every command's threads (``empirical.host.device.use_command_threads``).

SIGTERM (``kill``, ``timeout``, a scheduler) is handled as Ctrl-C is (``empirical.host.signals``):
it raises a ``KeyboardInterrupt``, so every interrupt path runs (workers stopped, temporary folders
removed, finished results kept); a stopped command says so in one line and exits with 143.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from constructions.errors import BadInput
from empirical.host.signals import Terminated, stop_signals, stopped

COMMANDS = ("reproduce", "prove", "construct", "search", "train", "certify", "beyond", "sweep", "report", "task", "probe")


class OneLineParser(argparse.ArgumentParser):
    """argparse with the project's bad-input rule: an error is one line on stderr and exit 2
    (argparse prints its usage block first), and ``--help`` shows every default."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelp)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


class DefaultsHelp(argparse.HelpFormatter):
    """Adds "(default: X)" to an option's help unless the help already says its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.default in (None, False)
                or action.default is argparse.SUPPRESS):
            return text
        shown = " ".join(map(str, action.default)) if isinstance(action.default, (list, tuple)) else action.default
        return f"{text} (default: {shown})"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="sinks",
        description="Check that attention sinks are necessary in softmax transformers "
        "(Ran-Milo, arXiv:2603.11487): proofs, constructions, SMT search and training.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")  # subparsers: OneLineParser
    for name in COMMANDS:
        importlib.import_module(f"empirical.pipeline.commands.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    with stop_signals():  # first: a SIGTERM at any later point runs the interrupt paths
        from empirical.host.device import use_command_threads

        args = build_parser().parse_args(argv)
        try:
            use_command_threads()  # every command: one place, before torch or numpy start their pools
            return int(args.run(args) or 0)
        except BadInput as e:
            print(f"sinks: error: {e}", file=sys.stderr)
            return 2
        except Terminated as e:  # a command with no resume of its own to tell of
            return stopped(e)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
