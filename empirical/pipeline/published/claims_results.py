"""The result cells of the top README's claims table (``claims_table.ROWS``), one function per
row. Each reads the run's part records (``Records``) and returns a ``Result``: the row's verdict
(a word of ``empirical.pipeline.reproduce.VERDICTS`` read from the part's claims, with at most a
short qualifier) and one line of headline figures. The table is a front page: the full evidence
of every claim is in the run's ``REPORT.md`` (``sinks reproduce``), and the numbers quoted here in
``claims.json``. A part or claim absent from the run raises ``NotInRun``, whose message becomes
the cell.
"""

from __future__ import annotations

import statistics
from typing import Any

from .numbers import fmt, pm, span
from .records import NotInRun, Records


class Result(str):
    """A row's verdict and figure; as a string, "verdict: figure"."""

    verdict: str
    figure: str

    def __new__(cls, verdict: str, figure: str) -> "Result":
        self = super().__new__(cls, f"{verdict}: {figure}")
        self.verdict, self.figure = verdict, figure
        return self


def _verdict(*claims: Any) -> str:
    """The common verdict of several claims, or the first one that is not the common one."""
    verdicts = [c["verdict"] for c in claims]
    return verdicts[0] if len(set(verdicts)) == 1 else next(v for v in verdicts if v != verdicts[0])


def _run(R: Records, key: str) -> Any:
    runs = R.details("training")["runs"]
    if key not in runs:
        raise NotInRun(f"not in this run (training run {key}: the default `sinks reproduce` has it)")
    return runs[key]


def _beyond_run(R: Records, kind: str, variant: str, layers: int = 1, heads: int = 1) -> Any:
    for r in R.details("beyond")["runs"]:
        if (r["kind"], r["variant"], r["layers"], r["heads"]) == (kind, variant, layers, heads):
            return r
    raise NotInRun(f"not in this run ({kind} {layers}x{heads} {variant}: the default `sinks reproduce` has it)")


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# ---- proofs ------------------------------------------------------------------------------


def _statuses(R: Records) -> dict[str, str]:
    return {v["name"]: v["status"] for v in R.details("proofs")["verdicts"]}


def _kernel(R: Records, names: tuple[str, ...]) -> str:
    """What the Coq kernel check says of these statements' twins: " (sympy + Coq, k/n
    kernel-checked)", " (sympy; Coq not run)", a failure, or "" for statements without twins."""
    kernels = [v.get("kernel") for v in R.details("proofs")["verdicts"] if v["name"] in names]
    twins = [k for k in kernels if k is not None]
    if not twins:
        return ""
    if all(k == "coq" for k in twins):
        return f" (sympy + Coq, {len(twins)}/{len(kernels)} kernel-checked)"
    if all(k == "not run" for k in twins):
        return " (sympy; Coq not run)"
    failed = sum(k not in ("coq", "not run") for k in twins)
    return f" (Coq failed on {failed}/{len(twins)} twins: unknown where it failed)"


def t1_proved(R: Records) -> Result:
    a, b, c = (R.claim("proofs", k) for k in ("t1a", "t1b", "t1c"))
    cites = next(v["cites"] for v in R.details("proofs")["verdicts"] if v["name"] == "t1_single_layer_sink")
    status = _statuses(R)
    proved = sum(status[n] == "proved" for n in cites)
    words = {k: R.claim("proofs", k)["verdict"] for k in ("t1_after_trigger_L4", "t1a_tightened_per_content",
                                                          "t1b_tightened_per_content", "t1_pre_trigger_sharp")}
    wa, wb = words["t1a_tightened_per_content"], words["t1b_tightened_per_content"]
    tight = wa if wa == wb else f"(a) {wa}, (b) {wb}"
    parts = (f"(a), (b), (c) {a['verdict']}" if a["verdict"] == b["verdict"] == c["verdict"]
             else f"(a) {a['verdict']}, (b) {b['verdict']}, (c) {c['verdict']}")
    return Result(
        f"{_verdict(a, b, c)}{_kernel(R, ('t1_single_layer_sink', *cites))}",
        f"{parts} ({proved}/{len(cites)} cited lemmas proved in the same run); sharp form 1 - a_i0 <= 2 eta + O(eta^2) before the trigger: {words['t1_pre_trigger_sharp']}; "
        f"99/100 of either constant: {tight} (tight heads); after the trigger at L = 4: {words['t1_after_trigger_L4']}")


def t2_refuted(R: Records) -> Result:
    s = _statuses(R)
    pair, interp = R.claim("constructions", "t2_cancelling"), R.claim("constructions", "question_a_interpolating")
    sizes = ", ".join(f"L = {v['L']}" for v in R.details("constructions")["exact"]["cancelling"])
    longest = max(r["L"] for r in R.details("constructions")["float"] if r["construction"].startswith("cancelling"))
    return Result(
        f"{s['t2_multi_layer_existential']}{_kernel(R, ('t2_multi_layer_existential',))}",
        f"the pair {pair['verdict']} in Q(e^beta) on every sequence of d = 4, {sizes}, float64 to L = {longest}; "
        f"open questions: (a) {s['t2_sink_at_some_query']} (interpolating heads {interp['verdict']}), "
        f"(a') {s['t2_two_heads_sink_at_some_query']}, (b) {s['t2_one_head_per_layer']}, "
        f"(c) {s['t1_one_residual_layer']}")


def t3(R: Records) -> Result:
    s = _statuses(R)
    exact = R.details("constructions")["exact"]
    heads = ", ".join(f"d = {v['d']}, L = {v['L']} ({v['sequences']:,})" for v in exact["relu"])
    stacks = ", ".join(v["construction"].split()[-1] for v in exact["relu-stack"])
    floats = [r for r in R.details("constructions")["float"] if r["construction"].startswith("relu")]
    both = _verdict(R.claim("constructions", "t3_relu_exact"), R.claim("constructions", "t3_relu_stack"))
    return Result(
        f"{s['relu_construction_exact']}{_kernel(R, ('relu_construction_exact',))}",
        f"{both} on every sequence of {heads} and of stacks {stacks}; float64 error <= "
        f"{fmt(max(r['max_abs_error'] for r in floats), 2, 'upper')} up to L = {max(r['L'] for r in floats)}")


def sufficiency(R: Records) -> Result:
    exact = R.claim("constructions", "sufficiency_exact")
    trade = R.claim("constructions", "sufficiency_tradeoff")
    inst = ", ".join(f"d = {v['d']}, L = {v['L']} ({v['sequences']:,})" for v in R.details("constructions")["exact"]["softmax"])
    floats = [r for r in R.details("constructions")["float"] if r["construction"].startswith("softmax")]
    within = all(r["max_abs_error"] <= r["closed_form_bound"] * (1 + 1e-9) for r in floats)
    return Result(exact["verdict"], f"closed forms in Q(e^10) on every sequence of {inst}; trade-off {trade['verdict']} "
                                    f"(sympy); float64 error {'within' if within else 'ABOVE'} the bound at L = "
                                    f"{', '.join(str(r['L']) for r in floats)}")


# ---- SMT ---------------------------------------------------------------------------------


def smt(R: Records) -> Result:
    d = R.details("smt")
    found = []
    for k, n in ((2, 4), (2, 6), (2, 8), (4, 8)):
        try:
            c = R.claim("smt", f"smt_k{k}_length{n}")
        except NotInRun:
            continue
        search = next(s for s in d["searches"] if f"K={k} content types, length={n}," in s["instance"])
        found.append((k, n, c["verdict"], search["seconds"]))
    if not found:
        raise NotInRun("not in this run (`sinks reproduce --only smt`)")
    verdict = _verdict(*({"verdict": v} for _k, _n, v, _s in found))
    if all(v == verdict for _k, _n, v, _s in found):
        ks = sorted({k for k, *_ in found})
        lengths = {k: [str(n) for kk, n, *_ in found if kk == k] for k in ks}
        instances = "; ".join(f"K = {k}, length{'s' if len(ls) > 1 else ''} {', '.join(ls)}" for k, ls in lengths.items())
    else:
        instances = "; ".join(f"K = {k}, length {n}: {v}" for k, n, v, _s in found)
    cell = f"{instances} ({sum(s for *_, s in found):.0f} s)"
    theta = d.get("theta_star")
    if theta:
        groups: dict[tuple, list[str]] = {}
        for t in theta:
            key = (t["theta_proved"], t["(1-theta*)/eps in"][1], t["(1-theta*)/eps in"][0])
            groups.setdefault(key, []).append(str(t["length"]))
        cell += "; before the trigger (K = 2): " + "; ".join(
            f"BOS mass >= {p} = 1 - {hi} eps proved, 1 - {lo} eps not, at length{'s' if len(lengths) > 1 else ''} "
            f"{', '.join(lengths)}"
            for (p, hi, lo), lengths in groups.items())
    else:
        cell += "; theta*: not in this run (default `sinks reproduce --only smt`)"
    return Result(verdict, cell + "; more by hand: [`proofs/smt/`](proofs/smt/README.md#smt-search)")


# ---- training ----------------------------------------------------------------------------


def _members(run: Any, key: str, layer: int = 0, head: int = 0) -> list[float]:
    return list(run[key][layer][head])


def _converged(run: Any) -> str:
    return f"{sum(1 for ok in run['converged'] if ok)}/{len(run['seeds'])} converged"


def t1_observed(R: Records) -> Result:
    c = R.claim("training", "t1_observed")
    run = _run(R, "softmax-1x1")
    mass, trig = _members(run, "bos_nontrigger_mean"), _members(run, "bos_trigger_mean")
    return Result(c["verdict"], f"BOS mass {pm(mass, 5)} over {_n(len(mass), 'seed')} (criterion > 0.99 in every seed; "
                                f"SPEC 0.9998), {span(trig, 1)} at the trigger; {_converged(run)}")


def t1_bound(R: Records) -> Result:
    c = R.claim("training", "t1_bound")
    bounds = _run(R, "softmax-1x1")["bound"]
    return Result(c["verdict"], f"bound >= {fmt(min(b['bound_min'] for b in bounds), 4, 'lower')} at every evaluation "
                                f"sequence and non-trigger query ({_n(len(bounds), 'seed')}), never above the measured "
                                f"mass ({sum(b['violations'] for b in bounds)} violations); per head in stacks mostly "
                                "vacuous (<= 0)")


def certified(R: Records) -> Result:
    one = R.claim("training", "t1_certified")
    end = R.claim("training", "t1_end_to_end")
    certs = [c["certificate"] for c in R.details("training")["certificates"]["single_layer"]]
    mins = [c["min_bos_nontrigger"] for c in certs]
    lo, up = [c["eta"]["eta_lo"] for c in certs], [c["eta"]["eta_up"] for c in certs]
    applies_a = sum(c["t1"]["bounds"]["pre_applies"] for c in certs)
    text = (f"every head ({_n(len(certs), 'seed')}) puts >= {fmt(min(mins), 5, 'lower')} on BOS at every non-trigger "
            f"query; eta_lo {span(lo, 2, side='lower')} (replayed witness), eta_up {span(up, 2, side='upper')}, so T1 "
            f"(a) applies to {applies_a}/{len(certs)}" + ("" if end["verdict"] == one["verdict"] else f" ({end['verdict']})"))
    try:
        cons = R.claim("constructions", "constructions_certified")["verdict"]
        text += "; constructions certify to their closed forms" + ("" if cons == one["verdict"] else f" ({cons})")
    except NotInRun:
        pass
    return Result(f"{one['verdict']} (interval arithmetic)", text)


def t1_in_full(R: Records) -> Result:
    """The worst-case setting (``empirical.pipeline.parts.t1_end_to_end``): T1 (b) end to end, eta's bracket."""
    try:
        full, bracket = R.claim("training", "t1_in_full"), R.claim("training", "eta_bracket")
        rows = R.details("training")["worst_case"]["results"]
    except (KeyError, TypeError):
        raise NotInRun("not in this run (the worst-case setting of the training part: `sinks reproduce` has it)") from None
    etas = [r["certificate"]["eta"] for r in rows]
    applies = sum(r["certificate"]["t1"]["bounds"]["all_applies"] for r in rows)
    return Result(full["verdict"], f"eta_up {span([e['eta_up'] for e in etas], 2, side='upper')} "
                                   f"({_n(len(rows), 'seed')}): T1 (b) applies to {applies}/{len(rows)}, its bound "
                                   f"below every certified minimum; eta_up / eta_lo <= 1.1: {bracket['verdict']}")


def stacks(R: Records) -> Result:
    """The trained stacks' per-head certificates, quoting each stack claim's per-seed counts."""
    verdicts, counts = [], []
    for shape in ("2x2", "4x4"):
        try:
            s = R.claim("training", f"stack_{shape}")
        except NotInRun:
            continue
        name = shape.replace("x", " x ")
        per_seed = s["evidence"].split(" (")[0].split(";")[0].removeprefix("heads certified / heads sinking per seed: ")
        verdicts.append(f"{s['verdict']} ({name})")
        counts.append(f"{name}: {per_seed}")
    if not verdicts:
        raise NotInRun("not in this run (the stack certificates of the training part)")
    return Result(", ".join(verdicts), "; ".join(counts))


def _per_seed_sinking(run: Any, level: float) -> list[int]:
    heads = [h for layer in run["bos_nontrigger_mean"] for h in layer]
    return [sum(h[m] > level for h in heads) for m in range(len(run["seeds"]))]


def t2_observed(R: Records) -> Result:
    from empirical.training.metrics import STACK_SINK_MASS

    cells, verdicts = [], []
    for layers in (2, 4):
        try:
            c = R.claim("training", f"t2_observed_{layers}x{layers}")
        except NotInRun:
            continue
        run = _run(R, f"softmax-{layers}x{layers}")
        verdicts.append(c)
        heads = sum(len(layer) for layer in run["bos_nontrigger_mean"])
        cells.append(f"{layers} x {layers} {', '.join(map(str, _per_seed_sinking(run, STACK_SINK_MASS)))} of {heads} "
                     f"({_converged(run)})")
    if not cells:
        raise NotInRun("not in this run (softmax 2x2 and 4x4: the default `sinks reproduce` has them)")
    return Result(_verdict(*verdicts), f"heads above {STACK_SINK_MASS} per seed: " + "; ".join(cells))


def question_b_observed(R: Records) -> Result:
    from empirical.training.metrics import STACK_SINK_MASS

    c = R.claim("training", "question_b_observed_2x1")
    run = _run(R, "softmax-2x1")
    off = run["bos_nontrigger_mean"]
    heads = ", ".join(f"L{n}H0 {pm(off[n][0], 4)}" for n in range(len(off)))
    return Result(c["verdict"], f"BOS mass off the trigger {heads}; heads above {STACK_SINK_MASS} per seed "
                                f"{', '.join(map(str, _per_seed_sinking(run, STACK_SINK_MASS)))} of {len(off)}; "
                                f"{_converged(run)}")


def t3_observed(R: Records) -> Result:
    exact, no_sink = R.claim("training", "t3_exact_zero"), R.claim("training", "t3_no_sink")
    run = _run(R, "relu-1x1")
    zero = [s for s, m in zip(run["seeds"], _members(run, "row_nontrigger_max")) if m == 0.0]
    # "<=" the largest measured mean: written rounded up so that it holds of every seed's
    def most(worst: float) -> str:
        return "exactly 0" if worst == 0 else "<= " + fmt(worst, 2, "upper")

    cells, claims = [f"{most(max(_members(run, 'bos_nontrigger_mean')))} (1 layer)"], [no_sink]
    for layers in (2, 4):
        try:
            claims.append(R.claim("training", f"t3_observed_{layers}x{layers}"))
        except NotInRun:
            continue
        worst = max(v for layer in _run(R, f"relu-{layers}x{layers}")["bos_nontrigger_mean"] for h in layer for v in h)
        cells.append(f"{most(worst)} ({layers} x {layers})")
    return Result(f"{_verdict(*claims)}; exactly 0 in every seed: {exact['verdict']}",
                  f"BOS mass {', '.join(cells)}, criterion <= 0.002; every non-trigger weight exactly 0 in seeds "
                  f"{', '.join(map(str, zero)) or 'none'} of {len(run['seeds'])} (SPEC: exactly 0, seed 0)")


def functional(R: Records) -> Result:
    rows = R.details("training")["functional_sinks"]
    kinds: dict[str, list] = {}
    claims = []
    for key, a in rows.items():
        if "rows" not in a:
            continue
        kind, shape = key.split("-")
        claims.append(R.claim("training", f"functional_{kind}_{shape}"))
        relied = {(r["layer"], r["head"]) for r in a["rows"] if r["removed_functional"]}
        heads = {(r["layer"], r["head"]) for r in a["rows"]}
        kinds.setdefault(kind, []).append((shape, len(relied), len(heads), max(r["removed_increase"] for r in a["rows"])))
    if not claims:
        raise NotInRun("not in this run (the ablations of the training part)")
    cells = [f"{kind} {', '.join(f'{n}/{m} ({shape})' for shape, n, m, _ in runs)}, largest "
             f"{max(w for *_, w in runs):+.2g}" for kind, runs in kinds.items()]
    return Result(_verdict(*claims), "heads relied on in some seed: " + "; ".join(cells))


# ---- beyond ------------------------------------------------------------------------------


def abstaining(R: Records) -> Result:
    cons = R.details("beyond")["constructions"]
    names = [n for n in ("softmax1", "sink_logit", "gated", "sigmoid") if n in cons]
    verdict = "verified exactly" if all(cons[n]["verified"] for n in names) else "failed"
    last = [cons[n]["curve"][-1] for n in names]
    return Result(f"{verdict} (sympy limits, L = {cons[names[0]]['limit_L']}; mpmath.iv)",
                  f"error <= {' / '.join(fmt(p['max_error'], 2, 'upper') for p in last)} ({' / '.join(names)}) at "
                  f"gap {last[0]['gap']:g}, over all inputs of length 16")


def normalised(R: Records) -> Result:
    norm = _beyond_run(R, "sigmoid_norm", "reference")
    stops = []
    for kind in ("softmax1", "sink_logit", "gated", "softmax", "sigmoid_norm"):
        r = _beyond_run(R, kind, "no_bos")
        stops.append(f"{kind} {r['converged']}/{r['seeds']}")
    claims = [R.claim("beyond", f"beyond_kind_{k}") for k in ("sigmoid_norm", "softmax1", "sink_logit", "gated")]
    return Result(_verdict(*claims), f"sigmoid_norm BOS mass {fmt(norm['sink_mean'], 4)} (min {fmt(norm['sink_min'], 4)}, "
                                     f"{norm['seeds']} seeds); without BOS, seeds at the stop rule: " + ", ".join(stops))


def abstainers_sink(R: Records) -> Result:
    """With BOS available, trained heads of kinds that need no sink (softmax1, sink_logit) still
    sink: from the beyond part's kinds table (mean / min BOS mass over seeds, row mass)."""
    table = R.table("beyond", "attention kinds")
    col = {name: n for n, name in enumerate(table["columns"])}
    rows = {r[0]: r for r in table["rows"] if r[0] in ("softmax1", "sink_logit")}
    if len(rows) < 2:
        raise NotInRun("not in this run (softmax1 and sink_logit trained with BOS: the default `sinks reproduce`)")
    masses = {k: [float(x) for x in r[col["1x1 BOS mass (mean / min over seeds)"]].split(" / ")] for k, r in rows.items()}
    held = all(low > 0.99 for _, low in masses.values())
    return Result("observed" if held else "not met",
                  "; ".join(f"{k}: BOS mass {mean:.4g} (min {low:.4g}), row mass {rows[k][col['1x1 row mass']]}"
                            for k, (mean, low) in masses.items()) + " (criterion > 0.99 in every seed)")


def softpick(R: Records) -> Result:
    c = R.details("beyond")["constructions"]["softpick"]
    p = c["curve"][-1]
    ref, nob = _beyond_run(R, "softpick", "reference"), _beyond_run(R, "softpick", "no_bos")
    try:
        smt_kinds = R.details("smt").get("kinds") or {}
    except NotInRun:
        smt_kinds = {}
    smt_cell = (f"SMT {smt_kinds['softpick']['status']} (K = 2, length 3)" if "softpick" in smt_kinds
                else "SMT: not in this run")
    kind = R.claim("beyond", "beyond_kind_softpick")
    return Result(f"{'verified exactly' if c['verified'] else 'failed'}; training {kind['verdict']}",
                  f"certified error <= {fmt(p['max_error'], 2, 'upper')} at gap {p['gap']:g}, BOS mass <= "
                  f"{fmt(p['max_bos_mass'], 2, 'upper')}; {smt_cell}; trained BOS mass {fmt(ref['sink_mean'], 2)} over "
                  f"{ref['seeds']} seeds ({ref['converged']}/{ref['seeds']} stop), without BOS "
                  f"{nob['converged']}/{nob['seeds']} stop")


def variants(R: Records) -> Result:
    runs = [r for r in R.details("beyond")["runs"] if r["kind"] == "softmax" and r["variant"] not in ("reference", "no_bos")]
    if not runs:
        raise NotInRun("not in this run (the variants: the default `sinks reproduce --only beyond` has them)")
    claims = [R.claim("beyond", f"beyond_variant_{r['variant']}_softmax_1x1") for r in runs]
    # ">=" the smallest measured minimum: written rounded down so that it holds of every seed's
    return Result(_verdict(*claims), f"BOS mass >= {fmt(min(r['sink_min'] for r in runs), 3, 'lower')} in every seed of "
                                     + ", ".join(r["variant"] for r in runs) + " (criterion > 0.9)")


def semantics(R: Records) -> Result:
    return Result("verified numerically", "every registered kind, float64 against the exact evaluator (a test result, "
                                          "not a `sinks reproduce` figure)")


# Measured by hand with `sinks probe` (not a `sinks reproduce` part): the headline figures of
# empirical/lm/README.md ("What it found"), from the runs recorded there.
LM_PROBE = Result("observed (by hand)",
                  "the bound never exceeds the measured mass (SmolLM2: max(bound - mass) = -5.9e-5 over 289,170 "
                  "pairs); Sink_1^0.3 natural / random / repeated: SmolLM2 72.2 / 78.7 / 0.0 %, Gemma 76.9 / 77.5 / "
                  "64.2 %; functional sinks over 32 texts: SmolLM2 11 heads, Gemma 14")


def lm_probe(R: Records) -> Result:
    return LM_PROBE
