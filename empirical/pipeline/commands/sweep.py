"""``sinks sweep JOBS.json``: run a list of jobs, each result kept under its run id; reruns resume.

The file is a JSON list of ``{"fn": "pkg.module.func", "config": {...}, "seeds": [0, 1]}``;
every job is validated (function importable, config fields known) before any runs.
"""

from __future__ import annotations

import argparse
import sys
import time


def add_parser(sub: argparse._SubParsersAction) -> None:
    from empirical.pipeline.sweep import BACKENDS

    p = sub.add_parser("sweep", help="run a list of jobs (JSON) in parallel; a killed sweep resumes")
    p.add_argument("jobs", help="JSON file: a list of {fn, config, seeds}")
    p.add_argument("--backend", default="process", choices=BACKENDS,
                   help="process pool (default), ray (optional extra; joins $RAY_ADDRESS) or serial")
    p.add_argument("--workers", type=int, default=None, help="parallel jobs (default: the cores this process owns)")
    p.add_argument("--out", default="results/sweep", help="folder of per-job results <run_id>.json")
    p.add_argument("--device", default="auto",
                   help="device passed to every job: auto (default: CUDA if torch sees a GPU, else the CPU), cpu, cuda[:N]")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from constructions.files import read_json
    from empirical.host.progress import duration
    from empirical.pipeline.sweep import jobs_from_json, run_sweep

    jobs = jobs_from_json(read_json(args.jobs))  # all validated before anything runs
    device = args.device
    if device != "cpu":  # torch is loaded only when a device other than the CPU is named (auto too)
        from empirical.host.device import resolve_device

        device = resolve_device(device)

    total, start, counts = len({j.run_id for j in jobs}), time.monotonic(), {"ran": 0, "skipped": 0}

    def show(kind: str, run_id: str, detail: str) -> None:
        counts["skipped" if kind == "skipped" else "ran"] += 1
        elapsed, ran = time.monotonic() - start, counts["ran"]
        left = total - ran - counts["skipped"]
        eta = f"ETA ~{duration(elapsed * left / ran)} at the rate so far" if ran else "ETA not known yet"
        if not args.quiet or kind == "failed":
            print(f"{kind:>7} {run_id} {detail}".rstrip() + f"  [{total - left}/{total}, {duration(elapsed)} elapsed, "
                  f"{eta}]", file=sys.stderr, flush=True)

    try:
        outcome = run_sweep(jobs, args.out, args.backend, args.workers, device, on_event=show)
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (empirical.host.signals)
        from empirical.host.signals import stopped

        return stopped(e, f"finished jobs are kept in {args.out}, rerun to resume")
    print(f"{len(outcome.ran)} ran, {len(outcome.skipped)} already done, {len(outcome.failed)} failed; "
          f"results in {args.out}")
    return 1 if outcome.failed else 0
