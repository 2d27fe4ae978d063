"""The claims of the ``beyond`` part (``empirical.pipeline.parts.beyond``), each stating what was judged
and what was observed.

A kind's claim lists the predictions that training judged (``beyond.predict``: a check on a run)
and the construction's verdict, each in words, and, where a run is reported but not judged (a
kind that can abstain, trained with BOS available), what that run did: "no sink needed" is a
statement about what the task allows, and training may still park its mass on BOS. Verdicts:
a construction that fails its own check is *failed*; else a training prediction that fails is
*not met*; else *observed* when training judged it, *verified exactly* when only the
construction did (quick mode trains nothing for that kind).
"""

from __future__ import annotations

from constructions import attention
from constructions.numbers import format_up

TEST = "tests/test_beyond_training.py"


def up(x: float) -> str:
    """A certified maximum (error, BOS mass) at 2 digits, rounded up: it stays an upper bound."""
    return format_up(x, 2)


def kind_claim(kind: str, judged: list[tuple[str, tuple[int, int], bool, str]], ref: dict | None, nob: dict | None,
               multi: dict | None, construction: dict | None) -> dict:
    """``judged``: (variant, shape, held, the prediction as a claim: ``beyond.judged_phrase``) of
    every training prediction that a run decided."""
    statements = [phrase + ("" if ok else " (not met)") for _, _, ok, phrase in judged]
    if construction is not None:
        statements.append("a sink-free head verifies exactly" if construction["verified"]
                          else "its sink-free construction failed its own check")
    if ref is not None and not any(v == "reference" and s == (1, 1) for v, s, _, _ in judged):
        statements.append(f"with BOS available, trained heads put {ref['sink_mean']:.3g} on BOS (mean over "
                          f"{ref['seeds']} seeds; reported, not judged)")
    evidence = []
    if ref is not None:
        evidence.append(f"with BOS: BOS mass mean {ref['sink_mean']:.4f}, min {ref['sink_min']:.4f} over "
                        f"{ref['seeds']} seeds, row mass {ref['row_mass_mean']:.3g}, error {ref['error_max']:.2g}, "
                        f"{ref['converged']}/{ref['seeds']} reach the stop rule")
    if nob is not None:
        evidence.append(f"no BOS: {nob['converged']}/{nob['seeds']} seeds reach the stop rule, error median "
                        f"{nob['error_median']:.2g}, position-0 mass {nob['sink_mean']:.3g}")
    if multi is not None:
        evidence.append(f"2x2: largest-head BOS mass min {multi['sink_min']:.4f} over {multi['seeds']} seeds")
    if construction is not None:
        p = construction["curve"][-1]
        evidence.append(f"construction error <= {up(p['max_error'])} with BOS mass <= {up(p['max_bos_mass'])} "
                        f"at gap {p['gap']:g}")
    if construction is not None and not construction["verified"]:
        verdict = "failed"
    elif not all(ok for _, _, ok, _ in judged):
        verdict = "not met"
    else:
        verdict = "observed" if judged else "verified exactly"
    return {"id": f"beyond_kind_{kind}", "claim": f"{kind} (predicted: {attention.get(kind).prediction}): "
                                                  + "; ".join(statements),
            "verdict": verdict, "evidence": "; ".join(evidence), "test": TEST,
            "command": "sinks beyond --kinds " + kind, "figures": []}


def variant_claim(kind: str, variant: str, shape: tuple[int, int], text: str, held: bool, s: dict) -> dict:
    return {"id": f"beyond_variant_{variant}_{kind}_{shape[0]}x{shape[1]}",
            "claim": f"{kind} on variant {variant}: {text}", "verdict": "observed" if held else "not met",
            "evidence": f"BOS (position-0) mass mean {s['sink_mean']:.4f}, min {s['sink_min']:.4f} over "
                        f"{s['seeds']} seeds; error median {s['error_median']:.2g}, max {s['error_max']:.2g}; "
                        f"{s['converged']}/{s['seeds']} reach the stop rule",
            "test": TEST, "command": f"sinks beyond --kinds {kind} --variants {variant}", "figures": []}


def construction_claim(name: str, c: dict, figure: str | None) -> dict:
    p = c["curve"][-1]
    return {
        "id": f"beyond_construction_{name}",
        "claim": f"a {name} head solves the single-layer task with no sink ({c['summary']})",
        "verdict": "verified exactly" if c["verified"] else "failed",
        "evidence": (f"sympy: all {c['weights_checked']} distinct weights tend to their targets as gap -> oo "
                     f"(L={c['limit_L']}, every trigger position); Arb balls over all inputs of length 16: "
                     + ", ".join(f"gap {q['gap']:g}: error <= {up(q['max_error'])}, BOS <= {up(q['max_bos_mass'])}"
                                 for q in c["curve"][::max(1, len(c["curve"]) // 3)])
                     + f"; at gap {p['gap']:g}: error <= {up(p['max_error'])}"),
        "test": "tests/test_abstaining_heads.py", "command": "sinks reproduce --only beyond",
        "figures": [figure] if figure else [],
    }
