"""Every numeric threshold that decides a verdict is pinned: each test fails when its threshold
is loosened or tightened by a factor of 2 (values placed at 0.7x and 1.5x of the threshold, or
between it and its half / double). The SMT replay and margin thresholds are pinned in the SMT
tests."""

import pytest
import torch

from empirical.training import bound, metrics
from empirical.pipeline.parts import constructions as part


def _pattern_with_alpha0(alpha0: float, L: int = 4) -> torch.Tensor:
    """One head [1, 1, L, L] whose Gu score alpha_0 (mean over queries of a_i0) is ``alpha0``:
    a_00 = 1 and a_i0 = x at queries 1..L-1, the rest uniform on the other keys."""
    x = (alpha0 * L - 1) / (L - 1)
    P = torch.zeros(L, L, dtype=torch.float64)
    P[0, 0] = 1
    for i in range(1, L):
        P[i, 0] = x
        P[i, 1:i + 1] = (1 - x) / i
    return P.reshape(1, 1, L, L)


@pytest.mark.parametrize("alpha0, sinks, strict", [
    (0.2, False, False),   # above GU_EPS / 2 = 0.15: would sink if GU_EPS were halved
    (0.45, True, False),   # below 2 GU_EPS = 0.6: would not sink if GU_EPS were doubled
    (0.5, True, False),    # above GU_EPS_STRICT / 2 = 0.4: strict sink if it were halved
    (0.9, True, True),     # strict sink; doubling 0.8 puts it out of reach
])
def test_gu_sink_thresholds(alpha0, sinks, strict):
    assert (metrics.GU_EPS, metrics.GU_EPS_STRICT) == (0.3, 0.8)
    report = metrics.head_report(_pattern_with_alpha0(alpha0), torch.tensor([2]))
    assert report["gu_alpha0"].item() == pytest.approx(alpha0)
    assert bool(report["sinks_gu"].item()) is sinks
    assert bool(report["sinks_gu_strict"].item()) is strict


def _bound_result(slack: float) -> dict:
    measured = torch.tensor([[0.9]], dtype=torch.float64)
    zeros = torch.zeros_like(measured)
    return {"measured": measured, "bound": measured - slack, "delta_lower": zeros, "delta_upper": zeros,
            "output_norm": zeros, "bos_image_norm": zeros}


def test_certified_bound_violation_tolerance():
    tol = bound.VIOLATION_TOL
    assert bound.summarise(_bound_result(-1.5 * tol))["violations"].item() == 1  # counted at tol, not at 2 tol
    assert bound.summarise(_bound_result(-0.7 * tol))["violations"].item() == 0  # not counted at tol, counted at tol/2
    assert tol == 1e-9


def _record(construction: str, error: float, bound_value: float, bos: float = 0.0, bos_off: float = 0.5) -> dict:
    return {"construction": construction, "max_abs_error": error, "closed_form_bound": bound_value,
            "max_bos_weight": bos, "max_bos_weight_off_trigger": bos_off}


def test_relu_float_tolerance():
    tol = part.RELU_FLOAT_TOL
    assert part.float_checks_pass([_record("relu", 0.7 * tol, 0.0)])[0]
    assert not part.float_checks_pass([_record("relu", 1.5 * tol, 0.0)])[0]
    assert tol == 1e-12


def test_softmax_bound_relative_tolerance():
    tol, b = part.BOUND_REL_TOL, 1e-3
    for name in ("softmax beta=10", "cancelling beta=10"):
        assert part.float_checks_pass([_record(name, b * (1 + 0.7 * tol), b)])[1]
        assert not part.float_checks_pass([_record(name, b * (1 + 1.5 * tol), b)])[1]
    assert tol == 1e-9


def test_cancelling_off_trigger_bos_cap_is_the_claimed_half():
    assert part.float_checks_pass([_record("cancelling beta=10", 0.0, 1.0, bos_off=0.5)])[2]
    assert not part.float_checks_pass([_record("cancelling beta=10", 0.0, 1.0, bos_off=0.5 + 1e-9)])[2]


def test_sink_mass_level_is_pinned():
    """SINK_MASS (0.99) decides "a head sinks" in the T1 claims, observed and certified. Pinned
    on its gap 1 - level: a mass 1.5 gaps below 1 must not count (it would at a gap twice as
    wide), a mass 0.7 gaps below 1 must count (it would not at a gap half as wide)."""
    from empirical.pipeline.parts.certificate_tables import sink_verdict
    from empirical.training.metrics import SINK_MASS

    gap = 1 - SINK_MASS
    assert sink_verdict([1 - 0.7 * gap], [1.0]) == "verified exactly"
    assert sink_verdict([1 - 1.5 * gap], [1.0]) == "unknown"  # the certificate cannot decide
    assert sink_verdict([1 - 1.5 * gap], [1 - 1.2 * gap]) == "refuted"  # a replayed witness below the level


def test_stack_sink_mass_level_is_pinned():
    """STACK_SINK_MASS (0.9) decides whether the T2 training claim is observed or not met. Pinned
    on its gap 1 - level: a head 1.5 gaps below 1 must not count as sinking, 0.7 gaps must."""
    from empirical.training.metrics import STACK_SINK_MASS
    from empirical.pipeline.parts.training import _t2_claim

    gap = 1 - STACK_SINK_MASS

    def stack(mass):
        head = {"bos_nontrigger_mean": mass, "sinks_gu": True}
        return {"config": {"kind": "softmax", "layers": 2, "heads": 2, "seeds": [0], "max_steps": 10, "L": 16},
                "eval": {"sequences": 1000},
                "members": [{"converged": True, "layers": [[head, head], [head, head]]}]}

    assert _t2_claim(stack(1 - 0.7 * gap), {})["verdict"] == "observed"
    assert _t2_claim(stack(1 - 1.5 * gap), {})["verdict"] == "not met"  # a measurement, not a refutation


def test_no_sink_mass_level_is_pinned():
    """NO_SINK_MASS (0.002) decides the ReLU "no sink" claims: 0.75 of it is no sink, 1.5 of it is."""
    from empirical.training.metrics import NO_SINK_MASS
    from empirical.pipeline.parts.training import _relu_stack_claim

    def stack(mass):
        head = {"bos_nontrigger_mean": mass}
        return {"config": {"kind": "relu", "layers": 2, "heads": 2, "seeds": [0], "max_steps": 10},
                "members": [{"converged": True, "layers": [[head, head], [head, head]]}]}

    assert _relu_stack_claim(stack(0.75 * NO_SINK_MASS), {})["verdict"] == "observed"
    assert _relu_stack_claim(stack(1.5 * NO_SINK_MASS), {})["verdict"] == "not met"


def test_coq_certificate_budgets_are_pinned():
    """MAX_LEAVES and EXP_ARG_MAX decide whether a Coq certificate exists (beyond either it fails
    closed). A covering that needs 0.82 of MAX_LEAVES leaves closes (it would not at half the budget),
    one that needs 1.64 of it does not (it would at twice); an exp argument at 0.7 of EXP_ARG_MAX is
    bounded, one at 1.5 of it is refused, on either side."""
    from fractions import Fraction

    from proofs.coq.certificate import export

    width = lambda box: box[0][1] - box[0][0]  # a 1-d box halved k times: 2^k leaves of width 2 / 2^k
    N = [[1] * 4 for _ in range(4)]
    assert len(export._refine(width, 1, N, 2 / 2 ** 14)[1]) == 2 ** 14  # 16384 = 0.82 MAX_LEAVES
    with pytest.raises(export.Unclosed, match="did not close"):
        export._refine(width, 1, N, 2 / 2 ** 15)  # 32768 = 1.64 MAX_LEAVES
    for tables in (export.ExpTables(), export.ExpTables(lower=True)):
        for sign in (1, -1):
            tables.up(Fraction(sign * 700))  # 0.7 EXP_ARG_MAX (1000)
            tables.down(Fraction(sign * 700))
            for fn in (tables.up, tables.down):
                with pytest.raises(export.Unclosed, match="EXP_ARG_MAX"):
                    fn(Fraction(sign * 1500))  # 1.5 EXP_ARG_MAX
