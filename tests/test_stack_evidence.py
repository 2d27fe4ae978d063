"""The stack claim's evidence in ``sinks reproduce``: the certified / sinking
heads per seed and per layer, and the CPU seconds per stack, each counted from that seed's own
certificate and measured masses."""

from empirical.pipeline.parts.certificate_tables import stack_certificates
from proofs.certify.stack import affine_stack
from tests.test_certify_stack import sinking_stack, summary_of

# Two tiny trained-like stacks (d = 4, L = 5, 2 x 2, beta 4): seed 1 certifies all four heads
# (0.80-1.00), seed 5 only its layer-0 heads (0.96, 0.96; layer 1: 0.34, 0.18).
ALL_FOUR, LAYER_0_ONLY = 1, 5
L = 5


def two_seed_summary():
    """One summary holding both stacks as seeds 0 and 1; seed 1's L1H1 measures 0.9 (does not
    sink), every other head 0.95."""
    nets = [sinking_stack(4, s, "softmax", beta=4.0) for s in (ALL_FOUR, LAYER_0_ONLY)]
    first = summary_of(nets[0], L, [[0.95, 0.95], [0.95, 0.95]])
    second = summary_of(nets[1], L, [[0.95, 0.95], [0.95, 0.9]])
    summary = {**first, "config": {**first["config"], "seeds": [0, 1]},
               "members": first["members"] + second["members"], "weights": first["weights"] + second["weights"]}
    return nets, summary


def test_evidence_counts_each_seed_and_layer_from_its_own_certificate():
    nets, summary = two_seed_summary()
    certs = [{"type": "stack", **affine_stack.certify_stack(net, L), "cpu_seconds": cpu} for net, cpu in zip(nets, (1.5, 2.5))]
    assert [[h["non_vacuous"] for h in c["heads"]] for c in certs] == [[True] * 4, [True, True, False, False]]
    _, claim, rows = stack_certificates(summary, (2, 2), certs=certs)
    evidence = claim["evidence"]
    # seed 0: 4 sinking, 4 certified; seed 1: 3 sinking (L1H1 does not), 2 certified (layer 0).
    assert evidence.startswith("heads certified / heads sinking per seed: seed 0 4/4, seed 1 2/3;")
    assert "per layer, certified / sinking over the seeds: layer 0 4/4, layer 1 2/3;" in evidence
    assert "CPU seconds per stack: 1.5, 2.5;" in evidence
    # seed 1's L1H0 (measured 0.95 here by fiat) puts 0.397 on BOS at query 4 of an input found by the
    # search and replayed exactly: refuted, and the claim with it; L1H1 does not sink, so is not searched.
    assert claim["verdict"] == "refuted"
    assert "1 refuted, 0 unknown" in evidence and "refuted by: seed 1 L1H0 a_i0 <= 0.39" in evidence
    verdicts = {(r[0], r[1]): r[5] for r in rows}
    assert verdicts[("seed 1", "L1H0")].startswith("refuted: a_i0 <= 0.39")
    assert verdicts[("seed 1", "L1H1")].startswith("no sink certified")
    assert verdicts[("seed 0", "L1H1")] == verdicts[("seed 1", "L0H0")] == "sink certified (>= 0.5 on every input)"
