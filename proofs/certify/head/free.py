"""Sink-free heads over EVERY input: ReLU rows need not sum to one, so the question is the
largest BOS weight (and row mass) any input can produce, not the smallest.

ReLU: a_i0 = ReLU(s_i0) / max(i, 1) with s_i0 = g_0(c) = M[f, 0] + M[C, 0] . c, affine in the
query's content c, so its maximum over the box is M[f, 0] + sum_k |M[C_k, 0]| exactly (Fractions).
A non-trigger row's total mass is at most sum_k ReLU(max s_ik) / max(i, 1), each key's maximum
bounded over the query box by ``branch.exponent_upper`` (the support function for the key).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from constructions import reference, task
from constructions.numbers import fraction_up

from ..arithmetic import branch, heads


def _bos_score_max(h: heads.Head, f: int) -> Fraction:
    M = h.M_exact
    return M[f][task.BOS_FLAG] + sum((abs(M[c][task.BOS_FLAG]) for c in range(task.CONTENT_START, h.d - 1)), Fraction(0))


def certify_relu(net: reference.Network, L: int) -> dict[str, Any]:
    """Largest BOS weight over every input at every query (exact) and the largest non-trigger row
    mass (certified upper bound), for a single ReLU head."""
    h = heads.head_maps(net)
    n = h.n
    content, trig = task.content_flag(h.d), task.TRIGGER_FLAG
    bos_nontrigger = max(Fraction(0), _bos_score_max(h, content))
    bos_trigger = max(Fraction(0), _bos_score_max(h, trig))
    box = (-np.ones((1, n)), np.ones((1, n)))
    key_max = {flag: max(0.0, float(branch.exponent_upper(heads.score_exponent(h, content, flag, +1, False), *box).ub[0]))
               for flag in (content, trig)}
    own = max(0.0, float(branch.exponent_upper(heads.score_exponent(h, content, None, 0, False), *box).ub[0]))
    rows = []
    for i in range(1, L):
        mass = fraction_up((Fraction(fraction_up(bos_nontrigger)) + (i - 1) * Fraction(max(key_max.values()))
                            + Fraction(own)) / max(i, 1))
        rows.append({"position": i, "max_bos_weight": fraction_up(bos_nontrigger / max(i, 1)),
                     "max_bos_weight_at_trigger": fraction_up(bos_trigger / max(i, 1)) if i >= 2 else None,
                     "max_row_mass_nontrigger": mass})
    return {"kind": net.kind, "d": h.d, "L": L, "queries": rows,
            "max_bos_weight": fraction_up(max(bos_nontrigger, bos_trigger)),
            "max_row_mass_nontrigger": max(r["max_row_mass_nontrigger"] for r in rows)}
