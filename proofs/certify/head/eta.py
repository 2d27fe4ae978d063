"""eta, a single head's worst-case max-abs error over every input, bracketed: eta_lo <= eta <= eta_up.

``bracket`` runs the witness search once (``witness.search``) and uses it twice: its best typed
inputs, replayed exactly, give eta_lo (``witness.eta_lower``); its best trigger content per
trigger position starts the vertex bound. eta_up is ``error.eta_upper`` (exact at the BOS and
non-trigger queries, the box relaxation at the trigger), with every trigger position whose box
part lies above the target tightened by ``trigger_vertices`` (softmax heads with d - 3 <= its
MAX_N: the bound over every trigger content, each key's weight tied to its content).

``target_ratio`` makes the tightness/cost trade-off the caller's: the vertex bound refines only
until every trigger position is at or below eta_lo x target_ratio (any stopping point is a valid
bound; a looser target stops sooner). The record says whether eta_up / eta_lo met it.
"""

from __future__ import annotations

from typing import Any

from constructions import reference

from . import error, witness
from ..arithmetic import heads
from .trigger import points as trigger_points, vertices as trigger_vertices


TARGET_RATIO = 1.1  # the default eta_up / eta_lo the vertex bound refines to (sinks certify --target-ratio)


def vertex_applies(h: heads.Head) -> bool:
    return h.kind == "softmax" and h.n <= trigger_points.MAX_N


def check_target_ratio(target_ratio: float | None) -> None:
    """eta_up >= eta_lo always, so a target below 1 can never be met: refused (None: no target)."""
    if target_ratio is not None and not target_ratio >= 1:  # also refuses NaN
        raise ValueError(f"the target ratio eta_up / eta_lo must be >= 1, got {target_ratio}")


def bracket(net: reference.Network, h: heads.Head, L: int, sink_rows: list[dict], vertex: bool = True,
            target_ratio: float | None = TARGET_RATIO) -> dict[str, Any]:
    """eta_up (``error.eta_upper``, tightened at the trigger by the vertex bound where it applies and
    ``vertex``), eta_lo (``witness.eta_lower``) and their ratio, with where each is attained;
    ``target_ratio`` (None: refine as far as the witness's own trigger slice allows) and whether
    the ratio met it (``target_met``; None without a target or when eta_lo is 0)."""
    check_target_ratio(target_ratio)
    found = witness.search(h, L, kicks=witness.KICKS)
    lo = witness.eta_lower(net, h, L, found=found)  # first: the vertex bound refines towards eta_lo x target_ratio
    up = error.eta_upper(h, L, sink_rows)
    if vertex and vertex_applies(h):
        goal = lo["eta_lo"] * target_ratio if target_ratio is not None else None
        up = tightened(up, trigger_vertices.trigger_parts(h, L, up["by_part"], found, goal=goal))
    ratio = up["eta_up"] / lo["eta_lo"] if lo["eta_lo"] > 0 else None
    met = None if target_ratio is None or ratio is None else bool(ratio <= target_ratio)
    return {**up, **lo, "ratio": ratio, "target_ratio": target_ratio, "target_met": met}


def tightened(up: dict[str, Any], vertex: dict[str, Any]) -> dict[str, Any]:
    """``error.eta_upper``'s record with each trigger position's part the smaller of its box part and
    its vertex bound (``trigger_vertices.trigger_parts``), and what the vertex bound did."""
    parts = dict(up["by_part"])
    box = {j: parts[f"trigger {j}"] for j in vertex["positions"]}
    for j, res in vertex["positions"].items():
        parts[f"trigger {j}"] = min(parts[f"trigger {j}"], res["bound"])
    where = max(parts, key=parts.get)
    summary = {"target": vertex["target"], "anchor": vertex["anchor"], "anchor_trigger": vertex["anchor_trigger"],
               "goal": vertex.get("goal"),
               "positions": {str(j): {"box": box[j], "bound": res["bound"], "rows_bounded": res["rows_bounded"],
                                      "worst_row": _row_summary(res["worst_row"])}
                             for j, res in vertex["positions"].items()}}
    return {**up, "eta_up": error.certified_eta(parts[where]), "attained_by": where, "by_part": parts,
            "eta_up_box": up["eta_up"], "vertex": summary}


def _row_summary(row: dict | None) -> dict | None:
    if row is None:
        return None
    return {k: row[k] for k in ("coordinate", "sign", "bound", "largest_point", "worst_point", "points", "computed")}
