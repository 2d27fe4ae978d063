"""The result cells of the top README's claims table (``claims_table.ROWS``), one function per
row: each reads the run's part records (``Records``) and starts with the row's verdict, a word of
``empirical.pipeline.reproduce.VERDICTS`` read from the part's claims, followed by the numbers the verdict
rests on and the criterion it was judged by. A part or claim absent from the run raises
``NotInRun``, whose message becomes the cell.
"""

from __future__ import annotations

import statistics
from typing import Any

from .numbers import fmt, pm, span
from .records import NotInRun, Records


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


# ---- proofs ------------------------------------------------------------------------------


def _statuses(R: Records) -> dict[str, str]:
    return {v["name"]: v["status"] for v in R.details("proofs")["verdicts"]}


def _kernel(R: Records, names: tuple[str, ...]) -> str:
    """What the Coq kernel check says of these statements' twins: " (sympy + Coq: k/n
    kernel-checked)", " (sympy; Coq not run)", a failure, or "" for statements without twins."""
    kernels = [v.get("kernel") for v in R.details("proofs")["verdicts"] if v["name"] in names]
    twins = [k for k in kernels if k is not None]
    if not twins:
        return ""
    if all(k == "coq" for k in twins):
        return f" (sympy + Coq: {len(twins)}/{len(kernels)} kernel-checked, [`proofs/coq/`](proofs/coq/))"
    if all(k == "not run" for k in twins):
        return " (sympy; Coq not run)"
    failed = sum(k not in ("coq", "not run") for k in twins)
    return f" (Coq failed on {failed}/{len(twins)} twins: unknown where it failed)"


def t1_proved(R: Records) -> str:
    a, b, c = (R.claim("proofs", k) for k in ("t1a", "t1b", "t1c"))
    cites = next(v["cites"] for v in R.details("proofs")["verdicts"] if v["name"] == "t1_single_layer_sink")
    status = _statuses(R)
    proved = sum(status[n] == "proved" for n in cites)
    words = {k: R.claim("proofs", k)["verdict"] for k in ("t1_after_trigger_L4", "t1a_tightened_per_content",
                                                          "t1b_tightened_per_content", "t1_pre_trigger_sharp")}
    kernel = _kernel(R, ("t1_single_layer_sink", *cites))
    return (f"{_verdict(a, b, c)}{kernel}: (a) {a['verdict']}, (b) {b['verdict']}, (c) {c['verdict']} ({proved}/{len(cites)} "
            f"cited lemmas proved in the same run); after the trigger at L = 4: {words['t1_after_trigger_L4']}; "
            f"T1(a) with 99/100 f_pre on its proof's hypotheses: {words['t1a_tightened_per_content']} by an exact "
            f"tight head at L = 4 only ([`t1_tightness`](proofs/statements/t1_tightness.py); over every input that head errs by "
            f"0.9985); T1(b) with 99/100 f_all likewise: {words['t1b_tightened_per_content']} (a head at 0.9988 "
            f"f_all, L = 5; 8.0e-4 over every input); for L >= 5, 1 - a_i0 <= "
            f"2 eta + O(eta^2) before the trigger: {words['t1_pre_trigger_sharp']}"
            f"{_kernel(R, ('t1_pre_trigger_sharp',))}")


def t2_refuted(R: Records) -> str:
    s = _statuses(R)
    pair, interp = R.claim("constructions", "t2_cancelling"), R.claim("constructions", "question_a_interpolating")
    exact = R.details("constructions")["exact"]
    sizes = ", ".join(f"L = {v['L']}" for v in exact["cancelling"])
    longest = max(r["L"] for r in R.details("constructions")["float"] if r["construction"].startswith("cancelling"))
    return (f"{s['t2_multi_layer_existential']}{_kernel(R, ('t2_multi_layer_existential',))} (exact counterexample, "
            f"symbolic beta and contents); the pair "
            f"{pair['verdict']} in Q(e^beta) on every sequence of d = 4, {sizes}, float64 up to L = {longest}; "
            f"(a) {s['t2_sink_at_some_query']} (interpolating heads {interp['verdict']}); "
            f"(a') {s['t2_two_heads_sink_at_some_query']} (flag-reading scores: "
            f"{s.get('t2_two_heads_flag_scores_sink', 'not in this run')}); (b) {s['t2_one_head_per_layer']} (the "
            f"candidate family has no exact member at L >= 6: {s.get('t2_one_head_per_layer_flag_family', 'not in this run')}); "
            f"(c) {s['t1_one_residual_layer']}{_kernel(R, ('t1_one_residual_layer',))}")


def t3(R: Records) -> str:
    s = _statuses(R)
    exact = R.details("constructions")["exact"]
    heads = ", ".join(f"d = {v['d']}, L = {v['L']} ({v['sequences']:,})" for v in exact["relu"])
    stacks = ", ".join(f"{v['construction'].split()[-1]} at d = {v['d']}, L = {v['L']} ({v['sequences']:,})"
                       for v in exact["relu-stack"])
    floats = [r for r in R.details("constructions")["float"] if r["construction"].startswith("relu")]
    both = _verdict(R.claim("constructions", "t3_relu_exact"), R.claim("constructions", "t3_relu_stack"))
    return (f"{s['relu_construction_exact']}{_kernel(R, ('relu_construction_exact',))} for symbolic j, L and contents (`relu_construction_exact`; the stack "
            f"from the head plus exactly-zero output blocks); {both} on every sequence of {heads}; stacks {stacks}; "
            f"float64 error <= {fmt(max(r['max_abs_error'] for r in floats), 2, 'upper')} "
            f"up to L = {max(r['L'] for r in floats)}")


def sufficiency(R: Records) -> str:
    exact = R.claim("constructions", "sufficiency_exact")
    trade = R.claim("constructions", "sufficiency_tradeoff")
    inst = ", ".join(f"d = {v['d']}, L = {v['L']} ({v['sequences']:,})" for v in R.details("constructions")["exact"]["softmax"])
    floats = [r for r in R.details("constructions")["float"] if r["construction"].startswith("softmax")]
    within = all(r["max_abs_error"] <= r["closed_form_bound"] * (1 + 1e-9) for r in floats)
    return (f"{exact['verdict']}: closed forms in Q(e^10) on every sequence of {inst}; trade-off {trade['verdict']} "
            f"(sympy); float64 error {'within' if within else 'ABOVE'} the bound at L = "
            f"{', '.join(str(r['L']) for r in floats)}")


# ---- SMT ---------------------------------------------------------------------------------

SMT_BY_HAND = ("K = 2, 3, 4 at lengths 6-10, K = 5 and 6 at length 8 proved, K = 5 at length 10 not closed in "
               "10 minutes, K = 2 at length 6 rechecked by cvc5 (38 steps agree), and theta* at every non-trigger "
               "query: measured with `sinks search --tokens K --length N [--recheck cvc5]` and `theta_star(...)`, "
               "not by `sinks reproduce` ([`proofs/smt/README.md`](proofs/smt/README.md#smt-search), 2026-12-01)")


def smt(R: Records) -> str:
    d = R.details("smt")
    found = []
    for k, n in ((2, 4), (2, 6), (2, 8), (4, 8)):
        try:
            c = R.claim("smt", f"smt_k{k}_length{n}")
        except NotInRun:
            continue
        search = next(s for s in d["searches"] if f"K={k} content types, length={n}," in s["instance"])
        found.append((k, n, c["verdict"], search["seconds"], len(search["steps"])))
    if not found:
        raise NotInRun("not in this run (`sinks reproduce --only smt`)")
    verdict = _verdict(*({"verdict": v} for _k, _n, v, _s, _q in found))
    cells = "; ".join(f"K = {k}, length {n}: {v} ({steps} queries, {s:.1f} s)" for k, n, v, s, steps in found)
    theta = d.get("theta_star")
    theta_cell = ("theta* before the trigger (K = 2, eps = 1/100; proved, and not proved one bisection step "
                  "further): " + ", ".join(f"length {t['length']}: BOS mass >= {t['theta_proved']} = 1 - "
                                           f"{t['(1-theta*)/eps in'][1]} eps proved, 1 - {t['(1-theta*)/eps in'][0]} "
                                           "eps not" for t in theta)
        if theta else "theta*: not in this run (default `sinks reproduce --only smt`)")
    tallies = [s["recheck"] for s in d["searches"] if s.get("recheck")]
    recheck = (d.get("recheck") or "; ".join(
        f"{r['solver']} re-solved {r['agree'] + r['unknown'] + r['disagree']} steps: {r['agree']} agree, {r['unknown']} "
        f"unknown, {r['disagree']} disagree" for r in tallies) or "no second solver in this run")
    return f"{verdict} (`sinks reproduce --only smt`): {cells}; {theta_cell}; {recheck}. By hand: {SMT_BY_HAND}"


# ---- training ----------------------------------------------------------------------------


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _members(run: Any, key: str, layer: int = 0, head: int = 0) -> list[float]:
    return list(run[key][layer][head])


def _steps(run: Any) -> str:
    """Steps to stop of the converged members, and how many converged."""
    conv = [s for s, ok in zip(run["steps"], run["converged"]) if ok]
    done = f"{len(conv)}/{len(run['seeds'])} converged"
    return f"{done}, {pm(conv, 3)} steps" if conv else f"{done}: metrics at the step cap"


def t1_observed(R: Records) -> str:
    c = R.claim("training", "t1_observed")
    run = _run(R, "softmax-1x1")
    mass, trig = _members(run, "bos_nontrigger_mean"), _members(run, "bos_trigger_mean")
    return (f"{c['verdict']} (criterion: mean non-trigger BOS mass > 0.99 in every seed, every seed at the stop rule): "
            f"{pm(mass, 5)} over {_n(len(mass), 'seed')} ({span(mass, 5)}; {_steps(run)}; SPEC 0.9998 after ~900); "
            f"{span(trig, 1)} at the trigger")


def t1_bound(R: Records) -> str:
    c = R.claim("training", "t1_bound")
    bounds = _run(R, "softmax-1x1")["bound"]
    return (f"{c['verdict']}: bound mean {pm([b['bound_mean'] for b in bounds], 5)} over {len(bounds)} seeds, min "
            f"{fmt(min(b['bound_min'] for b in bounds), 4, 'lower')} over every evaluation sequence and non-trigger query, "
            f"never above the measured mass (violations {sum(b['violations'] for b in bounds)}); per head in the "
            "stacks mostly vacuous (<= 0)")


def certified(R: Records) -> str:
    one = R.claim("training", "t1_certified")
    end = R.claim("training", "t1_end_to_end")
    certs = [c["certificate"] for c in R.details("training")["certificates"]["single_layer"]]
    mins = [c["min_bos_nontrigger"] for c in certs]
    lo, up = [c["eta"]["eta_lo"] for c in certs], [c["eta"]["eta_up"] for c in certs]
    applies_a = sum(c["t1"]["bounds"]["pre_applies"] for c in certs)
    text = (f"{one['verdict']} (interval arithmetic, witnesses replayed exactly): every trained single-layer softmax "
            f"head ({_n(len(certs), 'seed')}) puts >= {fmt(min(mins), 5, 'lower')} on BOS at every non-trigger query on every "
            f"input; its worst-case error eta is bracketed by eta_lo {span(lo, 2, side='lower')} (replayed witness) and "
            f"eta_up {span(up, 2, side='upper')}, so T1 (b) (eta <= 1/120) "
            f"{'cannot apply' if min(lo) > 1 / 120 else 'may apply'} and T1 (a) applies to {applies_a}/{len(certs)}: "
            f"{end['verdict']}")
    try:
        text += f"; constructions certify to their closed forms: {R.claim('constructions', 'constructions_certified')['verdict']}"
    except NotInRun:
        pass
    text += _t1_in_full(R)
    stacks = []
    for shape in ("2x2", "4x4"):
        try:
            s = R.claim("training", f"stack_{shape}")
        except NotInRun:
            continue
        stacks.append(f"{shape.replace('x', ' x ')} {s['verdict']} ({s['evidence'].split(' (')[0].split(';')[0]})")
    return text + (f"; trained stacks, every head that sinks on the eval set certified >= 1/2 on every input: "
                   f"{', '.join(stacks)}" if stacks else "")


def _t1_in_full(R: Records) -> str:
    """The worst-case setting's clause (``empirical.pipeline.parts.t1_end_to_end``): T1 (b) end to end, eta's bracket."""
    try:
        full, bracket = R.claim("training", "t1_in_full"), R.claim("training", "eta_bracket")
        rows = R.details("training")["worst_case"]["results"]
    except (NotInRun, KeyError, TypeError):
        return "; T1 in full (worst-case setting): not in this run"
    etas = [r["certificate"]["eta"] for r in rows]
    applies = sum(r["certificate"]["t1"]["bounds"]["all_applies"] for r in rows)
    return (f"; T1 in full on worst-case trained heads ({_n(len(rows), 'seed')}, `empirical.analysis.worst_case`): eta_up "
            f"{span([e['eta_up'] for e in etas], 2, side='upper')}, T1 (b) applies to {applies}/{len(rows)}, its bound below every "
            f"certified minimum: {full['verdict']}; eta_up / eta_lo <= 1.1: {bracket['verdict']} "
            f"({', '.join(fmt(e['ratio'], 3) for e in etas)})")


def _per_seed_sinking(run: Any, level: float) -> list[int]:
    heads = [h for layer in run["bos_nontrigger_mean"] for h in layer]
    return [sum(h[m] > level for h in heads) for m in range(len(run["seeds"]))]


def t2_observed(R: Records) -> str:
    from empirical.training.metrics import STACK_SINK_MASS
    from empirical.pipeline.parts.training import SPEC_VALUES

    cells, verdicts = [], []
    for layers in (2, 4):
        try:
            c = R.claim("training", f"t2_observed_{layers}x{layers}")
        except NotInRun:
            continue
        run = _run(R, f"softmax-{layers}x{layers}")
        verdicts.append(c)
        per_head = [statistics.fmean(h) for layer in run["bos_nontrigger_mean"] for h in layer]
        cells.append(f"{layers} x {layers} ({_steps(run)}; SPEC {SPEC_VALUES[('softmax', layers, layers)][0]}): heads with mean non-trigger BOS "
                     f"mass > {STACK_SINK_MASS} per seed {', '.join(map(str, _per_seed_sinking(run, STACK_SINK_MASS)))} "
                     f"of {len(per_head)}; per head {span(per_head, 3)} on average over the seeds "
                     f"(SPEC: {SPEC_VALUES[('softmax', layers, layers)][1]})")
    if not cells:
        raise NotInRun("not in this run (softmax 2x2 and 4x4: the default `sinks reproduce` has them)")
    return f"{_verdict(*verdicts)} (criterion: some head above {STACK_SINK_MASS} in every seed): " + "; ".join(cells)


def question_b_observed(R: Records) -> str:
    from empirical.training.metrics import STACK_SINK_MASS

    c = R.claim("training", "question_b_observed_2x1")
    run = _run(R, "softmax-2x1")
    off, at = run["bos_nontrigger_mean"], run["bos_trigger_mean"]
    heads = "; ".join(f"L{n}H0 {pm(off[n][0], 4)} off the trigger, {pm(at[n][0], 3)} at it" for n in range(len(off)))
    return (f"{c['verdict']} (criterion: some head above {STACK_SINK_MASS} off the trigger in every seed; "
            f"{_steps(run)}): {heads}; heads above {STACK_SINK_MASS} per seed "
            f"{', '.join(map(str, _per_seed_sinking(run, STACK_SINK_MASS)))} of {len(off)}")


def t3_observed(R: Records) -> str:
    exact, no_sink = R.claim("training", "t3_exact_zero"), R.claim("training", "t3_no_sink")
    run = _run(R, "relu-1x1")
    zero = [s for s, m in zip(run["seeds"], _members(run, "row_nontrigger_max")) if m == 0.0]
    worst = max(_members(run, "bos_nontrigger_mean"))
    # "<=" the largest measured mean: written rounded up so that it holds of every seed's
    cells = [f"1 layer: BOS mass {'exactly 0' if worst == 0 else '<= ' + fmt(worst, 2, 'upper')} ({no_sink['verdict']}, "
             f"criterion <= 0.002 in every seed)"]
    for layers in (2, 4):
        try:
            c = R.claim("training", f"t3_observed_{layers}x{layers}")
        except NotInRun:
            continue
        worst = max(v for layer in _run(R, f"relu-{layers}x{layers}")["bos_nontrigger_mean"] for h in layer for v in h)
        cells.append(f"{layers} x {layers}: {'exactly 0' if worst == 0 else '<= ' + fmt(worst, 2, 'upper')} ({c['verdict']})")
    return (f"{no_sink['verdict']}: " + "; ".join(cells) + f"; every non-trigger weight exactly 0 in seeds "
            f"{', '.join(map(str, zero)) or 'none'} of {len(run['seeds'])} single-layer seeds, so \"exactly 0 in every "
            f"seed\" (SPEC, seed 0) is {exact['verdict']}")


def functional(R: Records) -> str:
    rows = R.details("training")["functional_sinks"]
    cells, claims = [], []
    for key, a in rows.items():
        if "rows" not in a:
            continue
        kind, shape = key.split("-")
        claims.append(R.claim("training", f"functional_{kind}_{shape}"))
        relied = {(r["layer"], r["head"]) for r in a["rows"] if r["removed_functional"]}
        heads = {(r["layer"], r["head"]) for r in a["rows"]}
        worst = max(a["rows"], key=lambda r: r["removed_increase"])
        cells.append(f"{kind} {shape}: {len(relied)}/{len(heads)} heads relied on in some seed, largest "
                     f"{worst['removed_increase']:+.2g} (L{worst['layer']}H{worst['head']})")
    if not claims:
        raise NotInRun("not in this run (the ablations of the training part)")
    return f"{_verdict(*claims)} (an ablation; criterion: error increase > 0.05): " + "; ".join(cells)


# ---- beyond ------------------------------------------------------------------------------


def abstaining(R: Records) -> str:
    cons = R.details("beyond")["constructions"]
    names = [n for n in ("softmax1", "sink_logit", "gated", "sigmoid") if n in cons]
    verdict = "verified exactly" if all(cons[n]["verified"] for n in names) else "failed"
    last = [cons[n]["curve"][-1] for n in names]
    return (f"{verdict} (sympy limits, L = {cons[names[0]]['limit_L']}) and certified (mpmath.iv, all inputs of length "
            f"16): error <= {' / '.join(fmt(p['max_error'], 2, 'upper') for p in last)} ({' / '.join(names)}) at gap "
            f"{last[0]['gap']:g}")


def normalised(R: Records) -> str:
    norm = _beyond_run(R, "sigmoid_norm", "reference")
    parts = [f"sigmoid_norm BOS mass {fmt(norm['sink_mean'], 4)} (min {fmt(norm['sink_min'], 4)}, {norm['seeds']} seeds)"]
    stops = []
    for kind in ("softmax1", "sink_logit", "gated", "softmax", "sigmoid_norm"):
        r = _beyond_run(R, kind, "no_bos")
        stops.append(f"{kind} {r['converged']}/{r['seeds']}")
    claims = [R.claim("beyond", f"beyond_kind_{k}") for k in ("sigmoid_norm", "softmax1", "sink_logit", "gated")]
    return f"{_verdict(*claims)}: " + "; ".join(parts) + "; no BOS, seeds at the stop rule: " + ", ".join(stops)


def softpick(R: Records) -> str:
    c = R.details("beyond")["constructions"]["softpick"]
    p = c["curve"][-1]
    ref, nob = _beyond_run(R, "softpick", "reference"), _beyond_run(R, "softpick", "no_bos")
    try:
        smt_kinds = R.details("smt").get("kinds") or {}
    except NotInRun:
        smt_kinds = {}
    smt_cell = (f"SMT {smt_kinds['softpick']['status']} (K = 2, length 3)" if "softpick" in smt_kinds
                else "SMT: not in this run (default `sinks reproduce --only smt`)")
    kind = R.claim("beyond", "beyond_kind_softpick")
    return (f"{'verified exactly' if c['verified'] else 'failed'} (sympy limits; certified error <= "
            f"{fmt(p['max_error'], 2, 'upper')} at gap {p['gap']:g}, BOS mass <= {fmt(p['max_bos_mass'], 2, 'upper')}); "
            f"{smt_cell}; "
            f"training {kind['verdict']}: BOS mass {fmt(ref['sink_mean'], 2)} over {ref['seeds']} seeds (error "
            f"{fmt(ref['error_max'], 2)}, {ref['converged']}/{ref['seeds']} stop); without BOS "
            f"{nob['converged']}/{nob['seeds']} stop")


def variants(R: Records) -> str:
    runs = [r for r in R.details("beyond")["runs"] if r["kind"] == "softmax" and r["variant"] not in ("reference", "no_bos")]
    if not runs:
        raise NotInRun("not in this run (the variants: the default `sinks reproduce --only beyond` has them)")
    claims = [R.claim("beyond", f"beyond_variant_{r['variant']}_softmax_1x1") for r in runs]
    # ">=" the smallest measured minimum: written rounded down so that it holds of every seed's
    return (f"{_verdict(*claims)} (criterion: min BOS mass > 0.9 in every seed): BOS mass >= "
            f"{fmt(min(r['sink_min'] for r in runs), 3, 'lower')} in every seed of " + ", ".join(r["variant"] for r in runs))


def semantics(R: Records) -> str:
    return ("verified numerically: passes for every registered kind, float64 against the exact evaluator "
            "(a test result, not a `sinks reproduce` figure)")


# Measured by hand with `sinks probe smollm2` (not a `sinks reproduce` part): the figures of the
# "What the probe found on SmolLM2" in empirical/lm/README.md, from the run recorded there.
LM_PROBE = ("observed (by hand, not regenerated by `sinks reproduce`): the SPEC bound never exceeds the measured mass "
            "(SmolLM2 max(bound - mass) = -5.9e-5 over 289,170 pairs of 17 texts; earlier -4.0e-10 over 102 texts); "
            "Sink_1^0.3 natural / random / repeated: SmolLM2 72.2 / 78.7 / 0.0 %, Gemma-3-270M with BOS 76.9 / 77.5 / "
            "64.2 % (repeated without BOS 0.0 %); the repeated-token bound holds at every pair; functional sinks "
            "(removed, 95 % interval above 0.05 nats): SmolLM2 39 heads on 1 text, 11 on 32 (largest L18H8 +3.81 "
            "nats), Gemma-3-270M 14 on 32 (largest L5H1 +0.88); head zeroing: SmolLM2 29 of 270 heads zeroable (one at a time, 8 texts), "
            "none of its 5 mostly dormant heads, Gemma 0 of 72; one figure per item checked by an independent recomputation "
            "(`python -m empirical.lm.crosscheck`); default probe 7.3 min wall / 844 s CPU, idle")


def lm_probe(R: Records) -> str:
    return LM_PROBE
