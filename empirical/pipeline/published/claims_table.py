"""The top README's claims table: one ``Row`` per claim, its verdict and result built from the run.

The table is the front page, one line per claim: the claim (short), its verdict (a word of
``empirical.pipeline.reproduce.VERDICTS``, the row's own verdict read from the part's claims, with
at most a short qualifier), the headline figure(s), and how to check it (the command, the
results file it writes, the test). The claim, command, test and result-file texts are fixed; the
verdict and result are a function of the run's part records (``claims_results``). The full
evidence stays in the run's ``REPORT.md`` and in ``claims.json``. A cell whose part or claim is not
in the run says so. To add a row: write its result function in ``claims_results`` (a claim it
reads gets an ``id`` in its part), append a ``Row`` to ``ROWS``, and run ``sinks report --results
DIR --publish`` with a results folder that has what the row reads (``--rerender`` suffices when
the row reads nothing new).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .claims_results import (Result, abstainers_sink, abstaining, certified, functional, lm_probe, normalised,
                             question_b_observed, semantics, smt, softpick, stacks, sufficiency, t1_bound, t1_in_full,
                             t1_observed, t1_proved, t2_observed, t2_refuted, t3, t3_observed, variants)
from .records import NotInRun, Records

COLUMNS = ["claim", "verdict", "result", "how to check"]


@dataclass(frozen=True)
class Row:
    claim: str
    command: str
    test: str
    files: str
    result: Callable[[Records], Result]

    def check(self) -> str:
        """The command, the results file it writes (if any), then the tests; a results file the
        command does not write is named with the command that does."""
        files = self.files if self.files not in ("", "—") else ""
        if files and files.strip("`") not in written_by(self.command):
            part = files.strip("`").removeprefix("results/").removesuffix(".json")
            cited = f"{self.command}; {files} from `sinks reproduce --only {part}`"
        else:
            cited = f"{self.command} ({files})" if files else self.command
        return "; ".join(part for part in (cited, self.test) if part)


def written_by(command: str) -> set[str]:
    """The results files a command the READMEs cite writes on its defaults (``--out results``):
    ``sinks reproduce`` its parts' files (``reproduce.part_path``), REPORT.md and claims.json;
    ``sinks prove`` proofs.json; ``sinks search`` smt.json; any other command none in ``results/``
    itself (tests/test_cited_files.py holds this to the commands)."""
    from empirical.pipeline import reproduce

    words = command.strip("`").split()
    if words[:2] == ["sinks", "reproduce"]:
        parts = words[words.index("--only") + 1:] if "--only" in words else list(reproduce.PARTS)
        return {f"results/{p}.json" for p in parts} | {f"results/{reproduce.REPORT}", "results/claims.json"}
    return {f"results/{name}" for cmd, name in (("prove", "proofs.json"), ("search", "smt.json")) if words[:2] == ["sinks", cmd]}


def build(R: Records) -> tuple[list[str], list[list[str]]]:
    rows = []
    for row in ROWS:
        try:
            result = row.result(R)
            verdict, figure = result.verdict, result.figure
        except NotInRun as e:
            verdict, figure = "—", str(e)
        rows.append([row.claim, verdict, figure, row.check()])
    return COLUMNS, rows


TRAINING = "`sinks reproduce --only training`"
BEYOND = "`results/beyond.json`"
ROWS = (
    Row("Task and model semantics: the torch model equals the exact evaluator", "",
        "`tests/test_model.py::test_torch_model_equals_exact_reference`", "—", semantics),
    Row("T1 (one softmax layer): error eta forces a_i0 >= 1 - 12 eta/(5 - 12 eta) before the trigger (L >= 4) and "
        ">= 1 - 4 eta/(m_r + 2 eta) at every non-trigger query (L >= 5); eta = 0 is impossible",
        "`sinks prove t1_single_layer_sink`", "`tests/test_proofs.py`, `tests/test_coq.py`", "`results/proofs.json`",
        t1_proved),
    Row("T1 on finite instances (SMT): no softmax head with error <= 1/100 puts < 1/2 on BOS at a non-trigger query "
        "(K one-hot content types); the sharpest such threshold theta*",
        "`sinks reproduce --only smt`", "`tests/test_smt.py::test_sink_proved_two_types`", "`results/smt.json`", smt),
    Row("T2 (H >= 2 heads): \"some head must sink at a non-trigger query\" is false: a cancelling pair of heads "
        "([`cancelling_heads.py`](constructions/cancelling_heads.py)) has error -> 0 with every head <= 1/2 on BOS "
        "off the trigger", "`sinks construct cancelling`",
        "`tests/test_cancelling_heads.py`, `tests/test_multihead_questions.py`", "`results/constructions.json`",
        t2_refuted),
    Row("T3 (ReLU): an explicit head ([`relu_head.py`](constructions/relu_head.py)) solves the task with zero error "
        "and zero BOS weight, alone and as layer 0 of a residual stack", "`sinks construct relu`",
        "`tests/test_constructions.py::test_relu_head_is_exact_and_sink_free`", "`results/constructions.json`", t3),
    Row("Sufficiency (softmax): the BOS-gap head ([`softmax_head.py`](constructions/softmax_head.py)) errs before the "
        "trigger by exactly 1 - BOS mass, so its error vanishes only as the sink's mass tends to 1",
        "`sinks construct softmax --beta 10`", "`tests/test_constructions.py::test_softmax_head_matches_closed_forms`",
        "`results/constructions.json`", sufficiency),
    Row("T1 observed: trained single-layer softmax heads sink (BOS mass > 0.99 off the trigger, ~0 at it)",
        "`sinks train --seeds 0 1 2 3 4`", "`tests/test_train.py::test_softmax_run_sinks_and_the_bound_holds`",
        "", t1_observed),
    Row("T1 certified from the weights: a_i0 >= (delta_i - ||o_i||)/(delta_i + ||u_0||), delta_i a certified lower "
        "bound", TRAINING, "`tests/test_bound.py`", "`results/training.json`", t1_bound),
    Row("Certified over every input: trained single-layer softmax heads sink on every input; eta bracketed, T1 "
        "checked end to end ([`proofs/certify/`](proofs/certify/README.md))", "`sinks certify WEIGHTS`",
        "`tests/test_certify.py`", "", certified),
    Row("T1 in full: heads trained further on their worst inputs meet T1 (b)'s hypothesis (eta <= 1/120) and its bound",
        TRAINING, "`tests/test_t1_end_to_end.py`", "", t1_in_full),
    Row("Certified over every input, trained stacks: every head that sinks on the eval set puts >= 1/2 on BOS on "
        "every input (heads certified / heads sinking, per seed)", "`sinks certify WEIGHTS`",
        "`tests/test_certify_stack.py`", "", stacks),
    Row("T2 observed: in trained softmax stacks some head sinks (what training finds; the task does not force it)",
        "`sinks train --layers 4 --heads 4 --seeds 0 1 2 3 4`",
        "`tests/test_threshold_pins.py::test_stack_sink_mass_level_is_pinned`", "", t2_observed),
    Row("Question (b) observed: what training finds in 2 x 1 softmax stacks (one head per layer)",
        "`sinks train --layers 2 --heads 1 --seeds 0 1 2 3 4`",
        "`tests/test_training_part.py::test_one_head_per_layer_claim_reads_the_sink_level`", "", question_b_observed),
    Row("T3 observed: trained ReLU heads form no sink", "`sinks train --kind relu --seeds 0 1 2 3 4`",
        "`tests/test_train.py::test_relu_run_puts_exactly_zero_weight_on_non_trigger_rows`", "", t3_observed),
    Row("Beyond: softmax1, sink_logit, gated and sigmoid heads ([`abstaining_heads.py`](constructions/abstaining_heads.py)) "
        "solve the task with error -> 0 and BOS mass -> 0", "`sinks reproduce --only beyond`",
        "`tests/test_abstaining_heads.py`", BEYOND, abstaining),
    Row("Beyond: a normalised kind (sigmoid_norm) sinks like softmax; kinds that can abstain solve the task without "
        "BOS, normalised ones cannot", "`sinks beyond --variants reference,no_bos`", "`tests/test_beyond_training.py`",
        BEYOND, normalised),
    Row("Beyond: with BOS available, trained softmax1 and sink_logit heads still sink (BOS mass > 0.99 in every "
        "seed; what training finds, not what the task needs: both solve it without BOS)",
        "`sinks beyond --kinds softmax1,sink_logit`", "`tests/test_beyond_training.py`", BEYOND, abstainers_sink),
    Row("Beyond: softpick (arXiv:2504.20966) can abstain: a sink-free head solves the task; trained heads form no sink",
        "`sinks beyond --kinds softpick`", "`tests/test_abstaining_heads.py`", BEYOND, softpick),
    Row("Functional sinks: heads whose BOS attention the trained model relies on (error up > 0.05 when BOS is "
        "removed from the head's rows)", TRAINING, "`tests/test_ablation.py`", "`results/training.json`", functional),
    Row("Beyond: the softmax sink survives several triggers, Gaussian content, key-query retrieval and L = 64 / 256",
        "`sinks beyond --kinds softmax --variants triggers3,gaussian,retrieval,length64,length256`",
        "`tests/test_variants.py`", BEYOND, variants),
    Row("Real LMs (SmolLM2-135M, Gemma-3-270M): the SPEC section 3 bound, Gu et al.'s Sink^eps and functional sinks "
        "([`empirical/lm/`](empirical/lm/README.md))", "`sinks probe smollm2` (extra `.[lm]`)",
        "`tests/test_lm_probe.py`", "", lm_probe),
)
