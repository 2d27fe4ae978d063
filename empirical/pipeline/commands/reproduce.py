"""``sinks reproduce``: run the proofs, constructions, SMT and training parts; write ``results/``.

Each part's result is kept as ``<out>/<part>.json`` and reused on the next run with the same
settings (``--force`` reruns); ``<out>/REPORT.md`` tables every claim with its verdict.
"""

from __future__ import annotations

import argparse
import sys
import time


def add_parser(sub: argparse._SubParsersAction) -> None:
    from empirical.pipeline.reproduce import PARTS

    p = sub.add_parser("reproduce", help="run every part of the suite and write results/ with REPORT.md")
    p.add_argument("--quick", action="store_true", help="reduced version of every part (measured: 5.1 min of CPU time, "
                   "user + system, on a 2-core AMD EPYC, 2026-12-07; its wall time depends on the load: 21 min at "
                   "load 5-11, the default run's CPU time is about 7 times as much)")
    p.add_argument("--device", default="auto", help="torch device for training: auto (CUDA if present), cpu, cuda[:N]")
    p.add_argument("--out", default="results", help="results folder (default: results)")
    p.add_argument("--only", nargs="+", metavar="PART", help=f"run only these parts, of: {', '.join(PARTS)}")
    p.add_argument("--force", action="store_true", help="rerun parts whose stored result matches")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from empirical.host.device import resolve_device
    from empirical.pipeline.reproduce import check_selection, reproduce

    check_selection(args.only)  # bad names fail before anything runs
    device = resolve_device(args.device)
    start = time.perf_counter()
    try:
        statuses = reproduce(args.out, args.quick, device, args.only, args.force,
                             log=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (empirical.host.signals)
        from empirical.host.signals import stopped

        return stopped(e, f"finished parts are kept in {args.out}, rerun to resume")
    from empirical.pipeline import published

    published.write_digest(args.out, log=lambda line: print(line, file=sys.stderr))
    print(f"reproduce: {time.perf_counter() - start:.1f} s wall time", file=sys.stderr)
    missing = [name for name, status in statuses.items() if status == "missing"]
    failed = [name for name, status in statuses.items() if status == "failed"]
    if missing:
        print(f"sinks: parts not available yet: {', '.join(missing)}", file=sys.stderr)
    if failed:
        print(f"sinks: parts failed (see {args.out}/REPORT.md): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
