"""eta bracketed over every input with the vertex bound at the trigger (``proofs.certify.head.eta``): per
head eta_lo, eta_up by the box relaxation alone and with the vertex bound, their ratios, where each
is attained and the CPU time; per trigger position the box part beside the vertex bound.

    python -m tests.benchmarks.bench_eta_vertices WEIGHTS [--L 16] [--out FILE] [--workers 2]
    python -m tests.benchmarks.bench_eta_vertices --results results [--heads 0 2 ...] [--out FILE]

(from the checkout root). WEIGHTS is any file ``sinks certify`` reads (every seed of a training
summary); ``--results`` takes the worst-case and reference heads of a ``sinks reproduce`` results
folder (``bench_eta_dual.heads_of``). ``--out`` (a JSON file, written atomically after every head)
resumes an interrupted run without computing a finished head again; ``--workers`` runs heads on
that many processes (one thread each).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from constructions.numbers import format_down, format_up


def _save(path: Path | None, data: dict) -> None:
    if path is None:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _head(job) -> tuple[str, dict]:
    from proofs.certify.head import eta, sink
    from proofs.certify.arithmetic import heads, native

    label, net, L = job
    start = time.process_time()
    h = heads.head_maps(net)
    cert = sink.certify_head(net, L)
    sink_cpu = time.process_time() - start
    out = eta.bracket(net, h, L, cert["queries"])
    keep = ("eta_up", "eta_lo", "ratio", "eta_up_box", "attained_by", "trigger", "coordinate", "vertex")
    return label, {**{k: out.get(k) for k in keep}, "sink_cpu_s": sink_cpu,
                   "eta_cpu_s": time.process_time() - start - sink_cpu, "kernels": native.record()}


def _map(f, jobs: list, workers: int):
    """f over jobs, in order of completion, on ``workers`` processes (one thread each)."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(f, jobs)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from empirical.host.device import limit_threads

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=limit_threads, initargs=(1,)) as pool:
        for fut in as_completed([pool.submit(f, job) for job in jobs]):
            yield fut.result()


def row_text(label: str, r: dict) -> str:
    box = r["eta_up_box"] if r.get("eta_up_box") is not None else r["eta_up"]
    # eta_lo rounded down, both eta_up up; the ratios (how loose, no bound) to nearest
    return (f"| {label} | {format_down(r['eta_lo'], 6)} | {format_up(box, 6)} | {box / r['eta_lo']:.3f} | "
            f"{format_up(r['eta_up'], 6)} | "
            f"{r['ratio']:.3f} | {r['attained_by']} | {r['eta_cpu_s']:.0f} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("weights", nargs="?", type=Path)
    p.add_argument("--results", type=Path)
    p.add_argument("--heads", type=int, nargs="+", help="with --results: only these heads (bench_eta_dual's order)")
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--out", type=Path)
    p.add_argument("--workers", type=int, default=1, help="processes, one head each at a time")
    a = p.parse_args(argv)
    if (a.weights is None) == (a.results is None):
        print("give WEIGHTS or --results, not both", file=sys.stderr)
        return 2
    if a.results is not None:
        from tests.benchmarks.bench_eta_dual import heads_of

        nets = heads_of(a.results)
        nets = [nets[i] for i in a.heads if 0 <= i < len(nets)] if a.heads else nets
    else:
        from empirical.weights.formats import load

        nets = [(item.label, item.network) for item in load(a.weights)]
    if not nets:
        print("no heads found", file=sys.stderr)
        return 2
    state = json.loads(a.out.read_text()) if a.out and a.out.exists() else {}
    print("| head | eta_lo | eta_up (box) | ratio | eta_up (vertex) | ratio | where | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for label in [lb for lb, _ in nets if lb in state]:
        print(row_text(label, state[label]), flush=True)
    jobs = [(label, net, a.L) for label, net in nets if label not in state]
    for label, res in _map(_head, jobs, a.workers):
        state[label] = res
        _save(a.out, state)
        print(row_text(label, res), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
