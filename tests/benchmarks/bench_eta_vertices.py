"""eta_up over every input with the vertex bound at the trigger (``proofs.certify.trigger_vertices``):
per trigger position the box relaxation's bound beside the vertex bound, and the head's eta_up
with each position's part the smaller of the two, over eta_lo.

    python -m tests.benchmarks.bench_eta_vertices WEIGHTS [--L 16] [--positions J ...] [--out FILE] [--workers 2]
    python -m tests.benchmarks.bench_eta_vertices --results results [--heads 0 2 ...] [--out FILE]

(from the checkout root; softmax single heads with d <= 19). WEIGHTS is any file ``sinks certify``
reads (every seed of a training summary); ``--results`` takes the worst-case and reference heads of a
``sinks reproduce`` results folder (``bench_eta_dual.heads_of``). The cost is about 15 s CPU per
row and position on this machine (26 rows of the 32 at d = 16), so about 90 min per head over all 14
positions of L = 16: positions go in order of their box bound, and ``--out`` (a JSON file, written
atomically after every position) resumes where an interrupted run stopped, recomputing nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def _save(path: Path | None, data: dict) -> None:
    if path is None:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _position(job) -> tuple[int, dict, float]:
    from proofs.certify import heads, trigger_vertices as tv

    net, j, start, cells, kw = job
    t = time.process_time()
    res = tv.position_bound(heads.head_maps(net), j, start, cells, **kw)
    return j, res, time.process_time() - t


def _map(f, jobs: list, workers: int):
    """f over jobs, in order of completion, on ``workers`` processes (one thread each)."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(f, jobs)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from empirical.sweep import limit_threads

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=limit_threads, initargs=(1,)) as pool:
        for fut in as_completed([pool.submit(f, job) for job in jobs]):
            yield fut.result()


def head_rows(label: str, net, L: int, positions, done: dict, save, cells: int, workers: int = 1,
              kw: dict | None = None) -> dict:
    """Per position: box part, vertex bound and CPU; then the tightened eta_up. ``done`` holds the
    positions already computed (from ``--out``) and is updated in place; ``save`` is called after
    each position."""
    from empirical.certify import certify_network
    from proofs.certify import heads, trigger_vertices as tv

    h = heads.head_maps(net)
    if "eta" not in done:
        eta = certify_network(net, L)["eta"]
        done["eta"] = {k: eta[k] for k in ("eta_up", "eta_lo", "attained_by", "by_part")}
        save()
    eta = done["eta"]
    trig = {int(k.split()[1]): v for k, v in eta["by_part"].items() if k.startswith("trigger ")}
    todo = [j for j in sorted(trig, key=lambda j: -trig[j]) if positions is None or j in positions]
    todo = [j for j in todo if str(j) not in done.setdefault("positions", {})]
    starts = tv.trigger_starts(h, L) if todo else {}
    jobs = [(net, j, [float(v) for v in starts.get(j, [1.0] * h.n)], cells, kw or {}) for j in todo]
    for j, res, cpu in _map(_position, jobs, workers):
        settings = {"cells": cells, "grid": tv.GRID, "rounds": tv.ROUNDS, "active": tv.ACTIVE, "steps": tv.STEPS, **(kw or {})}
        done["positions"][str(j)] = {"box": trig[j], "vertex": res["bound"], "rows": res["rows_bounded"],
                                     "worst_row": res["worst_row"], "cpu_s": cpu, "settings": settings}
        save()
        print(f"  {label} trigger {j}: box {trig[j] / eta['eta_lo']:.3f}, vertex {res['bound'] / eta['eta_lo']:.3f}"
              f" x eta_lo ({cpu:.0f} s CPU)", flush=True)
    vertex = {int(j): p["vertex"] for j, p in done["positions"].items()}
    tight = tv.tightened_eta(eta["by_part"], vertex)
    return {"head": label, **eta, "tightened": tight["eta_up"], "tightened_by": tight["attained_by"],
            "positions_bounded": len(vertex), "positions": len(trig)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("weights", nargs="?", type=Path)
    p.add_argument("--results", type=Path)
    p.add_argument("--heads", type=int, nargs="+", help="with --results: only these heads (bench_eta_dual's order)")
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--positions", type=int, nargs="+", help="only these trigger positions")
    p.add_argument("--cells", type=int, default=None)
    p.add_argument("--out", type=Path)
    p.add_argument("--workers", type=int, default=1, help="processes, one position each at a time")
    p.add_argument("--rounds", type=int, help="rounds of re-choosing lambda (default trigger_vertices.ROUNDS)")
    p.add_argument("--active", type=int, help="points added to lambda's active set per round (default ACTIVE)")
    p.add_argument("--steps", type=int, help="golden-section steps of the later choices (default STEPS)")
    a = p.parse_args(argv)
    from proofs.certify import trigger_dual

    if (a.weights is None) == (a.results is None):
        print("give WEIGHTS or --results, not both", file=sys.stderr)
        return 2
    if a.results is not None:
        from tests.benchmarks.bench_eta_dual import heads_of

        nets = heads_of(a.results)
        nets = [nets[i] for i in a.heads if 0 <= i < len(nets)] if a.heads else nets
    else:
        from empirical.weights import load

        nets = [(item.label, item.network) for item in load(a.weights)]
    if not nets:
        print("no heads found", file=sys.stderr)
        return 2
    state = json.loads(a.out.read_text()) if a.out and a.out.exists() else {}
    print("| head | eta_up (box) | eta_lo | ratio | positions with the vertex bound | eta_up (vertex) | ratio | where |")
    print("|---|---|---|---|---|---|---|---|")
    for label, net in nets:
        kw = {k: v for k, v in (("rounds", a.rounds), ("active", a.active), ("steps", a.steps)) if v is not None}
        r = head_rows(label, net, a.L, a.positions, state.setdefault(label, {}), lambda: _save(a.out, state),
                      a.cells or trigger_dual.CELLS, a.workers, kw)
        print(f"| {label} | {r['eta_up']:.6f} | {r['eta_lo']:.6f} | {r['eta_up'] / r['eta_lo']:.3f} | "
              f"{r['positions_bounded']} of {r['positions']} | {r['tightened']:.6f} | {r['tightened'] / r['eta_lo']:.3f} | "
              f"{r['tightened_by']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
