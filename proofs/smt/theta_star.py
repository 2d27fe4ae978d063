"""theta*(instance): the largest threshold theta for which "BOS mass >= theta at every covered
non-trigger query" is still proved, found by bisection on g = (1 - theta) / eps.

Each bisection step is a full ``search_counterexample``. ``lo`` only moves on ``proof``; ``hi``
moves on anything else, and ``hi_confirmed`` says whether the upper end is a replayed
counterexample (then theta* lies in [theta(hi), theta(lo)] for certain) or only an unknown /
candidate (then the bracket is "no proof above", not "false above").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

from .hardkill import RLIMIT, SAFETY_S
from .instance import Instance
from .search import search_counterexample


@dataclass
class ThetaStar:
    eps: str
    length: int
    k: int
    theta_proved: str  # theta(lo): proved
    theta_refuted: str  # theta(hi): not proved (see hi_confirmed)
    g_lo: float  # (1 - theta_proved) / eps
    g_hi: float
    hi_confirmed: bool
    seconds: float
    iterations: list[dict] = field(default_factory=list)
    rlimit: int | None = None  # z3's work limit per query
    work_max: int = 0  # the most z3 work units a decided query (sat / unsat) of the bisection needed
    at_limit: int = 0  # queries the work limit stopped (unknown), over all steps
    queries: int = 0  # z3 queries over all steps
    safety_net: int = 0  # bisection steps where the wall clock stopped a query (each then not proved)


def theta_star(inst: Instance, method: str = "chain", timeout_s: float = SAFETY_S, g_max: Fraction | None = None,
               iterations: int = 7, rlimit: int | None = RLIMIT) -> ThetaStar:
    """Bisection on g in [0, g_max] (theta = 1 - g eps; g_max defaults to 8, or theta = 1/2
    when that is lower; if g_max is not proved, theta = 1/2 is tried before giving up).

    The proved set of g is upward closed (a smaller theta is easier). g = 0 (theta = 1) is never
    provable for eps > 0: softmax weights are positive, so BOS mass < 1 always. ``rlimit``: z3's
    work limit per query (``search_counterexample``; default ``hardkill.RLIMIT``), which makes the
    bisection machine-independent, ``timeout_s`` then only the safety net (None: the seconds decide).
    Each logged step records the most work one of its queries used and whether the clock fired."""
    start = time.perf_counter()
    eps = inst.eps
    half = Fraction(1, 2) / eps
    g_top = min(Fraction(8), half) if g_max is None else Fraction(g_max)
    log = []

    def attempt(g: Fraction) -> str:
        r = search_counterexample(inst, 1 - g * eps, method, timeout_s, rlimit=rlimit)
        work = r.work()
        log.append({"g": str(g), "theta": str(1 - g * eps), "status": r.status, "seconds": round(r.seconds, 3),
                    "queries": len(r.steps), "work_max": work["max_units"], "work_at": work["at"],
                    "at_limit": work["at_limit"], "safety_net": r.safety_net})
        return r.status

    def finish(*fields) -> ThetaStar:
        done = ThetaStar(*fields, time.perf_counter() - start, log, rlimit)
        done.work_max = max((e["work_max"] or 0 for e in log), default=0)
        done.queries = sum(e["queries"] for e in log)
        done.at_limit = sum(e["at_limit"] for e in log)
        done.safety_net = sum(bool(e["safety_net"]) for e in log)
        return done

    top = attempt(g_top)
    if top != "proof" and g_max is None and g_top < half:
        g_top = half
        top = attempt(g_top)
    if top != "proof":
        return finish(str(eps), inst.length, inst.k, "none", str(1 - g_top * eps), float("nan"), float(g_top),
                      top == "counterexample")
    proved, not_proved, confirmed = g_top, Fraction(0), False
    for _ in range(iterations):
        mid = (proved + not_proved) / 2
        status = attempt(mid)
        if status == "proof":
            proved = mid
        else:
            not_proved, confirmed = mid, status == "counterexample"
    return finish(str(eps), inst.length, inst.k, str(1 - proved * eps), str(1 - not_proved * eps),
                  float(proved), float(not_proved), confirmed)
