"""The top README's claims table: one ``Row`` per claim, its result cell built from the run.

A row's claim, command, test and result-file cells are fixed text; its result cell is a
function of the run's part records (``Records``) that starts with the verdict, a word of
``empirical.reproduce.VERDICTS`` (the row's own verdict, read from the part's claims), followed by
the numbers it rests on. Figures a row quotes that ``sinks reproduce`` does not produce are
marked with the command and the package README they come from. A cell whose part or claim is not
in the run says so. To add a row: append a ``Row`` to ``ROWS``, run ``sinks report --rerender``
(or ``--publish`` with a results folder that has what the row reads).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable

from . import NotInRun, Records
from .numbers import fmt, pm, span

COLUMNS = ["claim", "command", "test", "result file", "result"]


@dataclass(frozen=True)
class Row:
    claim: str
    command: str
    test: str
    files: str
    result: Callable[[Records], str]


def build(R: Records) -> tuple[list[str], list[list[str]]]:
    rows = []
    for row in ROWS:
        try:
            result = row.result(R)
        except NotInRun as e:
            result = str(e)
        rows.append([row.claim, row.command, row.test, row.files, result])
    return COLUMNS, rows


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


def t1_proved(R: Records) -> str:
    a, b, c = (R.claim("proofs", k) for k in ("t1a", "t1b", "t1c"))
    cites = next(v["cites"] for v in R.details("proofs")["verdicts"] if v["name"] == "t1_single_layer_sink")
    status = _statuses(R)
    proved = sum(status[n] == "proved" for n in cites)
    words = {k: R.claim("proofs", k)["verdict"] for k in ("t1_after_trigger_L4", "t1a_tightened_per_content",
                                                          "t1b_tightened_per_content", "t1_pre_trigger_sharp")}
    return (f"{_verdict(a, b, c)}: (a) {a['verdict']}, (b) {b['verdict']}, (c) {c['verdict']} ({proved}/{len(cites)} "
            f"cited lemmas proved in the same run); after the trigger at L = 4: {words['t1_after_trigger_L4']}; "
            f"T1(a) with 99/100 f_pre on its proof's hypotheses: {words['t1a_tightened_per_content']} by an exact "
            f"tight head ([`t1_tightness`](proofs/t1_tightness.py)); T1(b) with 99/100 f_all likewise: "
            f"{words['t1b_tightened_per_content']} (a head at 0.9988 f_all, L = 5); for L >= 5, 1 - a_i0 <= "
            f"2 eta + O(eta^2) before the trigger: {words['t1_pre_trigger_sharp']}")


def t2_refuted(R: Records) -> str:
    s = _statuses(R)
    pair, interp = R.claim("constructions", "t2_cancelling"), R.claim("constructions", "question_a_interpolating")
    exact = R.details("constructions")["exact"]
    sizes = ", ".join(f"L = {v['L']}" for v in exact["cancelling"])
    longest = max(r["L"] for r in R.details("constructions")["float"] if r["construction"].startswith("cancelling"))
    return (f"{s['t2_multi_layer_existential']} (exact counterexample, symbolic beta and contents); the pair "
            f"{pair['verdict']} in Q(e^beta) on every sequence of d = 4, {sizes}, float64 up to L = {longest}; "
            f"(a) {s['t2_sink_at_some_query']} (interpolating heads {interp['verdict']}); "
            f"(a') {s['t2_two_heads_sink_at_some_query']}; (b) {s['t2_one_head_per_layer']}; "
            f"(c) {s['t1_one_residual_layer']}")


def t3(R: Records) -> str:
    s = _statuses(R)
    exact = R.details("constructions")["exact"]
    heads = ", ".join(f"d = {v['d']}, L = {v['L']} ({v['sequences']:,})" for v in exact["relu"])
    stacks = ", ".join(f"{v['construction'].split()[-1]} at d = {v['d']}, L = {v['L']} ({v['sequences']:,})"
                       for v in exact["relu-stack"])
    floats = [r for r in R.details("constructions")["float"] if r["construction"].startswith("relu")]
    both = _verdict(R.claim("constructions", "t3_relu_exact"), R.claim("constructions", "t3_relu_stack"))
    return (f"{s['relu_construction_exact']} for symbolic j, L and contents (`relu_construction_exact`; the stack "
            f"from the head plus exactly-zero output blocks); {both} on every sequence of {heads}; stacks {stacks}; "
            f"float64 error <= {fmt(max(r['max_abs_error'] for r in floats), 2)} "
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
    theta_cell = ("theta* before the trigger (K = 2, eps = 1/100): " + ", ".join(
        f"length {t['length']}: BOS mass >= 1 - {t['(1-theta*)/eps in'][1]} eps proved" for t in theta)
        if theta else "theta*: not in this run (default `sinks reproduce --only smt`)")
    recheck = d.get("recheck") or ("cvc5 rechecked K = 2, length 6" if not R.part("smt")["provenance"]["config"]["quick"]
                                   else "no cvc5 recheck in --quick")
    return f"{verdict} (`sinks reproduce --only smt`): {cells}; {theta_cell}; {recheck}. By hand: {SMT_BY_HAND}"


# ---- training ----------------------------------------------------------------------------


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _members(run: Any, key: str, layer: int = 0, head: int = 0) -> list[float]:
    return list(run[key][layer][head])


def t1_observed(R: Records) -> str:
    c = R.claim("training", "t1_observed")
    run = _run(R, "softmax-1x1")
    mass, trig = _members(run, "bos_nontrigger_mean"), _members(run, "bos_trigger_mean")
    conv = [s for s, ok in zip(run["steps"], run["converged"]) if ok]
    return (f"{c['verdict']} (criterion: mean non-trigger BOS mass > 0.99 in every seed, every seed at the stop rule): "
            f"{pm(mass, 5)} over {len(conv)}/{len(run['seeds'])} seeds ({span(mass, 5)}), after {pm(conv, 3)} steps "
            f"(SPEC 0.9998 after ~900); {span(trig, 1)} at the trigger")


def t1_bound(R: Records) -> str:
    c = R.claim("training", "t1_bound")
    bounds = _run(R, "softmax-1x1")["bound"]
    return (f"{c['verdict']}: bound mean {pm([b['bound_mean'] for b in bounds], 5)} over {len(bounds)} seeds, min "
            f"{fmt(min(b['bound_min'] for b in bounds), 4)} over every evaluation sequence and non-trigger query, "
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
            f"head ({_n(len(certs), 'seed')}) puts >= {fmt(min(mins), 5)} on BOS at every non-trigger query on every input; "
            f"its worst-case error eta is bracketed by eta_lo {span(lo, 2)} (replayed witness) and eta_up {span(up, 2)}, so T1 (b) (eta <= 1/120) "
            f"{'cannot apply' if min(lo) > 1 / 120 else 'may apply'} and T1 (a) applies to {applies_a}/{len(certs)}: "
            f"{end['verdict']}")
    try:
        text += f"; constructions certify to their closed forms: {R.claim('constructions', 'constructions_certified')['verdict']}"
    except NotInRun:
        pass
    layers = []
    for layer in (0, 1):
        try:
            s = R.claim("training", f"stack_2x2_layer{layer}")
        except NotInRun:
            continue
        layers.append(f"layer {layer} {s['verdict']} ({s['evidence'].split(';')[0]})")
    return text + (f"; 2 x 2 stacks, every head >= 1/2 on every input: {', '.join(layers)}" if layers else "")


def _per_seed_sinking(run: Any, level: float) -> list[int]:
    heads = [h for layer in run["bos_nontrigger_mean"] for h in layer]
    return [sum(h[m] > level for h in heads) for m in range(len(run["seeds"]))]


def t2_observed(R: Records) -> str:
    from empirical.metrics import STACK_SINK_MASS
    from empirical.parts.training import SPEC_VALUES

    cells, verdicts = [], []
    for layers in (2, 4):
        try:
            c = R.claim("training", f"t2_observed_{layers}x{layers}")
        except NotInRun:
            continue
        run = _run(R, f"softmax-{layers}x{layers}")
        verdicts.append(c)
        per_head = [statistics.fmean(h) for layer in run["bos_nontrigger_mean"] for h in layer]
        conv = [s for s, ok in zip(run["steps"], run["converged"]) if ok]
        cells.append(f"{layers} x {layers} ({sum(run['converged'])}/{len(run['seeds'])} converged, {pm(conv, 3)} steps; "
                     f"SPEC ~{SPEC_VALUES[('softmax', layers, layers)][0].strip('~')}): heads with mean non-trigger BOS "
                     f"mass > {STACK_SINK_MASS} per seed {', '.join(map(str, _per_seed_sinking(run, STACK_SINK_MASS)))} "
                     f"of {len(per_head)}; per head {fmt(min(per_head), 2)}-{fmt(max(per_head), 4)} on average over the "
                     f"seeds (SPEC: {SPEC_VALUES[('softmax', layers, layers)][1]})")
    if not cells:
        raise NotInRun("not in this run (softmax 2x2 and 4x4: the default `sinks reproduce` has them)")
    return f"{_verdict(*verdicts)} (criterion: some head above {STACK_SINK_MASS} in every seed): " + "; ".join(cells)


def t3_observed(R: Records) -> str:
    exact, no_sink = R.claim("training", "t3_exact_zero"), R.claim("training", "t3_no_sink")
    run = _run(R, "relu-1x1")
    zero = [s for s, m in zip(run["seeds"], _members(run, "row_nontrigger_max")) if m == 0.0]
    worst = max(_members(run, "bos_nontrigger_mean"))
    cells = [f"1 layer: BOS mass {'exactly 0' if worst == 0 else '<= ' + fmt(worst, 2)} ({no_sink['verdict']}, "
             f"criterion <= 0.002 in every seed)"]
    for layers in (2, 4):
        try:
            c = R.claim("training", f"t3_observed_{layers}x{layers}")
        except NotInRun:
            continue
        worst = max(v for layer in _run(R, f"relu-{layers}x{layers}")["bos_nontrigger_mean"] for h in layer for v in h)
        cells.append(f"{layers} x {layers}: {'exactly 0' if worst == 0 else '<= ' + fmt(worst, 2)} ({c['verdict']})")
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
            f"16): error <= {' / '.join(fmt(p['max_error'], 2) for p in last)} ({' / '.join(names)}) at gap "
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
    smt_kinds = R.details("smt").get("kinds") or {}
    smt_cell = (f"SMT {smt_kinds['softpick']['status']} (K = 2, length 3)" if "softpick" in smt_kinds
                else "SMT: not in this run (default `sinks reproduce --only smt`)")
    kind = R.claim("beyond", "beyond_kind_softpick")
    return (f"{'verified exactly' if c['verified'] else 'failed'} (sympy limits; certified error <= "
            f"{fmt(p['max_error'], 2)} at gap {p['gap']:g}, BOS mass {fmt(p['max_bos_mass'], 2)}); {smt_cell}; "
            f"training {kind['verdict']}: BOS mass {fmt(ref['sink_mean'], 2)} over {ref['seeds']} seeds (error "
            f"{fmt(ref['error_max'], 2)}, {ref['converged']}/{ref['seeds']} stop); without BOS "
            f"{nob['converged']}/{nob['seeds']} stop")


def variants(R: Records) -> str:
    runs = [r for r in R.details("beyond")["runs"] if r["kind"] == "softmax" and r["variant"] not in ("reference", "no_bos")]
    if not runs:
        raise NotInRun("not in this run (the variants: the default `sinks reproduce --only beyond` has them)")
    claims = [R.claim("beyond", f"beyond_variant_{r['variant']}_softmax_1x1") for r in runs]
    return (f"{_verdict(*claims)} (criterion: min BOS mass > 0.9 in every seed): BOS mass >= "
            f"{fmt(min(r['sink_min'] for r in runs), 3)} in every seed of " + ", ".join(r["variant"] for r in runs))


def semantics(R: Records) -> str:
    return ("verified numerically: passes for every registered kind, float64 against the exact evaluator "
            "(a test result, not a `sinks reproduce` figure)")


P = "tests/test_proofs.py::test_statement_is_proved"
ROWS = (
    Row("task and model semantics: torch equals the exact evaluator", "`pytest tests/test_model.py`",
        "`test_torch_model_equals_exact_reference`", "—", semantics),
    Row("T1 (single layer, softmax): error eta forces a_i0 >= 1 - 12 eta/(5 - 12 eta) before the trigger (L >= 4) and "
        ">= 1 - 4 eta/(m_r + 2 eta) at every non-trigger query (L >= 5); eta = 0 impossible. Lemmas: "
        "[`bos_query_sees_only_bos`](proofs/bos_query_sees_only_bos.py), [`token_consistency`](proofs/token_consistency.py), "
        "[`content_flag_lower_bound`](proofs/content_flag_lower_bound.py), [`trigger_row_ratio_bound`](proofs/trigger_row_ratio_bound.py), "
        "[`flag_sum_lower_bound`](proofs/flag_sum_lower_bound.py), [`sink_bound_direction`](proofs/sink_bound_direction.py), "
        "[`t1_single_layer_sink`](proofs/t1_single_layer_sink.py)",
        "`sinks prove`", f"`{P}[t1_single_layer_sink]`, `tests/test_verdict_propagation.py`, "
        "`tests/test_proof_properties.py::test_t1_holds_on_perturbed_heads`", "`results/proofs.json`", t1_proved),
    Row("T1 on finite instances (SMT): no softmax head with error <= eps puts < 1/2 on BOS at any non-trigger query, "
        "before or after the trigger (K one-hot content types, reference conventions, eps = 1/100); theta* per "
        "instance; traps F1-F6 and positive controls replayed ([`proofs/smt/`](proofs/smt/))",
        "`sinks reproduce --only smt`; by hand `sinks search --tokens 2 --length 6 --theta 1/2 [--recheck cvc5]`",
        "`tests/test_smt.py::test_sink_proved_two_types`, `tests/test_smt_certificates.py`, `tests/test_smt_recheck.py`, "
        "`tests/test_smt_thresholds.py`", "`results/smt.json`", smt),
    Row("T2 (H >= 2 heads per layer, non-trigger): \"some head must sink at a non-trigger query\" is **false**: the "
        "two-head cancelling pair ([`constructions/cancelling_heads.py`](constructions/cancelling_heads.py)) has error "
        "-> 0 with every head <= 1/2 on BOS off the trigger, in one layer and in a residual stack. Open questions: (a) "
        "some head sinks at some query, trigger included; (a') two heads, L >= 5; (b) one head per layer, N >= 2; (c) "
        "one residual layer, one head. Statements: [`t2_multi_layer_existential`](proofs/t2_multi_layer_existential.py), "
        "[`t2_open_questions`](proofs/t2_open_questions.py)",
        "`sinks prove t2_multi_layer_existential t2_sink_at_some_query t2_two_heads_sink_at_some_query "
        "t2_one_head_per_layer t1_one_residual_layer`, `sinks construct cancelling`, `sinks construct interpolating --L 4`",
        "`tests/test_proofs.py::test_statement_has_its_expected_verdict`, `tests/test_cancelling_heads.py`",
        "`results/proofs.json`, `results/constructions.json`", t2_refuted),
    Row("T3 (ReLU): the explicit ReLU head solves the single-layer task with zero error and zero BOS weight at every "
        "query; as layer 0 of a residual stack with zero-output layers and heads it solves the residual task "
        "([`constructions/relu_head.py`](constructions/relu_head.py))",
        "`sinks construct relu`, `sinks reproduce --only constructions`",
        "`tests/test_constructions.py::test_relu_head_is_exact_and_sink_free`, `::test_relu_stack_solves_residual_task`, "
        "`::test_torch_model_reproduces_targets`", "`results/constructions.json`", t3),
    Row("Sufficiency (softmax): the BOS-gap head has BOS mass e^b/(e^b+i) off the trigger and e^-b/(e^-b+j) at it, "
        "worst error max((L-1)/(e^b+L-1), e^-b/(2+e^-b)); the error before the trigger is exactly 1 - BOS mass, so it "
        "vanishes only as the sink's mass tends to 1 ([`constructions/softmax_head.py`](constructions/softmax_head.py))",
        "`sinks construct softmax --beta 10`, `sinks reproduce --only constructions`",
        "`tests/test_constructions.py::test_softmax_head_matches_closed_forms`, `::test_trade_off_error_vanishes_only_with_sink`",
        "`results/constructions.json`", sufficiency),
    Row("T1 observed: a trained single-layer softmax head sinks (BOS mass > 0.99 at non-trigger queries, ~0 at the "
        "trigger)", "`sinks train --seeds 0 1 2 3 4`, `sinks reproduce --only training`",
        "`tests/test_train.py::test_softmax_run_sinks_and_the_bound_holds`, "
        "`tests/test_threshold_pins.py::test_sink_mass_level_is_pinned`",
        "`results/training.json`, `results/training_patterns_1x1.png`", t1_observed),
    Row("T1 certified from the weights: a_i0 >= (delta_i - ||o_i||)/(delta_i + ||u_0||) at every "
        "evaluation sequence and non-trigger query, delta_i a certified lower bound (QP dual, float64)",
        "`sinks reproduce --only training`", "`tests/test_bound.py` (hand-computed on the softmax family; random, "
        "multi-layer and trained models)", "`results/training.json`, `results/training_sink_vs_step.png`", t1_bound),
    Row("Certified over every input: every trained single-layer softmax head sinks on every input (> 0.99, the pinned "
        "sink level), its worst-case error eta bracketed and T1 checked end to end; constructions certify to their "
        "closed forms; 2 x 2 stacks per head ([`proofs/certify/`](proofs/certify/))",
        "`sinks certify WEIGHTS`, `sinks reproduce --only training constructions`",
        "`tests/test_certify.py`, `tests/test_certify_cli.py`",
        "`results/training.json`, `results/constructions.json`, `results/certify/certify.json`", certified),
    Row("T2 observed: what training finds (the task does not force it: T2 is refuted above): in trained softmax stacks "
        "some head sinks", "`sinks reproduce --only training`, `sinks train --layers 4 --heads 4 --seeds 0 1 2 3 4`",
        "`tests/test_threshold_pins.py::test_stack_sink_mass_level_is_pinned`, "
        "`tests/test_metrics.py::test_bos_mass_on_a_hand_built_pattern`",
        "`results/training.json`, `results/training_heads_softmax_4x4.png`", t2_observed),
    Row("T3 observed: trained ReLU heads form no sink", "`sinks train --kind relu --seeds 0 1 2 3 4`, "
        "`sinks reproduce --only training`", "`tests/test_train.py::test_relu_run_puts_exactly_zero_weight_on_non_trigger_rows`, "
        "`tests/test_threshold_pins.py::test_no_sink_mass_level_is_pinned`", "`results/training.json`", t3_observed),
    Row("Beyond: heads of softmax1, sink_logit, gated and sigmoid solve the single-layer task with error -> 0 and BOS "
        "mass -> 0 (no sink) ([`constructions/abstaining_heads.py`](constructions/abstaining_heads.py))",
        "`sinks reproduce --only beyond`", "`tests/test_abstaining_heads.py`",
        "`results/beyond.json`, `results/beyond_tradeoff.png`", abstaining),
    Row("Beyond: a normalised kind (sigmoid_norm) sinks like softmax; kinds that can abstain (softmax1, sink_logit, "
        "gated) solve the task without BOS, normalised ones cannot", "`sinks beyond --variants reference,no_bos`",
        "`tests/test_beyond_training.py`", "`results/beyond.json`", normalised),
    Row("Beyond: softpick (arXiv:2504.20966, registered kind) can abstain: a sink-free head solves the task; trained "
        "heads form no sink ([`constructions/abstaining_heads.py`](constructions/abstaining_heads.py))",
        "`sinks beyond --kinds softpick`", "`tests/test_abstaining_heads.py`, `tests/test_beyond_training.py`",
        "`results/beyond.json`", softpick),
    Row("Functional sinks: which heads' BOS attention the trained model relies on (error increase > 0.05 when the "
        "head's BOS weight is removed and its row renormalised)", "`sinks reproduce --only training`",
        "`tests/test_ablation.py`", "`results/training.json`, `results/training_functional_sinks.png`", functional),
    Row("Beyond: the softmax sink survives several triggers, Gaussian content, key-query retrieval and evaluation at "
        "L = 64 / 256", "`sinks beyond --kinds softmax --variants triggers3,gaussian,retrieval,length64,length256`",
        "`tests/test_variants.py` (task), `tests/test_beyond_training.py` (runs)", "`results/beyond.json`", variants),
)
