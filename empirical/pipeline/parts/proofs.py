"""The ``proofs`` part of ``sinks reproduce``: every registered statement, T1/T2/T3 as claims,
and T1's f(eta) against the softmax family.

Quick and default modes run the same checks (all symbolic, seconds); the default adds more
betas to the family table.
"""

from __future__ import annotations

from pathlib import Path

TEST = "tests/test_proofs.py"

# (id, claim, the statement that states it, its evidence lines' prefix, tests); the statements
# whose verdicts decide a claim are that statement and everything it cites, transitively
# (``proofs.registry.dependencies``). T1's parts (a), (b), (c) are one statement; each claim's
# evidence is that part's own steps and family figures (evidence lines starting "(a)", ...).
PROVED = f"{TEST}::test_statement_is_proved"
CLAIMS = (
    ("t1a", "T1(a): a single softmax head with worst-case error eta <= 1/12 puts >= 1 - 12 eta/(5 - 12 eta) on BOS "
     "at every query before the trigger (d >= 4, L >= 4)", "t1_single_layer_sink", "(a)",
     (f"{PROVED}[t1_single_layer_sink]", "tests/test_proof_properties.py::test_t1_holds_on_perturbed_heads")),
    ("t1b", "T1(b): with L >= 5 and eta <= 1/120, every non-trigger query (after the trigger too) puts "
     ">= 1 - 4 eta/(m_r(eta) + 2 eta) on BOS, m_r = 1 - 6 eta - 8 eta (1 + 48 eta)/(1 - 96 eta)",
     "t1_single_layer_sink", "(b)",
     (f"{PROVED}[t1_single_layer_sink]", "tests/test_proof_properties.py::test_t1_holds_on_perturbed_heads")),
    ("t1c", "T1(c): no softmax head solves the task with error 0", "t1_single_layer_sink", "(c)",
     (f"{PROVED}[t1_single_layer_sink]",)),
    ("t3", "T3: the ReLU head solves the task exactly (symbolic j, L) with zero BOS weight; its residual stack too",
     "relu_construction_exact", "", (f"{PROVED}[relu_construction_exact]",)),
    ("sufficiency", "Sufficiency: the softmax family's error at non-trigger queries is exactly 1 - BOS mass and "
     "-> 0 only as beta -> oo", "softmax_family_limits", "", (f"{PROVED}[softmax_family_limits]",)),
)


# Statements reported one by one, with their own verdict (refuted / unknown ones included).
STATEMENT_CLAIMS = (
    ("t2_multi_layer_existential", "T2 (non-trigger, H >= 2): some head must sink at a non-trigger query. Refuted by "
                                   "the cancelling pair (constructions/cancelling_heads.py); the 2 x 2 / 4 x 4 sinks of "
                                   "training are what training finds, not what the task forces"),
    ("t2_sink_at_some_query", "T2 question (a): for every H, some head's BOS mass -> 1 at some query i >= 1, trigger "
                              "included"),
    ("t2_two_heads_sink_at_some_query", "T2 question (a'): two heads, L >= 5: some head's BOS mass -> 1 at some "
                                        "query (proved for flag-reading scores; open for content-reading scores)"),
    ("t2_two_heads_flag_scores_sink", "T2 question (a') for scores that read only the flags: if both heads put <= theta "
                                      "on BOS at query 1, some head puts >= 1 - 125 delta on BOS at the trigger, delta = "
                                      "eta (1 + (p+1)^2 + (p+2)^2), p = theta/(1 - theta)"),
    ("t2_one_head_per_layer", "T2 question (b): one head per layer, N >= 2 residual layers: some head sinks at a "
                              "non-trigger query (the candidate sink-free construction breaks; open in general)"),
    ("t2_one_head_per_layer_flag_family", "T2 question (b), the candidate family (layer 1 reads the flags, layer 2 no "
                                          "contents, scalar content maps): no member is exact at L >= 6"),
    ("t1_one_residual_layer", "T2 question (c): one head in one residual layer inherits T1 verbatim"),
    ("t1a_tightened_per_content", "T1(a) tightened to (99/100) f_pre on the hypotheses its proof uses (the BOS query "
                                  "and the equal-content sequences of one content): refuted by an exact tight head"),
    ("t1b_tightened_per_content", "T1(b) tightened to (99/100) f_all on the hypotheses its proof uses (L = 5): refuted "
                                  "by an exact near-tight head (0.9988 f_all)"),
    ("t1_pre_trigger_sharp", "T1(a) sharpened for L >= 5: 1 - a_i0 <= 2 eta/(m_5 + eta) = 2 eta + O(eta^2) before the "
                             "trigger"),
)


def _statement_claim(v, claim: str) -> dict:
    evidence = next((e for e in reversed(v.evidence) if e.startswith(("counterexample", "did not close"))),
                    v.evidence[-1] if v.evidence else "")
    if v.kernel is not None:
        evidence = f"{v.label}: {evidence}"
    return {"id": v.name, "claim": claim, "verdict": v.status, "evidence": evidence,
            "test": f"{TEST}::test_statement_has_its_expected_verdict[{v.name}]",
            "command": f"sinks prove {v.name}", "figures": []}


def _own_evidence(v, prefix: str) -> list[str]:
    """The statement's evidence lines of one part ("(a)", ...), with the family figures that part
    is checked against (f_pre for (a), f_all for (b)); all of it without a prefix."""
    argued = "not checked (argued): "
    if not prefix:
        steps = [e for e in v.evidence if not e.startswith("cites ")]
        n_argued = sum(e.startswith(argued) for e in steps)
        return [f"{len(steps) - n_argued} steps checked, {n_argued} argued (not checked)"]
    own = [e.removeprefix(f"{prefix} ") for e in v.evidence if e.startswith(prefix)]
    own += [f"argued (not checked): {e.removeprefix(f'{argued}{prefix} ')}" for e in v.evidence
            if e.startswith(f"{argued}{prefix}")]
    bound, ratio = {"(a)": ("f_pre", "pre_ratio"), "(b)": ("f_all", "after_ratio")}.get(prefix, (None, None))
    if bound:  # the same family rows the statement's check compares with f
        from proofs.statements.t1_single_layer_sink import FAMILY_BETAS, FAMILY_L, family_table

        ratios = [r[ratio] for r in family_table(FAMILY_BETAS) if ratio in r]
        own.append(f"softmax family at L = {FAMILY_L}: (1 - a)/{bound} = {min(ratios):.3f}-{max(ratios):.3f} over "
                   f"{len(ratios)} values of beta in the range of {prefix} (the bound holds, loose by "
                   f"{1 / max(ratios):.1f}x at best)")
    return own


def _claim_from(verdicts: dict, key: str, claim: str, statement: str, prefix: str, tests: tuple[str, ...]) -> dict:
    from proofs.registry import dependencies

    names = dependencies(statement)
    statuses = {n: verdicts[n].status for n in names}
    verdict = "proved" if all(s == "proved" for s in statuses.values()) else (
        "refuted" if statuses[statement] == "refuted" else "unknown")
    lemmas = [n for n in names if n != statement]
    proved = [n for n in lemmas if statuses[n] == "proved"]
    cited = (f"cited lemmas proved in this run: {len(proved)}/{len(lemmas)}"
             + ("" if len(proved) == len(lemmas) else
                f" (not proved: {', '.join(f'{n} {statuses[n]}' for n in lemmas if n not in proved)})"))
    if any(verdicts[n].kernel is not None for n in lemmas):
        cited += f"; kernel-checked by Coq: {sum(verdicts[n].kernel == 'coq' for n in lemmas)}/{len(lemmas)}"
    evidence = "; ".join([f"{statement}: {verdicts[statement].label} ({verdicts[statement].seconds:.2f} s)",
                          *_own_evidence(verdicts[statement], prefix), cited] if lemmas else
                         [f"{statement}: {verdicts[statement].label} ({verdicts[statement].seconds:.2f} s)",
                          *_own_evidence(verdicts[statement], prefix)])
    return {"id": key, "claim": claim, "verdict": verdict, "evidence": evidence, "test": ", ".join(tests),
            "command": f"sinks prove {statement}", "figures": []}


def claims_for(verdicts: dict) -> list[dict]:
    """The part's claims from the verdicts at hand (a claim whose statements did not all run is left out)."""
    from proofs.registry import dependencies

    claims = [_claim_from(verdicts, *c) for c in CLAIMS if all(n in verdicts for n in dependencies(c[2]))]
    if "t1_single_layer_sink" in verdicts:
        claims.append({
            "id": "t1_after_trigger_L4",
            "claim": "T1 after the trigger when L = 4 (only trigger positions 2 and 3)", "verdict": "unknown",
            "evidence": "not covered: the trigger row's ratio rho is not pinned by two trigger positions, and the "
                        "bound on the trigger's image carries eta * B/C (proofs/README.md)",
            "test": "", "command": "sinks prove t1_single_layer_sink trigger_flag_lower_bound", "figures": []})
    claims += [_statement_claim(verdicts[name], claim) for name, claim in STATEMENT_CLAIMS if name in verdicts]
    for v in verdicts.values():
        if v.planted:
            claims.append({"claim": f"planted false statement (must be refuted): {v.statement}", "verdict": v.status,
                           "evidence": v.evidence[-1] if v.evidence else "", "figures": [],
                           "test": f"{TEST}::test_planted_false_statement_is_not_proved[{v.name}]",
                           "command": f"sinks prove {v.name}"})
    return claims


def family_table_for_report(quick: bool) -> dict:
    """T1's f(eta) against the softmax family, as a report table."""
    from proofs.statements.t1_single_layer_sink import family_table

    betas = (6, 8, 10, 12, 14) if quick else (6, 7, 8, 9, 10, 12, 14, 16, 20)
    rows = family_table(betas)
    return {
        "title": "T1's f(eta) against the softmax family (L = 16): 1 - min BOS mass vs the bound",
        "columns": ["beta", "eta", "1-a pre", "f_pre", "ratio", "1-a after", "f_all", "ratio"],
        "rows": [[r["beta"], f"{r['eta']:.3e}", f"{r['one_minus_bos_pre']:.3e}", _fmt(r, "f_pre"), _fmt(r, "pre_ratio", 3),
                  f"{r['one_minus_bos_after']:.3e}", _fmt(r, "f_all"), _fmt(r, "after_ratio", 3)] for r in rows],
        "note": "f_pre applies for eta <= 1/12, f_all for eta <= 1/120 ('-' outside); ratio = (1 - a)/f",
    }


def kernel_table(verdicts: dict, report) -> dict:
    """Per statement with a Coq twin: its verdict, the kernel check and the Coq theorems."""
    from proofs.coq.twins import TWINS

    rows = [[name, v.label, v.kernel, ", ".join(TWINS[name])] for name, v in verdicts.items() if v.kernel is not None]
    return {"title": "Kernel check: the statements with a Coq twin (proofs/coq)",
            "columns": ["statement", "verdict", "kernel", "Coq theorems"], "rows": rows,
            "note": report.summary() + (f"; Print Assumptions of the main theorems lists: "
                                        f"{report.printed_assumptions(list(report.assumptions))}; "
                                        f"{report.recheck.get('summary', 'coqchk not run')}" if report.ok else "")}


def kernel_record(verdicts: dict) -> tuple[list[dict], dict | None]:
    """The kernel table and the report of the run's Coq check ([], None when no twin ran)."""
    from proofs.coq.kernel import default_report

    if not any(v.kernel is not None for v in verdicts.values()):
        return [], None
    report = default_report()  # the run's own check, cached: nothing is compiled again
    return [kernel_table(verdicts, report)], report.to_dict()


def run(results_dir: Path, quick: bool, device: str) -> dict:
    from empirical.host import watch
    from proofs import registry

    with watch.stage("the statements in sympy, with the Coq kernel check"):
        verdicts = {v.name: v for v in registry.run()}
    tables, kernel = kernel_record(verdicts)
    with watch.stage("the softmax family table"):
        family = family_table_for_report(quick)
    return {"claims": claims_for(verdicts), "tables": [family] + tables,
            "verdicts": [v.to_dict() for v in verdicts.values()], "kernel": kernel}


def _fmt(row: dict, key: str, digits: int = 0) -> str:
    if key not in row:
        return "-"
    return f"{row[key]:.{digits}f}" if digits else f"{row[key]:.3e}"
