"""The ``smt`` part of ``sinks reproduce``: z3 checks of T1 on small finite instances.

Quick mode (~15 s): proofs for K = 2 content types at lengths 4 and 6, the ReLU and softmax
positive controls, the two trap counterexamples (length 2; trigger as a second sink in the
abstract task). Default mode adds length 8, K = 4 at length 8, a theta* table and, where cvc5 is
installed, a second solver on every step of the length-6 proof. Every SAT answer that counts was
replayed on every sequence; an unknown is reported as unknown. Each proof's evidence names who
vouches for its steps (z3, an exactly checked LP certificate, cvc5 agreeing).

No verdict here depends on the machine's speed: every z3 query runs under the work limit
``hardkill.RLIMIT`` (z3's rlimit, the same count on every machine; 2.5x the largest need of a
decided query of this part, measured: proofs/smt/README.md), cvc5 under ``recheck.CVC5_RLIMIT``,
and the wall clock (``hardkill.SAFETY_S`` per query) is only the safety net against a hang: where it
fires, the step is unknown and the claim's evidence says so. ``results/smt.json`` records, per
search, the most units a decided query needed, how many queries the limit stopped, how many the
clock stopped, and the limit (``details.work``; every step's count is in ``details.searches``).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from proofs.smt.hardkill import RLIMIT, SAFETY_S

if TYPE_CHECKING:
    from proofs.smt.verdict import SearchResult

TEST = "tests/test_smt.py"
# every solver call of the part: z3's work limit decides an unknown, the seconds are the safety net
LIMITS = {"timeout_s": SAFETY_S, "rlimit": RLIMIT}


def _claim(claim: str, verdict: str, evidence: str, test: str, command: str, key: str = "") -> dict:
    return {**({"id": key} if key else {}), "claim": claim, "verdict": verdict, "evidence": evidence, "test": f"{TEST}::{test}",
            "command": command, "figures": []}


def checkers(steps) -> str:
    """Who vouches for the steps, e.g. "9 LP certificate (...), 29 z3"."""
    counts: dict[str, int] = {}
    for s in steps:
        counts[s.checker] = counts.get(s.checker, 0) + 1
    return ", ".join(f"{n} {c}" for c, n in counts.items())


def cli_limits(limits: dict) -> str:
    """The ``sinks search`` options that give a query the part's limits (for a claim's command)."""
    return f" --rlimit {limits['rlimit']} --timeout {limits['timeout_s']:g}"


def work_note(r: SearchResult) -> str:
    """How close a search came to its work limit, and whether the clock fired (evidence text)."""
    w = r.work()
    note = f"z3 work: at most {w['max_units']} units per decided query (limit {w['limit']})" \
        if w["max_units"] is not None else "no decided z3 query"
    if w["at_limit"]:
        note += f"; {w['at_limit']} queries stopped by the work limit (unknown)"
    if r.safety_net:
        note += f"; wall-clock safety net fired at {len(r.safety_net)} queries (unknown): {r.safety_net[0]}"
    return note


def work_row(step: str, r: SearchResult) -> dict:
    """One row of ``details.work``: a search's largest decided z3 query against its limit."""
    return {"step": step, "queries": len(r.steps), **r.work()}


def _proof_claim(k: int, n: int, eps: Fraction, recheck_with: str | None = None,
                 limits: dict | None = None) -> tuple[dict, dict, SearchResult]:
    from proofs.smt.instance import reference_instance
    from proofs.smt.recheck import CVC5_RLIMIT
    from proofs.smt.search import search_counterexample

    r = search_counterexample(reference_instance(k, n, eps), Fraction(1, 2), "chain", **(limits or LIMITS),
                              recheck_with=recheck_with, recheck_rlimit=CVC5_RLIMIT)
    verdict = {"proof": "proved", "counterexample": "refuted"}.get(r.status, "unknown")
    unsat = sum(s.result == "unsat" for s in r.steps)
    return _claim(
        f"T1 on the finite reference instance K={k}, length={n}, eps={eps}: BOS mass >= 1/2 at every "
        f"non-trigger query (before and after the trigger)", verdict,
        f"{r.status}: {unsat}/{len(r.steps)} queries UNSAT (value box + one query per class), {r.seconds:.1f} s; "
        f"checked by: {checkers(r.steps)}; {work_note(r)}; {r.reason}",
        "test_sink_proved_two_types", f"sinks search --tokens {k} --length {n} --eps {eps} --theta 1/2"
        + (f" --recheck {recheck_with}" if recheck_with else "") + cli_limits(limits or LIMITS),
        key=f"smt_k{k}_length{n}"), r.summary(), r


def run(results_dir: Path, quick: bool, device: str, limits: dict | None = None) -> dict:
    from proofs.smt import recheck
    from proofs.smt.recheck import CVC5_RLIMIT

    limits = limits or LIMITS
    eps = Fraction(1, 100)
    claims, details = [], {"searches": []}
    work = {"rlimit": limits["rlimit"], "safety_s": limits["timeout_s"], "cvc5_rlimit": CVC5_RLIMIT, "steps": []}
    # the largest instance proved in about a minute (K = 4, length 8) only in the default mode;
    # with cvc5 installed the default mode re-solves every step of K = 2, length 6 with it
    second = "cvc5" if not quick and recheck.available("cvc5") else None
    if not quick and second is None:
        details["recheck"] = "cvc5 not installed (optional extra .[smt]): steps checked by z3 / LP certificates only"
    for k, n in (((2, 4), (2, 6)) if quick else ((2, 4), (2, 6), (2, 8), (4, 8))):
        claim, summary, r = _proof_claim(k, n, eps, second if (k, n) == (2, 6) else None, limits)
        claims.append(claim)
        details["searches"].append(summary)
        work["steps"].append(work_row(f"T1 proof K={k} length={n}", r))
        if r.recheck:
            t = r.recheck
            work["steps"].append({"step": f"cvc5 recheck K={k} length={n} (cvc5 units)", "max_units": t["work_max"],
                                  "limit": t["rlimit"], "unknown": t["unknown"], "safety_net": t["safety_net"]})
    claims += _controls(details, work["steps"], limits)
    if not quick:
        claims.append(_every_kind(details, work["steps"], limits))
        details["theta_star"] = _theta_table(eps, work["steps"], limits)
    details["work"] = work
    return {"claims": claims, **details}


def _controls(details: dict, work: list, limits: dict) -> list[dict]:
    """The positive controls (exact ReLU head, softmax with a sink, two cancelling heads) and the traps."""
    from proofs.smt.instance import reference_instance
    from proofs.smt.multihead import cancelling_heads
    from proofs.smt.search import search_counterexample

    eps, claims = Fraction(1, 100), []
    relu = search_counterexample(reference_instance(2, 4, 0), None, "scores", kind="relu", sink_cap=0, **limits)
    ok = relu.status == "solution" and relu.replay.max_error == "0"
    claims.append(_claim("T3 on a finite instance: z3 finds an exact ReLU head (eps = 0) with zero BOS weight",
                         "verified exactly" if ok else ("unknown" if relu.status == "unknown" else "failed"),
                         f"{relu.status}; exact replay on {relu.replay.sequences if relu.replay else 0} sequences: "
                         f"max error {relu.replay.max_error if relu.replay else '-'}, "
                         f"max BOS weight {relu.replay.max_bos_covered if relu.replay else '-'}; {work_note(relu)}",
                         "test_relu_with_zero_bos_weight_is_found_and_replayed_exactly",
                         "sinks search --kind relu --eps 0 --sink-cap 0" + cli_limits(limits)))
    details["searches"].append(relu.summary())
    work.append(work_row("ReLU control K=2 length=4 eps=0", relu))

    soft = search_counterexample(reference_instance(2, 4, Fraction(1, 10)), None, "pattern", **limits)
    claims.append(_claim("Sufficiency on a finite instance: z3 finds a softmax head within eps = 0.1, and it sinks",
                         "verified numerically" if soft.status == "solution" else "unknown",
                         f"{soft.status}; mpmath replay: max error {soft.replay.max_error if soft.replay else '-'}, "
                         f"min BOS mass {soft.replay.min_bos_covered if soft.replay else '-'}; {work_note(soft)}",
                         "test_softmax_with_sink_allowed_is_found_and_replayed",
                         "sinks search --eps 1/10 --method pattern" + cli_limits(limits)))
    work.append(work_row("softmax control K=2 length=4 eps=1/10", soft))

    f3 = search_counterexample(reference_instance(2, 2, Fraction(1, 10)), Fraction(1, 2), "pattern", **limits)
    f2 = search_counterexample(reference_instance(2, 4, eps, trigger_value="zero", bos_value="free"),
                               Fraction(1, 2), "chain", **limits)
    for label, r, test, cmd in (
            ("length 2 (too small) has a sink-free softmax solution", f3,
             "test_trap_f3_length_two_has_sink_free_solutions",
             "sinks search --length 2 --eps 1/10 --theta 1/2 --method pattern" + cli_limits(limits)),
            ("abstract task (trigger counts as zero): the trigger is a second sink after it", f2,
             "test_trap_f2_trigger_is_a_second_sink_in_the_abstract_task",
             "sinks search --trigger-value zero --bos-value free --theta 1/2" + cli_limits(limits))):
        confirmed = r.status == "counterexample"
        claims.append(_claim(f"Trap: {label} (the theorem's hypotheses exclude it)",
                             "verified numerically" if confirmed else "unknown",
                             f"{r.status} at {r.where}; replay max error {r.replay.max_error if r.replay else '-'}, "
                             f"min BOS mass {r.replay.min_bos_covered if r.replay else '-'}; {work_note(r)}", test, cmd))
        details["searches"].append(r.summary())
    work.append(work_row("trap F3 K=2 length=2 eps=1/10", f3))
    work.append(work_row("trap F2 K=2 length=4 (abstract task)", f2))

    heads = cancelling_heads(reference_instance(2, 4, Fraction(1, 10)), **limits)
    stopped = heads["answer"] == "unknown" and (heads["work"] or 0) >= heads["rlimit"]
    note = f"z3 work: {heads['work']} units (limit {heads['rlimit']})" + \
        ("; stopped by the work limit (unknown)" if stopped else "") + \
        ("; wall-clock safety net fired (unknown)" if heads["safety_net"] else "")
    claims.append(_claim("T2 is existential: a two-head softmax layer whose heads cancel solves the instance with "
                         "BOS mass <= 1/2 in both heads", "verified numerically" if heads["status"] == "solution" else "unknown",
                         f"{heads['status']}; replay max error {[r.max_error for r in heads['replay']]}, "
                         f"max BOS mass per head {[r.max_bos_covered for r in heads['replay']]}; {note}",
                         "test_two_heads_that_cancel_need_no_sink", "pytest tests/test_smt.py -k cancel"))
    work.append({"step": "two cancelling heads K=2 length=4 eps=1/10", "queries": 1,
                 "max_units": heads["work"] if heads["answer"] in ("sat", "unsat") else None,
                 "limit": heads["rlimit"], "at_limit": int(stopped), "safety_net": int(heads["safety_net"])})
    return claims


def _every_kind(details: dict, work: list, limits: dict) -> dict:
    """Every registered kind on K=2, length 3: the sink is needed exactly where rows sum to one."""
    from constructions import attention
    from proofs.smt.instance import reference_instance
    from proofs.smt.search import default_method, search_counterexample

    eps = Fraction(1, 100)
    rows, agree, kinds = [], True, {}
    for kind in attention.names():
        r = search_counterexample(reference_instance(2, 3, eps), Fraction(1, 2), default_method(kind), kind=kind,
                                  **limits)
        expected = "counterexample" if attention.get(kind).can_abstain else "proof"
        agree &= r.status == expected
        bos = r.replay.min_bos_covered if r.replay else "-"
        rows.append(f"{kind}: {r.status} (min BOS mass {bos})")
        kinds[kind] = {"status": r.status, "expected": expected, "min_bos_covered": bos,
                       "seconds": round(r.seconds, 2), "work": r.work()}
        work.append(work_row(f"kind {kind} K=2 length=3", r))
    details["kinds"] = kinds  # read by the beyond part's table (SMT column)
    clock = sum(k["work"]["safety_net"] for k in kinds.values())
    return _claim("Every registered kind on K=2, length 3, eps=1/100: kinds whose rows sum to one need the "
                  "sink (UNSAT), kinds that can abstain solve it without (replayed)",
                  "verified numerically" if agree else "unknown",
                  "; ".join(rows) + (f"; wall-clock safety net fired at {clock} queries (unknown)" if clock else ""),
                  "test_every_kind_is_encoded_or_reported",
                  "sinks search --kind KIND --length 3 --theta 1/2" + cli_limits(limits), key="smt_kinds")


def _theta_table(eps: Fraction, work: list, limits: dict) -> list[dict]:
    """theta* before the trigger, K = 2, lengths 3, 4, 6 (5 bisection steps)."""
    from proofs.smt.instance import reference_instance
    from proofs.smt.theta_star import theta_star

    table = []
    for n in (3, 4, 6):
        ts = theta_star(reference_instance(2, n, eps, covered="pre_trigger"), iterations=5, **limits)
        table.append({"length": n, "eps": str(eps), "theta_proved": ts.theta_proved,
                      "(1-theta*)/eps in": [ts.g_hi, ts.g_lo], "hi_confirmed": ts.hi_confirmed,
                      "hi_status": next((e["status"] for e in ts.iterations if e["theta"] == ts.theta_refuted), None),
                      "seconds": round(ts.seconds, 1), "work_max": ts.work_max, "at_limit": ts.at_limit,
                      "rlimit": ts.rlimit, "safety_net": ts.safety_net, "steps": ts.iterations})
        at = max(ts.iterations, key=lambda e: e["work_max"] or 0)
        work.append({"step": f"theta* K=2 length={n} pre-trigger ({len(ts.iterations)} searches)",
                     "queries": ts.queries, "max_units": ts.work_max, "at": f"g = {at['g']}: {at['work_at']}",
                     "limit": ts.rlimit, "at_limit": ts.at_limit, "safety_net": ts.safety_net})
    return table
