"""Two-head softmax layers on finite instances: where no head has to sink.

``cancelling_heads``: positive control for T2 (refuted): a two-head softmax layer in which NO
head sinks at a non-trigger query, because the heads cancel.

The family searched (a restriction, so a SAT answer is a real layer, then replayed):
head 2 copies head 1's content-query rows and carries the negated values, so at every content
query the two outputs cancel exactly whatever the pattern; values of head 1 are the ideal images
(u_b = x_b, u_BOS = 0); head 2's trigger row puts a fixed small weight ``e`` on every non-BOS
key (so it is almost all on BOS). z3 then finds head 1's trigger row and the shared content rows
with every content-query BOS mass <= ``cap`` -- all constraints are linear in those weights.
"""

from __future__ import annotations

import time
from fractions import Fraction

from .classes import TRIG, class_target, covered, enumerate_classes
from .encode import e_name, kept_coords, output_facts, positive
from .hardkill import Z3Runner, clock_fired
from .instance import BOS, Instance
from .replay import HeadParams, LayerModel, replay
from .smt2 import Script, add, le, mul, num, scale, sub


def cancelling_heads(inst: Instance, cap: Fraction = Fraction(1, 2), timeout_s: float = 10.0,
                     rlimit: int | None = None) -> dict:
    start = time.perf_counter()
    half = inst.eps / 2  # solve with margin, replay at eps
    e = half / (8 * inst.length)
    script = Script()
    coords = kept_coords(inst)
    images = {b: inst.mean_image(b) for b in inst.query_types}
    for cls in enumerate_classes(inst):
        q = cls.query
        keys = [(b, n) for b, n in enumerate(cls.counts, start=1) if n]
        Z = add("1.0", *[scale(n, positive(script, e_name(q, b))) for b, n in keys])
        if cls.phase(inst) != TRIG:
            if covered(inst, cls):  # BOS mass <= cap in both heads (they share this row)
                script.add(le("1.0", scale(cap, Z)))
            continue
        Z2 = 1 + e * cls.size
        y = class_target(inst, cls)
        # head 1 output * Z  +  head 2 output * Z, head 2's output a known constant vector
        head2 = [-sum(n * e * images[b][c] for b, n in keys) / Z2 for c in range(inst.d)]
        outputs = {c: add(*[scale(n * images[b][c], e_name(q, b)) for b, n in keys if images[b][c]], scale(head2[c], Z))
                   for c in coords}
        script.add(*output_facts(y, half, Z, outputs))
    with Z3Runner(rlimit=rlimit) as runner:
        ans = runner.check(script.text(), timeout_s)
    out = {"status": "unknown", "answer": ans.result, "seconds": None, "reason": ans.reason, "replay": [],
           "work": ans.work, "rlimit": rlimit, "safety_net": bool(rlimit) and clock_fired(ans, rlimit)}
    if ans.result == "sat":
        import mpmath

        with mpmath.workdps(50):
            to = lambda v: mpmath.mpf(v.numerator) / v.denominator if isinstance(v, Fraction) else mpmath.mpf(v)
            s1 = {(q, b): mpmath.log(to(ans.model.get(e_name(q, b), Fraction(1))))
                  for q in inst.query_types for b in inst.types if b != BOS}
            s2 = dict(s1)
            for b in inst.query_types:
                s2[(inst.trigger, b)] = mpmath.log(to(e))
        v1 = {b: list(images.get(b, [Fraction(0)] * inst.d)) for b in inst.types}
        v2 = {b: [-x for x in row] for b, row in v1.items()}
        model = LayerModel("softmax", [HeadParams(s1, v1), HeadParams(s2, v2)], exact=False)
        reps = [replay(inst, model, head=h) for h in (0, 1)]
        ok = all(r.ok for r in reps) and all(float(r.max_bos_covered) <= float(cap) for r in reps)
        out.update(status="solution" if ok else "candidate", replay=reps, model=model)
    elif ans.result == "unsat":
        out["status"] = "none in this family"
    out["seconds"] = time.perf_counter() - start
    return out


def two_heads_capped(inst: Instance, cap: Fraction, timeout_s: float = 60.0, rlimit: int | None = None) -> dict:
    """Question (a'): is there a two-head softmax layer with error <= eps on every class of the
    instance whose heads put at most ``cap`` on BOS at EVERY query i >= 1 (trigger included)?

    Unrestricted encoding: per head, per query type and key type a positive weight (BOS's fixed to
    1 by the shift), per head and token type a free value image; the BOS query's output (the sum
    of the heads' BOS images) within eps of 0. With two normalisers the error bounds become
    |N_1 Z_2 + N_2 Z_1 - y Z_1 Z_2| <= eps Z_1 Z_2: non-linear real arithmetic (QF_NRA).
    Returns {"answer": sat/unsat/unknown, "reason", "seconds"}; a sat model is NOT replayed here
    (none has been found). ``rlimit``: z3's work limit (the seconds then only a safety net)."""
    start = time.perf_counter()
    script = Script()
    coords = range(inst.d)
    w = {(h, q, b): "1.0" if b == BOS else positive(script, f"W{h}_{q}_{b}")
         for h in (0, 1) for q in inst.query_types for b in inst.types}
    U = {(h, b, c): script.real(f"V{h}_{b}_{c}") for h in (0, 1) for b in inst.types for c in coords}
    for c in coords:
        script.add(le(add(U[0, BOS, c], U[1, BOS, c]), num(inst.eps)),
                   le(num(-inst.eps), add(U[0, BOS, c], U[1, BOS, c])))
    for cls in enumerate_classes(inst):
        q = cls.query
        keys = [(BOS, 1)] + [(b, n) for b, n in enumerate(cls.counts, start=1) if n]
        Z = [add(*[scale(n, w[h, q, b]) for b, n in keys]) for h in (0, 1)]
        script.add(*[le(w[h, q, BOS], scale(cap, Z[h])) for h in (0, 1)])
        y, ZZ = class_target(inst, cls), mul(Z[0], Z[1])
        for c in coords:
            N = [add(*[scale(n, mul(w[h, q, b], U[h, b, c])) for b, n in keys]) for h in (0, 1)]
            gap = sub(add(mul(N[0], Z[1]), mul(N[1], Z[0])), scale(y[c], ZZ))
            script.add(le(gap, scale(inst.eps, ZZ)), le(scale(-inst.eps, ZZ), gap))
    with Z3Runner(rlimit=rlimit) as runner:
        ans = runner.check(script.text(), timeout_s)
    return {"answer": ans.result, "reason": ans.reason, "seconds": time.perf_counter() - start,
            "classes": len(enumerate_classes(inst))}
