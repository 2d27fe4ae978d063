"""``sinks report``: rebuild ``REPORT.md`` from the part files of a results folder (runs nothing)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild REPORT.md from the part JSON files of a results folder")
    p.add_argument("--results", default="results", help="results folder written by sinks reproduce")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from constructions.errors import BadInput
    from empirical.reproduce import PARTS, build_report, part_path

    results = Path(args.results)
    if not results.is_dir():
        raise BadInput(f"results folder not found: {results}")
    if not any(part_path(results, name).exists() for name in PARTS):
        raise BadInput(f"no part results ({', '.join(f'{n}.json' for n in PARTS)}) in {results}; run sinks reproduce")
    print(build_report(results))
    return 0
