"""Certificates over every input for any weights, next to what the evaluation set measures.

``certify_network(net, L)`` runs ``proofs.certify`` on one network: a single-layer single-head
network gets the exact per-query worst case of its sink, eta_up / eta_lo and the T1 check; a stack
gets the per-head bound of ``proofs.certify.stack.affine_stack`` (affine forms of the stream in the contents). ``measure(net, L)`` adds the BOS
mass measured on the 1,000 evaluation sequences of ``sinks train`` (trigger 7, same seed) and, for
a single head, the per-example bound of ``empirical.training.bound``, per query position. A stack's
certificate is the affine-form ("box") method by default; ``stack_method="zonotope"`` runs
``proofs.certify.stack.zono_stack`` instead (both are sound, neither dominates). ``heat_map``
draws the certified minimum beside the measured mean, per head and position.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

EVAL_SEQUENCES = 1000
EVAL_TRIGGER = 7
STACK_METHODS = ("box", "zonotope", "linear", "directional", "joint")  # the stack certificates: affine forms with
# interval remainders, zonotopes, the affine forms with linearised mixtures, with centred mixtures read along
# directions, and those with every key's weight bounds searched jointly over the query's content


def is_single_head(net) -> bool:
    return len(net.layers) == 1 and net.layers[0].heads == 1 and not net.residual


def certify_network(net, L: int, vertex: bool = True, target_ratio: float | None = None,
                    stack_method: str = "box", joint_nodes: int | None = None) -> dict[str, Any]:
    """Every certificate that applies to ``net`` (pure mathematics; no torch); ``vertex``: eta_up at
    the trigger tightened by the bound over every trigger content (``proofs.certify.head.eta``), refined
    until eta_up / eta_lo is at most ``target_ratio`` (None: ``eta.TARGET_RATIO``); a stack by
    ``stack_method`` (one of STACK_METHODS; single heads ignore it; ``joint_nodes``: the joint method's
    boxes per search, None its default)."""
    from proofs.certify.head import eta, sink, t1
    from proofs.certify.arithmetic import heads
    from proofs.certify.stack import affine_stack

    target_ratio = eta.TARGET_RATIO if target_ratio is None else target_ratio
    eta.check_target_ratio(target_ratio)

    start, cpu = time.perf_counter(), time.process_time()
    if net.kind == "relu" and is_single_head(net):
        from proofs.certify.head import free

        out = free.certify_relu(net, L)
        return {"type": "relu head", **out, "seconds": time.perf_counter() - start}
    heads.check_kind(net.kind)
    if not is_single_head(net) and stack_method == "zonotope":
        from proofs.certify.stack import zono_stack

        return {"type": "stack", "stack_method": "zonotope", **zono_stack.certify_stack(net, L)}  # 1 class per j
    if not is_single_head(net):
        # layer 0 by the stack's own search (shared across trigger positions, stopped at SEARCH_RTOL):
        # the exact single-layer certificate closes to 1e-9 but costs about as much as the rest
        linear, along, joint = stack_method == "linear", stack_method in ("directional", "joint"), stack_method == "joint"
        extra = {} if joint_nodes is None else {"joint_nodes": joint_nodes}
        out = affine_stack.certify_stack(net, L, exact_first=False, linear=linear, along=along, joint=joint, **extra)
        out["seconds"] = time.perf_counter() - start
        return {"type": "stack", "stack_method": stack_method if linear or along else "box", **out}
    cert = sink.certify_head(net, L)
    h = heads.head_maps(net)
    bracket = eta.bracket(net, h, L, cert["queries"], vertex, target_ratio)
    out = {"type": "single head", **cert, "eta": bracket}
    out["t1"] = t1.table(cert["queries"], bracket["eta_up"], L) if net.kind == "softmax" else None
    out["seconds"], out["cpu_seconds"] = time.perf_counter() - start, time.process_time() - cpu
    return out


def certify_networks(nets: list, L: int | list[int], workers: int = 1,
                     target_ratio: float | None = None) -> list[dict[str, Any]]:
    """``certify_network`` of each of ``nets`` (``L``: one length for all, or one per net), in
    order, on up to ``workers`` processes (each one thread), started in the given order: the
    certificates are independent and pure, so the results equal the serial ones and only the
    wall time changes (the training part's 4 x 4 stacks take ~60 s CPU each)."""
    lengths = list(L) if isinstance(L, (list, tuple)) else [L] * len(nets)
    if len(lengths) != len(nets):
        raise ValueError(f"{len(nets)} networks but {len(lengths)} lengths")
    workers = max(1, min(workers, len(nets)))
    from empirical.host import watch

    with watch.stage("certificates over every input", len(nets)) as stage:
        if workers == 1:
            return [_advanced(stage, certify_network(net, n, target_ratio=target_ratio)) for net, n in zip(nets, lengths)]
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from empirical.host.device import limit_threads
        from empirical.host.signals import stop_pool

        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=limit_threads, initargs=(1,)) as pool:
            try:
                return [_advanced(stage, c) for c in pool.map(certify_network, nets, lengths, [True] * len(nets),
                                                              [target_ratio] * len(nets))]
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the running certificates stop too, not only the queued
                stop_pool(pool)
                raise


def _advanced(stage, cert):
    stage.advance()
    return cert


def measure(net, L: int, sequences: int = EVAL_SEQUENCES, trigger: int | None = None) -> dict[str, Any]:
    """Measured BOS mass per head and query position (mean, min over the evaluation sequences),
    and for a single head the per-example certified bound's minimum per position. The trigger is
    at 7 as in ``sinks train`` (at L - 2 when L <= 8)."""
    import torch

    from constructions import task
    from empirical.training import bound
    from empirical.training.model import from_network
    from empirical.training.train import EVAL_SEED

    trigger = trigger if trigger is not None else min(EVAL_TRIGGER, L - 2)
    model = from_network(net, dtype=torch.float64)
    cfg = task.TaskConfig(d=net.d, L=L, trigger=trigger, residual=net.residual)
    batch = task.sample(cfg, sequences, torch.Generator().manual_seed(EVAL_SEED), dtype=torch.float64)
    with torch.no_grad():
        _, cache = model(batch.x)
    heads_out = []
    for n in range(len(net.layers)):
        bos = cache[f"L{n}.pattern"][..., 0]  # [B, H, L]
        for h in range(bos.shape[1]):
            heads_out.append({"layer": n, "head": h, "mean": bos[:, h].mean(0).tolist(), "min": bos[:, h].amin(0).tolist()})
    out = {"sequences": sequences, "trigger": trigger, "heads": heads_out}
    if is_single_head(net) and net.kind in ("softmax", "sigmoid_norm"):
        with torch.no_grad():
            images = bound.head_images(model.layers[0], batch.x, 0)
            res = bound.head_bound(images, cache["L0.pattern"][:, 0], batch.trigger)
        per_seq = res["bound"].reshape(sequences, L - 2)  # non-trigger queries 1..L-1 except the trigger
        positions = [i for i in range(1, L) if i != trigger]
        mins = per_seq.amin(0).tolist()
        out["per_example_bound_min"] = {i: m for i, m in zip(positions, mins)}
    return out


def comparison_rows(cert: dict, measured: dict | None) -> list[list[Any]]:
    """Per non-trigger (position, case) of a single head: certified min, T1's bound, per-example
    bound and measured mean / min on the evaluation sequences (trigger 7: before for i < 7)."""
    t1rows = {(r["position"], r["case"]): r for r in (cert.get("t1") or {}).get("rows", [])}
    rows = []
    for q in cert["queries"]:
        if q["case"] == "trigger":
            continue
        i = q["position"]
        t = t1rows.get((i, q["case"]), {})
        m = measured["heads"][0] if measured else None
        matches = measured and i != measured["trigger"] and (i < measured["trigger"]) == (q["case"] == "before")
        per_example = (measured or {}).get("per_example_bound_min", {}).get(i) if matches else None
        rows.append([i, q["case"], q["certified"], t.get("t1_bound"), t.get("verdict", "-"), per_example,
                     m["mean"][i] if matches else None, m["min"][i] if matches else None])
    return rows


def nontrigger_mass(measured: dict, k: int) -> tuple[float, float]:
    """(mean, min) BOS mass of head k over the evaluation sequences' non-trigger queries."""
    skip = (0, measured["trigger"])
    h = measured["heads"][k]
    return (sum(v for i, v in enumerate(h["mean"]) if i not in skip) / (len(h["mean"]) - 2),
            min(v for i, v in enumerate(h["min"]) if i not in skip))


def stack_status(certified_min: float, level: float, measured_mean: float | None, bracket: dict | None = None) -> str:
    """A stack head's verdict in words: the bound certifies a sink at ``level``; or an input
    replayed exactly puts the head below it (``bracket``, from ``stack_attack.brackets``:
    refuted); or neither, and then either the head does not sink on the evaluation set (mean <=
    STACK_SINK_MASS) or the bracket [certified minimum, worst input found] is open (without a
    bracket: the bound is too weak to say, a vacuous bound being no evidence either way)."""
    from constructions.numbers import format_down, format_up
    from empirical.training.metrics import STACK_SINK_MASS

    if certified_min >= level:
        return f"sink certified (>= {level} on every input)"
    if bracket is not None and bracket["verdict"] == "refuted":
        return (f"refuted: a_i0 <= {format_up(bracket['worst_found'], 4)} < {level} at query {bracket['query']} "
                f"(trigger {bracket['trigger']}) on an input replayed exactly")
    if measured_mean is not None and measured_mean <= STACK_SINK_MASS:
        return "no sink certified (the head does not sink on the eval set)"
    if bracket is not None:
        return (f"unknown: bracket [{format_down(certified_min, 4)}, {format_up(bracket['worst_found'], 4)}], "
                f"width {format_up(bracket['width'], 3)}")
    return "no useful bound"


def stack_rows(cert: dict, measured: dict | None, zonotope: dict | None = None,
               brackets: dict | None = None) -> list[list[Any]]:
    """Per head of a stack: measured non-trigger BOS mass (mean, min; eval set), the certified
    minimum over every input and non-trigger query (and the zonotope's beside it, when given), and
    the verdict in words, of the larger certified bound (each is sound, so their maximum is) and
    the head's bracket when it was searched (``brackets``: ``stack_attack.brackets``)."""
    found = {(b["layer"], b["head"]): b for b in (brackets or {}).get("heads", [])}
    rows = []
    for k, h in enumerate(cert["heads"]):
        mean, low = nontrigger_mass(measured, k) if measured else (None, None)
        figures = [h["min_bos_certified"]] + ([zonotope["heads"][k]["min_bos_certified"]] if zonotope else [])
        b = found.get((h["layer"], h["head"]))
        rows.append([f"L{h['layer']}H{h['head']}", mean, low, *figures,
                     stack_status(max(figures), cert["sink_level"], mean, b)])
    return rows


def stack_sides(with_zonotope: bool) -> tuple:
    """How ``stack_rows``' columns are rounded when printed: the certified minima are lower
    bounds (rounded down), the measured figures to nearest (``constructions.numbers.format_bound``)."""
    return (None, None, None, "lower", *(("lower",) if with_zonotope else ()), None)


def stack_columns(with_zonotope: bool) -> list[str]:
    """``stack_rows``' column names."""
    figures = ["certified min a_i0 (every input, non-trigger)"]
    if with_zonotope:
        figures = ["certified min a_i0, affine forms (box)", "certified min a_i0, zonotope"]
    return ["head", "measured mean (eval set, non-trigger)", "measured min (eval set)", *figures, "verdict"]


def first_below(cert: dict) -> list[tuple[str, int, float, float]]:
    """Each head of a stack certificate below the sink level somewhere: (head, the first non-trigger
    query where its bound, minimised over the trigger positions, is below the level, the bound
    there, its certified minimum): where the bound is lost along the sequence."""
    out = []
    for h in cert["heads"]:
        values = h["per_position"]
        first = next((i for i, v in enumerate(values) if v is not None and v < cert["sink_level"]), None)
        if first is not None:
            out.append((f"L{h['layer']}H{h['head']}", first, values[first], h["min_bos_certified"]))
    return out


STACK_COLUMNS = stack_columns(False)

COLUMNS = ["position", "case", "certified min a_i0 (every input)", "T1 bound 1 - f(eta_up)", "T1 check",
           "per-example bound (min, eval set)", "measured mean (eval set)", "measured min (eval set)"]
# how each column is rounded when printed: the certified minimum, T1's bound and the per-example
# bound are lower bounds on a_i0 (rounded down); the measured figures to nearest
COLUMN_SIDES = (None, None, "lower", "lower", None, "lower", None, None)


def heat_map(results: list[dict], path: str | Path) -> Path:
    """Write ``heat_map_figure(results)`` as a PNG."""
    from empirical.training.figures import save_png

    return save_png(heat_map_figure(results), path)


def heat_map_figure(results: list[dict]):
    """1 - certified minimum BOS mass (every input) above 1 - the measured mean, per head and
    query position, on a log colour scale: the sinks live in 0.99-1, where a linear scale shows one
    colour. The measured panel is drawn only when something was measured."""
    import numpy as np
    from matplotlib.colors import LogNorm

    from empirical.training.figures import FLOOR, _plt

    plt = _plt()
    rows, labels, meas, sides = [], [], [], []  # sides: how a certified row's 1 - value is bounded
    for r in results:
        cert, m = r["certificate"], r.get("measured")
        L = cert["L"]
        if cert["type"] == "relu head":
            rows.append(np.array([np.nan] + [q["max_bos_weight"] for q in cert["queries"]]))
            labels.append(f"{r['label']} L0H0 (max)")
            sides.append("lower")  # 1 - a maximum: a lower bound on 1 - a_i0
            meas.append(_measured(m, 0, L))
        elif cert["type"] == "single head":
            worst = np.full(L, np.nan)
            for q in cert["queries"]:
                if q["case"] != "trigger":
                    worst[q["position"]] = np.fmin(worst[q["position"]], q["certified"]) if not np.isnan(worst[q["position"]]) else q["certified"]
            rows.append(worst)
            labels.append(f"{r['label']} L0H0")
            sides.append("upper")  # 1 - a minimum: an upper bound on 1 - a_i0
            meas.append(_measured(m, 0, L))
        else:
            for k, hd in enumerate(cert["heads"]):
                rows.append(np.array([np.nan if v is None else v for v in hd["per_position"]]))
                labels.append(f"{r['label']} L{hd['layer']}H{hd['head']}")
                sides.append("upper")
                meas.append(_measured(m, k, L))
    panels = [(rows, sides, "certified: 1 - min BOS mass over every input (non-trigger queries)")]
    if not np.all(np.isnan(np.array(meas, dtype=float))):
        panels.append((meas, [None] * len(meas), "measured: 1 - mean BOS mass (eval set, trigger 7)"))
    norm = LogNorm(vmin=FLOOR, vmax=1)
    # panels one above the other, about 0.45 inch per query so that every cell's value fits
    fig, axes = plt.subplots(len(panels), 1, figsize=(0.45 * (L - 1) + 3, len(panels) * (0.9 + 0.4 * len(rows)) + 0.6),
                             squeeze=False, layout="constrained")
    axes = axes.T
    for ax, (data, row_sides, title) in zip(axes[0], panels):
        values = np.array(data, dtype=float)[:, 1:]  # query 0 (BOS itself) left out
        gap = np.clip(1 - values, FLOOR, 1)
        im = ax.imshow(gap, norm=norm, cmap="viridis_r", aspect="auto")
        for (r, c), v in np.ndenumerate(gap):
            ax.text(c, r, _gap_text(values[r, c], row_sides[r]), ha="center", va="center",
                    fontsize=5.5, color="white" if v < 1e-2 else "black")
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xticks(range(gap.shape[1]), range(1, gap.shape[1] + 1), fontsize=6)
        ax.set_xlabel("query position i (—: the trigger, or nothing certified there)", fontsize=7)
        ax.set_title(title, fontsize=8)
    bar = fig.colorbar(im, ax=axes[0].tolist(), shrink=0.9)
    bar.set_label("1 - a_i0, log scale", fontsize=7)
    fig.suptitle(f"BOS mass as 1 - a_i0 (small = strong sink; 1 = nothing on BOS; {FLOOR:g} or less drawn at "
                 f"{FLOOR:g})", fontsize=8)
    return fig


def _gap_text(x: float, side: str | None) -> str:
    """A heat-map cell's 1 - x at one digit: a certified row's from the exact value on its ``side``
    (``constructions.numbers.format_bound``), a measured one to nearest. Drawn like the colour (at most FLOOR as
    FLOOR, 0.995 and above as 1) except for a lower bound, where that would write more than it is."""
    from fractions import Fraction

    from constructions.numbers import format_bound
    from empirical.training.figures import FLOOR

    if x != x:  # NaN: the trigger, or nothing certified there
        return "—"
    gap = 1 - Fraction(x)
    if side == "lower":
        return format_bound(gap, 1, side)
    gap = max(gap, Fraction(FLOOR))
    return "1" if gap >= Fraction(995, 1000) else format_bound(gap, 1, side)


def _measured(m: dict | None, head: int, L: int):
    """Head ``head``'s measured mean BOS mass per query, the trigger query blanked (it is no
    non-trigger query); all NaN when nothing was measured."""
    import numpy as np

    if not m:
        return np.full(L, np.nan)
    row = np.array(m["heads"][head]["mean"], dtype=float)
    row[m["trigger"]] = np.nan
    return row
