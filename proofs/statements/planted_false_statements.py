"""Planted false statements: the checkers must report them refuted (or unknown), never proved.

Each control runs a real statement's checker on a wrong claim:

- ``planted_convex_hull_no_denominator``: a_0 >= delta - ||o|| (the convex-hull bound with its
  denominator dropped) -> ``sink_bound_convex_hull.check(bound)``;
- ``planted_softmax_rows_below_one``: softmax rows sum to 1 - 1/(n + 2) < 1
  -> ``softmax_rows_on_simplex.check(claimed_total)``;
- ``planted_direction_bound_ignores_bos_value``: a_0 >= 1 - eps/m even when the BOS value has
  u . v_0 = -beta < 0 -> ``sink_bound_direction.check(bound)``.
"""

from __future__ import annotations

import dataclasses

from . import sink_bound_convex_hull, sink_bound_direction, softmax_rows_on_simplex
from .verdict import Verdict


def _renamed(verdict: Verdict, name: str) -> Verdict:
    return dataclasses.replace(verdict, name=name, planted=True)


def convex_hull_no_denominator() -> Verdict:
    return _renamed(sink_bound_convex_hull.check("delta - O"), "planted_convex_hull_no_denominator")


def softmax_rows_below_one() -> Verdict:
    return _renamed(softmax_rows_on_simplex.check("1 - 1/(n + 2)"), "planted_softmax_rows_below_one")


def direction_bound_ignores_bos_value() -> Verdict:
    return _renamed(sink_bound_direction.check("1 - epsilon/m"), "planted_direction_bound_ignores_bos_value")


CONTROLS = {
    "planted_convex_hull_no_denominator": convex_hull_no_denominator,
    "planted_softmax_rows_below_one": softmax_rows_below_one,
    "planted_direction_bound_ignores_bos_value": direction_bound_ignores_bos_value,
}
