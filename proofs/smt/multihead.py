"""Positive control for T2: a two-head softmax layer in which NO head sinks, because the heads
cancel. This is why a multi-head statement can only be existential ("some head sinks").

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
from .hardkill import Z3Runner
from .instance import BOS, Instance
from .replay import HeadParams, LayerModel, replay
from .smt2 import Script, add, le, num, scale


def cancelling_heads(inst: Instance, cap: Fraction = Fraction(1, 2), timeout_s: float = 10.0) -> dict:
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
    with Z3Runner() as runner:
        ans = runner.check(script.text(), timeout_s)
    out = {"status": "unknown", "answer": ans.result, "seconds": None, "reason": ans.reason, "replay": []}
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
