"""``sinks report``: rebuild ``REPORT.md`` and ``claims.json`` from the part files of a results
folder (runs nothing); ``--publish`` also copies ``claims.json`` into the repository and rewrites
the READMEs' generated tables from it, ``--rerender`` rewrites those tables from the committed
``empirical/pipeline/published/claims.json`` alone (``empirical.pipeline.published``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild REPORT.md from the part JSON files of a results folder")
    p.add_argument("--results", default="results", help="results folder written by sinks reproduce (default: results)")
    p.add_argument("--publish", action="store_true",
                   help="also write empirical/pipeline/published/claims.json from it and rewrite the READMEs' generated tables")
    p.add_argument("--rerender", action="store_true",
                   help="only rewrite the READMEs' generated tables from the committed claims.json (no results folder)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from constructions.errors import BadInput
    from empirical.pipeline import published
    from empirical.pipeline.reproduce import PARTS, build_report, part_path

    if args.rerender:
        if args.publish:
            raise BadInput("--rerender and --publish exclude each other: --publish rewrites the tables from --results")
        for path in published.rewrite_docs(published.committed()):
            print(path)
        return 0
    results = Path(args.results)
    if not results.is_dir():
        raise BadInput(f"results folder not found: {results}")
    if not any(part_path(results, name).exists() for name in PARTS):
        raise BadInput(f"no part results ({', '.join(f'{n}.json' for n in PARTS)}) in {results}; run sinks reproduce")
    print(build_report(results))
    print(published.write_digest(results))
    if args.publish:
        for path in published.publish(results):
            print(path)
    return 0
