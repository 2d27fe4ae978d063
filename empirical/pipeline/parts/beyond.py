"""Part ``beyond`` of ``sinks reproduce``: every attention kind and task variant, predicted
against measured, in one table each.

For each kind: the registry's one-line prediction (a normalised kind needs a sink; a kind that
can abstain does not), the construction verdict (``constructions.abstaining_heads`` for the
kinds that can abstain; the constructions part for softmax and ReLU), whether z3 can express it,
and training over seeds with BOS (where does the mass go at non-trigger queries) and without BOS
(``no_bos``: can the task be solved with no content-free key at all?). For each variant: does the
softmax sink survive, and at what error. A prediction that fails is reported as failing.

What "prediction held" means (``predict``):

- normalised kind (softmax, sigmoid_norm): with BOS every seed sinks (BOS mass > 0.9 at
  non-trigger queries); without BOS no seed reaches the stop rule (no content-free key to park on).
- kind that can abstain, with an abstaining construction (softmax1, sink_logit, gated, sigmoid):
  the construction verifies (error -> 0 with BOS mass -> 0); without BOS, training reaches the
  stop rule (softmax1, sink_logit, gated). sigmoid and relu divide by max(i, 1), which counts
  position 0 as BOS: without BOS the trigger row would need weight 1/(j+1) on j+1 tokens from
  scores that cannot see j, so they are predicted NOT to solve no_bos exactly -- for a reason
  that has nothing to do with sinks (their rows still put ~0 on position 0).
- relu: no sink with BOS (BOS mass < 0.01).
- Training of a kind that can abstain WITH BOS available is reported, not judged: "no sink is
  needed" does not say gradient descent avoids BOS, and softmax1 / sink_logit do park mass there.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from constructions import abstaining_heads, attention
from constructions.errors import BadInput

from .beyond_claims import construction_claim, kind_claim, up, variant_claim

SINK = 0.9  # BOS mass above which a run counts as sinking
NO_SINK = 0.01  # BOS mass below which a run counts as not sinking
DIVIDES_BY_POSITION = ("relu", "sigmoid")  # rows divide by max(i, 1) (constructions.attention)
GAPS = (1, 2, 4, 6, 8, 10, 12, 14, 16)
TEST = "tests/test_beyond_training.py"


@dataclass(frozen=True)
class Plan:
    """What to train: kinds x variants x shapes, ``seeds`` seeds each, at most ``max_steps``
    steps. ``lr`` None is the reference (1e-3 one layer, 1e-4 several)."""

    kinds: tuple[str, ...]
    variants: tuple[str, ...]
    shapes: tuple[tuple[int, int], ...] = ((1, 1),)
    seeds: int = 5
    max_steps: int = 3000
    lr: float | None = None
    eval_sequences: int = 200

    def __post_init__(self) -> None:
        from empirical.analysis import beyond_runs

        for name in ("kinds", "variants", "shapes"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
                raise BadInput(f"plan field {name!r} must be a non-empty list, got {value!r}")
            object.__setattr__(self, name, tuple(tuple(v) if isinstance(v, list) else v for v in value))
        for kind in self.kinds:
            attention.get(kind)  # BadInput listing the valid kinds
        for variant in self.variants:
            beyond_runs.variant_fields(variant)  # BadInput listing the valid variants
        for shape in self.shapes:
            if (not isinstance(shape, tuple) or len(shape) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in shape)):
                raise BadInput(f"plan field 'shapes' must hold [layers, heads] pairs of positive integers, got {shape!r}")
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 1:
            raise BadInput(f"plan field 'seeds' must be a positive integer, got {self.seeds!r}")
        self.jobs()  # every run's training config is validated here, before anything runs

    def jobs(self):
        from empirical.analysis import beyond_runs
        from empirical.pipeline.sweep import Job

        out = []
        for layers, heads in self.shapes:
            for variant in self.variants:
                for kind in self.kinds:
                    run = beyond_runs.BeyondRun(kind, variant, layers, heads, self.max_steps, self.lr,
                                           32 if variant == "length256" else self.eval_sequences)
                    out.append(Job("empirical.beyond:train_run", run, tuple(range(self.seeds))))
        return out


def plans(quick: bool) -> list[Plan]:
    """The reduced set (``--quick``, ~20 s) and the default (~6 minutes on 2 loaded cores)."""
    all_kinds = attention.names()
    if quick:  # the decisive contrast: without BOS softmax cannot solve the task, softmax1 can
        return [Plan(("softmax",), ("no_bos",), seeds=2, max_steps=500),
                Plan(("softmax1",), ("no_bos",), seeds=2, max_steps=1500)]
    # no_bos gets a 6000-step cap for every kind: gated needs ~5400 steps there (Adam moves a
    # weight ~lr per step, and a closed gate needs weights of ~5); one cap for all keeps it fair.
    # 2x2 uses lr 1e-3 instead of the reference 1e-4 so that it stops in ~2000 steps, not ~12,000.
    return [Plan(all_kinds, ("reference",), seeds=5, max_steps=3000),
            Plan(all_kinds, ("no_bos",), seeds=2, max_steps=6000),
            Plan(("softmax",), ("triggers3", "gaussian", "retrieval", "length64", "length256"), seeds=3),
            Plan(("softmax", "softmax1"), ("reference",), shapes=((2, 2),), seeds=2, max_steps=3000, lr=1e-3)]


# ----------------------------------------------------------------------------------------
# Predictions.


def predict(kind: str, variant: str, shape: tuple[int, int] = (1, 1)) -> tuple[str, Callable[[dict], bool] | None]:
    """(one line, check on a run summary or None when the run is reported, not judged)."""
    k = attention.get(kind)
    if variant == "no_bos":
        if k.normalised:
            return "cannot solve without BOS: no content-free key", lambda s: s["converged"] == 0
        if kind in DIVIDES_BY_POSITION:
            return ("not exactly solvable without BOS (divisor max(i,1) counts position 0 as BOS), "
                    "no sink either", lambda s: s["converged"] == 0 and s["sink_mean"] < NO_SINK)
        return "solves without BOS: mass can go nowhere", lambda s: s["converged"] >= 1
    if k.normalised:
        where = "some head sinks" if shape != (1, 1) else "sinks"
        return f"{where} (BOS mass > {SINK})", lambda s: s["sink_min"] > SINK
    if kind == "relu":
        return f"no sink (BOS mass < {NO_SINK})", lambda s: s["sink_mean"] < NO_SINK
    return "no sink needed (reported: training may still use BOS)", None


def judged_phrase(kind: str, variant: str, shape: tuple[int, int]) -> str:
    """What ``predict(kind, variant, shape)`` checks, worded as a claim (``beyond_claims.kind_claim``)."""
    k = attention.get(kind)
    where = "" if shape == (1, 1) else f" in {shape[0]}x{shape[1]}"
    if variant == "no_bos":
        if k.normalised:
            return "without BOS no seed reaches the stop rule (no content-free key to park on)"
        if kind in DIVIDES_BY_POSITION:
            return (f"without BOS no seed reaches the stop rule and position 0 gets < {NO_SINK}: the divisor "
                    "max(i, 1) counts position 0 as BOS, a reason unrelated to sinks")
        return "without BOS training reaches the stop rule in some seed (the row's mass can go nowhere)"
    if k.normalised:
        return f"with BOS{where} {'some head' if where else 'the head'} sinks (BOS mass > {SINK}) in every seed"
    return f"with BOS{where} no seed sinks (BOS mass < {NO_SINK})"


SMT_INSTANCE = "K=2, length 3, eps=1/100, theta=1/2"


def smt_cell(kind: str, smt_kinds: dict[str, dict]) -> str:
    """The smt part's verdict for ``kind`` (read from its saved ``smt.json``), in words."""
    r = smt_kinds.get(kind)
    if r is None:
        return "not run (run the smt part: sinks reproduce --only smt)"
    words = {"proof": "UNSAT: sink needed", "counterexample": "SAT, replayed: no sink needed"}
    return f"{words.get(r['status'], r['status'])} ({SMT_INSTANCE})"


def stored_smt_kinds(results_dir: Path) -> dict[str, dict]:
    """Per-kind SMT verdicts from the smt part's result file, if it ran in default mode."""
    path = Path(results_dir) / "smt.json"
    try:  # sinks reproduce keeps a part's extra output under "details"
        return dict(json.loads(path.read_text())["details"].get("kinds", {}))
    except (OSError, ValueError, RecursionError, AttributeError, KeyError, TypeError):
        return {}


# ----------------------------------------------------------------------------------------
# Constructions.


def construction_results(quick: bool) -> dict[str, dict[str, Any]]:
    """Exact limit check and certified trade-off curve of each abstaining construction."""
    gaps = (2, 8, 16) if quick else GAPS
    out = {}
    for name in abstaining_heads.CONSTRUCTIONS:
        limit = abstaining_heads.verify_limit(name, L=5)
        curve = abstaining_heads.trade_off(name, gaps, L=16)
        last = curve[-1]
        falls = all(a.max_error > b.max_error for a, b in zip(curve, curve[1:]))
        out[name] = {
            "limit_L": limit.L, "weights_checked": limit.weights_checked,
            "weights_converge": limit.all_weights_converge, "failures": list(limit.failures),
            "curve": [vars(p) for p in curve], "error_falls": falls,
            "verified": limit.all_weights_converge and falls and last.max_error < 1e-3 and last.max_bos_mass < 1e-3,
            "summary": abstaining_heads.get(name).summary,
        }
    return out


def construction_cell(kind: str, constructions: dict[str, dict]) -> str:
    if kind in constructions:
        c = constructions[kind]
        p = c["curve"][-1]
        verdict = "verified exactly" if c["verified"] else "failed"
        return (f"{verdict}: every weight -> target as gap -> oo (L={c['limit_L']}); certified at gap "
                f"{p['gap']:g}, L=16: error <= {up(p['max_error'])}, BOS mass <= {up(p['max_bos_mass'])}")
    if kind in abstaining_heads.CONSTRUCTIONS:
        return "not checked in this command (sinks reproduce --only beyond)"
    if kind == "softmax":
        return "sufficiency family with a BOS sink (constructions part)"
    if kind == "relu":
        return "exact ReLU head, no sink (constructions part)"
    if attention.get(kind).can_abstain:
        return "none registered (the kind can abstain; no sink-free head checked)"
    return "none: normalised, predicted to need a sink"


def tradeoff_figure(results_dir: Path, constructions: dict[str, dict]) -> str | None:
    """Error and BOS mass against the gap for every abstaining head, next to the softmax
    sufficiency head (whose error is 1 - BOS mass): the no-sink trade-off at a glance."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # pragma: no cover
        return None
    from empirical.training.figures import save_png

    name = "beyond_tradeoff.png"
    save_png(tradeoff_plot(constructions), Path(results_dir) / name)
    return name


def tradeoff_plot(constructions: dict[str, dict]):
    """The figure of ``tradeoff_figure``; an exact 0 (softpick's BOS mass) has no place on a log
    axis, so it is drawn on a marked line of its own below the smallest positive value."""
    from constructions import softmax_head
    from empirical.training.figures import _plt

    plt = _plt()
    fig, (ax_err, ax_bos, ax_soft) = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained",
                                                  width_ratios=(1, 1, 0.6))
    # curves that coincide (softmax1 and sink_logit have the same error) stay visible: each its
    # own line style, and markers that shrink down the list, so that a later one sits inside
    styles = (("o", "-", 11), ("s", "--", 8), ("^", ":", 7), ("D", "-.", 6), ("v", (0, (5, 1, 1, 1)), 6),
              ("P", (0, (1, 2)), 6), ("X", (0, (3, 3)), 6))
    curves = [(name, c["curve"], style) for (name, c), style in zip(constructions.items(), styles * 2)]
    for ax, key in ((ax_err, "max_error"), (ax_bos, "max_bos_mass")):
        values = [p[key] for _, curve, _ in curves for p in curve]
        if any(v == 0 for v in values):  # a symlog axis has a real 0, linear just below the smallest value
            smallest = min((v for v in values if v > 0), default=1.0)
            low = math.floor(math.log10(smallest)) - 1
            ax.set_yscale("symlog", linthresh=10.0 ** low, linscale=0.4)
            ticks = [0.0] + [10.0 ** k for k in range(low + 2, 1, 2)]
            ax.set_yticks(ticks, ["0 (exact)"] + [f"$10^{{{k}}}$" for k in range(low + 2, 1, 2)])
            ax.set_ylim(-10.0 ** low, 5)
            ax.axhline(0, color="grey", lw=0.6, ls=":")
        else:
            ax.set_yscale("log")
        for name, curve, (marker, style, size) in curves:
            positive = [p for p in curve if p[key] > 0]
            line, = ax.plot([p["gap"] for p in positive], [p[key] for p in positive], marker=marker, label=name,
                            ls=style, fillstyle="none", markersize=size, mew=1.4)
            zeros = [p["gap"] for p in curve if p[key] == 0]
            if zeros:
                ax.plot(zeros, [0.0] * len(zeros), marker=marker, ls="none", color=line.get_color(), markersize=8,
                        label=f"{name}: exactly 0")
    gaps = [p["gap"] for p in next(iter(constructions.values()))["curve"]]
    ax_err.plot(gaps, [float(softmax_head.max_error(g, 16)) for g in gaps], color="0.35", lw=2.5, alpha=0.5,
                zorder=0, label="softmax (BOS sink)")
    # the softmax head's BOS mass is a minimum that tends to 1: a panel of its own, not beside maxima
    ax_soft.plot(gaps, [float(softmax_head.bos_mass(g, 15)) for g in gaps], "k-", marker="o", fillstyle="none")
    ax_soft.set(xlabel="gap g", ylabel="min BOS mass at non-trigger queries", ylim=(0, 1.05),
                title="softmax (BOS sink): the sink's mass -> 1")
    ax_err.set(xlabel="gap g", ylabel="certified worst-case max-abs error (L=16)", title="error")
    ax_bos.set(xlabel="gap g", ylabel="max BOS mass at queries >= 1", title="BOS mass of the heads that abstain")
    ax_err.legend(fontsize=7, loc="lower left")
    ax_bos.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 0.1))  # above softpick's zeros
    return fig


# ----------------------------------------------------------------------------------------
# Training and tables.


def train_all(results_dir: Path, plan_list: list[Plan], device: str) -> dict[tuple, dict]:
    """Run every job (finished ones are reused from ``results_dir/runs/beyond``); returns
    {(kind, variant, layers, heads): summary}."""
    from empirical.analysis import beyond_runs
    from empirical.host import progress
    from empirical.host.device import owned_cores
    from empirical.pipeline.sweep import run_sweep

    jobs = [job for plan in plan_list for job in plan.jobs()]
    # one job per owned core (each job sets one torch thread itself); finished runs are reused
    backend = "serial" if device != "cpu" or len(jobs) == 1 else "process"
    out_dir = Path(results_dir) / "runs" / "beyond"
    # progress: on a terminal redrawn, in a log one line per finished run (planned cost: the step
    # cap times the heads, a rough relative figure for the ETA)
    board = progress.Board(out_dir, [(j.run_id, f"{j.config.kind} {j.config.variant} {j.config.layers}x"
                                      f"{j.config.heads}", j.config.max_steps, j.config.max_steps,
                                      float(j.config.max_steps * j.config.layers * j.config.heads)) for j in jobs],
                           1 if backend == "serial" else owned_cores(), title="beyond")
    outcome = run_sweep(jobs, out_dir, backend=backend, device=device, on_event=board.event, on_wait=board.poll)
    board.close()
    if outcome.failed:
        raise RuntimeError(f"training runs failed: {outcome.failed}")
    out = {}
    for job in jobs:
        run = job.config
        summary = beyond_runs.summarise(run, outcome.records[job.run_id]["result"])
        out[(run.kind, run.variant, run.layers, run.heads)] = summary
    return out


def _sink_cell(s: dict | None) -> str:
    return "—" if s is None else f"{s['sink_mean']:.4f} / {s['sink_min']:.4f}"


def _run_cell(s: dict | None) -> str:
    if s is None:
        return "not run"
    return (f"err {s['error_max']:.2g}, {s['converged']}/{s['seeds']} stop, {s['steps_mean']:.0f} steps")


def _held(kind: str, variant: str, shape: tuple[int, int], s: dict | None) -> str | None:
    text, check = predict(kind, variant, shape)
    if s is None or check is None:
        return None
    return "yes" if check(s) else "NO"


def kind_rows(runs: dict, constructions: dict, kinds: tuple[str, ...] | None = None,
              smt_kinds: dict[str, dict] | None = None) -> tuple[list[list[str]], list[dict]]:
    rows, claims = [], []
    for kind in kinds or attention.names():
        ref, nob = runs.get((kind, "reference", 1, 1)), runs.get((kind, "no_bos", 1, 1))
        multi = runs.get((kind, "reference", 2, 2))
        checks = [(v, shape, _held(kind, v, shape, s)) for v, shape, s in
                  (("reference", (1, 1), ref), ("no_bos", (1, 1), nob), ("reference", (2, 2), multi))]
        judged = [(v, shape, held == "yes", judged_phrase(kind, v, shape)) for v, shape, held in checks
                  if held is not None]
        verdicts = [held for _, _, held in checks if held is not None]
        if kind in constructions:
            verdicts.append("yes" if constructions[kind]["verified"] else "NO")
        held = "—" if not verdicts else ("yes" if all(c == "yes" for c in verdicts) else "NO")
        rows.append([
            kind, attention.get(kind).prediction, construction_cell(kind, constructions), smt_cell(kind, smt_kinds or {}),
            _sink_cell(ref), "—" if ref is None else f"{ref['row_mass_mean']:.4f}", _run_cell(ref),
            "—" if nob is None else f"{_run_cell(nob)}; pos-0 mass {nob['sink_mean']:.3f}",
            "—" if multi is None else f"{_sink_cell(multi)}; {_run_cell(multi)}", held,
        ])
        if verdicts:
            claims.append(kind_claim(kind, judged, ref, nob, multi, constructions.get(kind)))
    return rows, claims


def variant_rows(runs: dict) -> tuple[list[list[str]], list[dict]]:
    rows, claims = [], []
    for (kind, variant, layers, heads), s in runs.items():
        if variant == "reference" or (variant == "no_bos" and kind != "softmax"):
            continue
        text, check = predict(kind, variant, (layers, heads))
        held = "—" if check is None else ("yes" if check(s) else "NO")
        rows.append([variant, f"{kind} {layers}x{heads}", text, _sink_cell(s), f"{s['error_median']:.2g} / {s['error_max']:.2g}",
                     f"{s['converged']}/{s['seeds']}", f"{s['steps_mean']:.0f}", held])
        if check is not None:
            claims.append(variant_claim(kind, variant, (layers, heads), text, held == "yes", s))
    return rows, claims


KIND_COLUMNS = ["kind", "prediction", "construction", "SMT", "1x1 BOS mass (mean / min over seeds)",
                "1x1 row mass", "1x1 training", "no BOS: training", "2x2: largest-head BOS mass; training",
                "prediction held"]
VARIANT_COLUMNS = ["variant", "model", "prediction", "BOS mass (mean / min over seeds)",
                   "error (median / max over seeds)", "stop rule reached", "steps (mean)", "prediction held"]
NOTE = ("BOS mass: mean a_i0 over non-trigger queries 1..L-1 of the evaluation set (trigger at 7; random "
        "triggers for triggers3 and the length variants; pre-trigger queries for triggers3), per seed, then mean "
        "and min over seeds; for 2x2 the largest head. Without BOS it is the mass on position 0, the first "
        "content token. Row mass: total weight of a non-trigger row (1 for normalised kinds; 1 - row mass went "
        "nowhere, or into sink_logit's slot). Errors: max-abs error on the evaluation set. 'stop' = batch "
        "max-abs error < 5e-3 within the step cap. '—' = reported, not judged.")


def run(results_dir: Path, quick: bool, device: str) -> dict[str, Any]:
    from empirical.host import watch

    with watch.stage("constructions of the kinds that can abstain"):
        constructions = construction_results(quick)
    figure = tradeoff_figure(results_dir, constructions)
    runs = train_all(results_dir, plans(quick), device)
    k_rows, k_claims = kind_rows(runs, constructions, smt_kinds=stored_smt_kinds(results_dir))
    v_rows, v_claims = variant_rows(runs)
    claims = [construction_claim(name, c, figure) for name, c in constructions.items()]
    claims += k_claims + v_claims
    return {
        "claims": claims,
        "tables": [
            {"title": "attention kinds: predicted against measured", "columns": KIND_COLUMNS, "rows": k_rows, "note": NOTE},
            {"title": "task variants: predicted against measured", "columns": VARIANT_COLUMNS, "rows": v_rows, "note": NOTE},
        ],
        "constructions": constructions,
        "runs": [{"kind": k, "variant": v, "layers": l, "heads": h, **s} for (k, v, l, h), s in runs.items()],
        "plans": [vars(p) for p in plans(quick)],
    }
