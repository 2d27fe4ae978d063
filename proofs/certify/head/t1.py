"""T1 end to end: the project's T1 applied to a head with its certified eta_up.

T1 (``proofs.statements.t1_single_layer_sink``): a single softmax head with worst-case max-abs error eta has
(a) a_i0 >= 1 - f_pre(eta) before the trigger (L >= 4, eta <= 1/12) and (b) a_i0 >= 1 - f_all(eta)
at every non-trigger query (L >= 5, eta <= 1/120). f is increasing, so eta <= eta_up gives
a_i0 >= 1 - f(eta_up): a lower bound on the BOS mass from the error alone. Per query it is set
beside the certified minimum of ``sink``:

- ``consistent``: certified minimum >= T1's bound;
- ``refutes T1``: the replayed witness (an actual input) has a_i0 below T1's bound, while the
  head's worst-case error is certified <= eta_up: T1 would be false;
- ``inconclusive``: neither (the certified minimum's gap straddles T1's bound);
- ``T1 does not apply``: eta_up is above the part's range (the numbers are still reported).

All arithmetic is exact (sympy rationals at eta_up rounded up to a Fraction).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import sympy

from constructions.numbers import fraction_down

from ...statements import t1_single_layer_sink as t1

PRE_MAX = Fraction(1, 12)
ALL_MAX = Fraction(1, 120)


def bounds(eta_up: float, L: int) -> dict[str, Any]:
    """T1's two bounds at eta_up (None where T1 does not apply), exact, as floats rounded down."""
    eta = Fraction(eta_up)
    out: dict[str, Any] = {"eta_up": eta_up, "pre_applies": L >= 4 and eta <= PRE_MAX,
                           "all_applies": L >= 5 and eta <= ALL_MAX}
    x = sympy.Rational(eta.numerator, eta.denominator)
    out["pre_bound"] = _one_minus(t1.f_pre(x)) if out["pre_applies"] else None
    out["all_bound"] = _one_minus(t1.f_all(x)) if out["all_applies"] else None
    out["pre_range"], out["all_range"] = float(PRE_MAX), float(ALL_MAX)
    return out


def _one_minus(f) -> float:
    """1 - f (a sympy rational) as a float rounded down (the bound stays a valid lower bound)."""
    value = sympy.Rational(1 - f)
    return fraction_down(Fraction(int(value.p), int(value.q)))


def query_bound(t1_bounds: dict, case: str) -> float | None:
    """T1's bound at a query: (a) before the trigger, (b) before or after; the larger that applies."""
    options = [t1_bounds["all_bound"]] + ([t1_bounds["pre_bound"]] if case == "before" else [])
    options = [b for b in options if b is not None]
    return max(options) if options else None


def verdict(certified: float, witness_high: float, bound: float | None) -> str:
    if bound is None:
        return "T1 does not apply"
    if certified >= bound:
        return "consistent"
    if witness_high < bound:
        return "refutes T1"
    return "inconclusive"


def table(sink_rows: list[dict], eta_up: float, L: int) -> dict[str, Any]:
    """Per non-trigger (position, case): certified minimum, T1's bound and the verdict."""
    b = bounds(eta_up, L)
    rows = []
    for r in sink_rows:
        if r["case"] == "trigger":
            continue
        bound = query_bound(b, r["case"])
        rows.append({"position": r["position"], "case": r["case"], "certified_min": r["certified"],
                     "t1_bound": bound, "verdict": verdict(r["certified"], r["witness_high"], bound)})
    verdicts = {row["verdict"] for row in rows}
    overall = ("refutes T1" if "refutes T1" in verdicts else "inconclusive" if "inconclusive" in verdicts
               else "consistent" if verdicts == {"consistent"} else
               "consistent where T1 applies" if "consistent" in verdicts else "T1 does not apply")
    return {"bounds": b, "rows": rows, "overall": overall}
