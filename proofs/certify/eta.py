"""eta, a single head's worst-case max-abs error over every input, bracketed: eta_lo <= eta <= eta_up.

``bracket`` runs the witness search once (``witness.search``) and uses it twice: its best typed
inputs, replayed exactly, give eta_lo (``witness.eta_lower``); its best trigger content per
trigger position starts the vertex bound. eta_up is ``error.eta_upper`` (exact at the BOS and
non-trigger queries, the box relaxation at the trigger), with every trigger position whose box
part lies above the target tightened by ``trigger_vertices`` (softmax heads with d - 3 <= its
MAX_N: the bound over every trigger content, each key's weight tied to its content).
"""

from __future__ import annotations

from typing import Any

from constructions import reference

from . import error, heads, trigger_points, trigger_vertices, witness


def vertex_applies(h: heads.Head) -> bool:
    return h.kind == "softmax" and h.n <= trigger_points.MAX_N


def bracket(net: reference.Network, h: heads.Head, L: int, sink_rows: list[dict], vertex: bool = True) -> dict[str, Any]:
    """eta_up (``error.eta_upper``, tightened at the trigger by the vertex bound where it applies and
    ``vertex``), eta_lo (``witness.eta_lower``) and their ratio, with where each is attained."""
    found = witness.search(h, L, kicks=witness.KICKS)
    up = error.eta_upper(h, L, sink_rows)
    if vertex and vertex_applies(h):
        up = tightened(up, trigger_vertices.trigger_parts(h, L, up["by_part"], found))
    lo = witness.eta_lower(net, h, L, found=found)
    return {**up, **lo, "ratio": up["eta_up"] / lo["eta_lo"] if lo["eta_lo"] > 0 else None}


def tightened(up: dict[str, Any], vertex: dict[str, Any]) -> dict[str, Any]:
    """``error.eta_upper``'s record with each trigger position's part the smaller of its box part and
    its vertex bound (``trigger_vertices.trigger_parts``), and what the vertex bound did."""
    parts = dict(up["by_part"])
    box = {j: parts[f"trigger {j}"] for j in vertex["positions"]}
    for j, res in vertex["positions"].items():
        parts[f"trigger {j}"] = min(parts[f"trigger {j}"], res["bound"])
    where = max(parts, key=parts.get)
    summary = {"target": vertex["target"], "anchor": vertex["anchor"], "anchor_trigger": vertex["anchor_trigger"],
               "positions": {str(j): {"box": box[j], "bound": res["bound"], "rows_bounded": res["rows_bounded"],
                                      "worst_row": _row_summary(res["worst_row"])}
                             for j, res in vertex["positions"].items()}}
    return {**up, "eta_up": error.certified_eta(parts[where]), "attained_by": where, "by_part": parts,
            "eta_up_box": up["eta_up"], "vertex": summary}


def _row_summary(row: dict | None) -> dict | None:
    if row is None:
        return None
    return {k: row[k] for k in ("coordinate", "sign", "bound", "largest_point", "worst_point", "points", "computed")}
