"""A bound at one trigger position over EVERY trigger content, each key's weight tied to its own
content: ``dual``'s fixed-query bound at the points of a grid of
trigger contents (``points``), and ``grid``'s curvature argument between them.

Any lambda and any mu give a valid bound at a trigger content q, so bounds are computed at the
points of a grid (``points.Row``). Each point's bound rises in precision while it is above
the ``target`` (the caller's estimate of the worst case):

1. screened with lambda per cell and mu per (cell end, cell, slice) fitted at the start content
   (the witness search's best trigger content at j; 8 equal cells), at every point at once
   (``Row.screen``);
2. screened with the start's cells after 24 halvings of its worst, lambda searched per (cell,
   point) and mu moved with it; while many points stay above the target, fitted again at the
   largest of them;
3. its own bound (``Row.own_bounds``), 24 halvings;
4. the same with 48.

With one content key (j = 2) ``Row.single_key`` bounds every point at once. Between the points the
error's curvature in q is small (``grid.curvature``): the bound over the whole box is the
multilinear interpolation of the point bounds plus a remainder at the midpoints
(``grid.bound_over``); while that is above the target the points it averages there are
refined further, and where every point is below the target but the bound is not, the coordinate
the remainder comes from is cut finer (``Row.halve``). If the remainders still decide, every point
is screened again fitted at the box's centre and keeps the smaller of its bounds (``row_bound``).
A row is refined only down to the larger of the target and the largest row figure at its position,
a position only down to the largest position figure so far (``position_bound``, ``trigger_parts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import error
from ...arithmetic import heads
from . import dual as td, grid
from .points import MAX_POINTS, Position, Row

SCREEN_STEPS = 10  # golden-section steps for a screened point's lambda per cell
TARGET_SLACK = 0.02  # points are refined while above (1 + this) x the fixed-query bound at the best witness
GOAL_MARGIN = 1e-6  # ... or the goal eta_lo x target ratio less this share, room for eta_up's rounding up


def row_bound(P: Position, r: int, s: int, start, target: float, scale: float | None = None) -> dict[str, Any]:
    """Certified bound on s E_r at trigger position P.j over every input (every trigger content):
    ``fitted_bound`` with the screening multipliers fitted at ``start`` and, where that figure is
    above the target while every point is below it (the midpoint remainders decide), fitted again
    at the box's centre with each point keeping the smaller of its bounds (each is a bound).
    Multipliers fitted at the witness search's content screen its neighbourhood tightly and the far
    vertices loosely: many points then sit just below the target and the remainders between them
    add up; fitted at the centre, every vertex is as near (reference seed 3 of the published run:
    1.138 -> 1.087, when the centre's fit rebuilt the row). Where that still leaves the figure above
    the target with every point below it, the row is built again fitted at the centre (its own grid
    and halvings) and the smaller figure stands: on reference seed 3 only the rebuilt row meets 1.1
    (1.126 without it)."""
    out = fitted_bound(P, r, s, start, target, scale, centre=True)
    if out["bound"] > target >= out["largest_point"] and np.any(np.asarray(start) != 0):
        again = fitted_bound(P, r, s, np.zeros(P.n), target, scale)
        if again["bound"] < out["bound"]:
            out = {**again, "fitted_at": "centre, rebuilt"}
    return out


def fitted_bound(P: Position, r: int, s: int, start, target: float, scale: float | None = None,
                 centre: bool = False) -> dict[str, Any]:
    """Certified bound on s E_r at trigger position P.j over every input (every trigger content).

    Every grid point gets a bound in rising precision while it is above ``target``: screened with
    multipliers fitted at the start content (8 equal cells of X); screened with the start's
    multipliers after ``REF_SPLITS`` halvings, lambda searched per point and cell (fitted again at
    the largest point while many stay above the target); its own bound after ``REF_SPLITS``
    halvings; after ``POINT_SPLITS``. Then, while ``grid``'s bound is above the target, the
    points that its entries above the target average go one stage further (computed in full,
    whatever the target); and where every point is below the target but the bound is not, the
    coordinate whose midpoint term its largest entry carries most is cut finer (``Row.halve``; the
    new points start again). With ``centre``, where that leaves the figure above the target and
    every point below it, every point is screened again with multipliers fitted at the point
    nearest the box's centre, keeps the smaller bound, and the same steps run again (new points
    then start from the centre's multipliers)."""
    if scale is None:  # the size of the row's error, for the grid's pieces: the target, else the box relaxation
        scale = target if target > 0 else error.trigger_bound_rows(P.h, P.j, -np.ones(P.n), np.ones(P.n), P.ranges)[(r, s)]
    row = Row(P, r, s, scale)
    kappa = row.kappa
    computed = [0, 0, 0, 0]
    nearest = lambda q: int(np.argmin(np.abs(row.pts - np.asarray(q)).sum(axis=1)))  # the grid point nearest q
    if P.m > 1:
        p0 = nearest(start)
        coarse, _ = row.fit(p0, 0)
        fitted, own0 = row.fit(p0, REF_SPLITS)

    def first(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bounds and stages of new points: with one content key their exact bound, else screened."""
        computed[0] += len(idx)
        if P.m == 1:
            return row.single_key(idx), np.full(len(idx), 3)
        return row.screen(idx, coarse), np.zeros(len(idx), dtype=int)

    def advance(idx: np.ndarray, stop: float) -> None:
        """Each point of ``idx`` one stage further."""
        for st in range(len(computed) - 1, 0, -1):  # the later stages first: a point moves one stage
            todo = idx[stage[idx] == st - 1]
            if len(todo):
                if st == 1:
                    new = row.screen(todo, fitted, SCREEN_STEPS)
                else:
                    new = row.own_bounds(todo, REF_SPLITS if st == 2 else POINT_SPLITS, stop)[0]
                bound[todo], stage[todo] = np.minimum(bound[todo], new), st
                computed[st] += len(todo)

    def settle() -> tuple[float, tuple | None]:
        advance(np.flatnonzero(bound > target), target)
        for _ in range(MAX_REFITS):  # while many points stay above the target, fit again at the largest
            above = np.flatnonzero((bound > target) & (stage == 1))
            if len(above) <= FEW:
                break
            p = int(above[np.argmax(bound[above])])
            refit, own = row.fit(p, REF_SPLITS)
            bound[p] = min(bound[p], own)
            bound[above] = np.minimum(bound[above], row.screen(above, refit, SCREEN_STEPS))
            computed[1] += len(above)
        for st in (2, 3):
            advance(np.flatnonzero((bound > target) & (stage == st - 1)), target)
        for _ in range(GRID_ROUNDS):
            figure, hot, where = grid.bound_over(bound.reshape(row.shape), row.widths, kappa, target)
            hot = hot[stage[hot] < len(computed) - 1]
            if figure <= target or not len(hot):
                return figure, where
            advance(hot[np.argsort(-bound[hot])[:HOT_POINTS]], -np.inf)
        return grid.bound_over(bound.reshape(row.shape), row.widths, kappa, target)[::2]

    def settle_and_halve() -> tuple[float, tuple | None]:
        """``settle``, then cut a coordinate finer while only the midpoint remainders are above the target."""
        nonlocal bound, stage
        figure, where = settle()
        excess = np.inf
        for _ in range(MAX_HALVINGS):
            mids = [a for a, g in enumerate(where or ()) if g % 2]  # the coordinates where the largest entry is a midpoint
            if figure <= target or bound.max() > target or not mids:  # finer pieces help where only the remainder is above
                break
            if figure - target > (1 - HALVING_GAIN) * excess:  # the last halving took less than HALVING_GAIN of the excess
                break
            excess = figure - target
            axis = max(mids, key=lambda a: kappa[a] * row.widths[a] ** 2)
            if len(row.pts) * (2 * row.shape[axis] - 1) / row.shape[axis] > MAX_POINTS:
                break
            old, kept = row.halve(axis), (bound, stage)
            fresh = np.setdiff1d(np.arange(len(row.pts)), old)
            bound, stage = np.empty(len(row.pts)), np.empty(len(row.pts), dtype=int)
            bound[old], stage[old] = kept
            bound[fresh], stage[fresh] = first(fresh)
            figure, where = settle()
        return figure, where

    def record(figure: float, fitted_at: str) -> dict[str, Any]:
        top = int(bound.argmax())
        return {"bound": figure, "coordinate": r, "sign": s, "largest_point": float(bound[top]),
                "worst_point": [float(v) for v in row.pts[top]], "points": len(row.pts), "computed": list(computed),
                "remainder": figure - float(bound.max()), "fitted_at": fitted_at}

    bound, stage = first(np.arange(len(row.pts)))
    if P.m > 1:
        bound[p0] = min(bound[p0], own0)
    out = record(settle_and_halve()[0], "start")
    if centre and P.m > 1 and out["bound"] > target >= bound.max() and nearest(np.zeros(P.n)) != p0:
        p0 = nearest(np.zeros(P.n))  # the remainders decide: the centre's multipliers, every point keeping its smaller bound
        coarse, _ = row.fit(p0, 0)
        fitted, own0 = row.fit(p0, REF_SPLITS)
        every = np.arange(len(row.pts))
        computed[0] += len(every)
        bound = np.minimum(bound, row.screen(every, coarse))
        bound[p0] = min(bound[p0], own0)
        again = record(settle_and_halve()[0], "start and centre")
        out = again if again["bound"] < out["bound"] else {**out, "computed": again["computed"]}  # the smaller figure
    return out


REF_SPLITS = 24  # halvings of the worst cell in a fitted point's own bound
POINT_SPLITS = 48  # halvings in a point's last bound
MAX_REFITS = 16  # fits at other points while more than FEW points stay above the target after screening
FEW = 8
GRID_ROUNDS = 4  # rounds of refining the points that carry the grid bound's entries above the target
MAX_HALVINGS = 6  # coordinates cut finer where the grid bound's largest entry is a midpoint,
HALVING_GAIN = 0.1  # ... while each cut takes at least this share of the excess over the target
HOT_POINTS = 2048  # points refined per grid round (the largest of those its entries above the target average)


def position_bound(h: heads.Head, j: int, start, target: float, ranges: dict | None = None) -> dict[str, Any]:
    """Certified bound on the max-abs error at trigger position j over EVERY input: rows in order
    of their box relaxation (``error.trigger_bound_rows`` over the whole box), each taking the
    smaller of that and ``row_bound``, while the box bound exceeds ``target`` and the largest figure."""
    P = Position(h, j, ranges)
    box = error.trigger_bound_rows(h, j, -np.ones(h.n), np.ones(h.n), P.ranges)  # per (coordinate, sign)
    best, out = -np.inf, []
    for r, s in sorted(box, key=lambda k: -box[k]):
        if box[(r, s)] <= max(best, target):
            best = max(best, box[(r, s)])
            break
        # the position's figure is the largest row's: refining a row below the largest figure so far
        # gains nothing (any target gives a valid bound); the grid's pieces keep the caller's target's scale
        row = row_bound(P, r, s, start, max(target, best), target if target > 0 else box[(r, s)])
        row["box"] = box[(r, s)]
        out.append(row)
        best = max(best, min(row["bound"], box[(r, s)]))
    top = max(out, key=lambda t: min(t["bound"], t["box"])) if out else None
    return {"bound": best, "trigger": j, "rows": out, "rows_bounded": len(out), "worst_row": top,
            "slices": P.slices, "score_range": P.U}


def trigger_parts(h: heads.Head, L: int, parts: dict[str, float], found=None, ranges: dict | None = None,
                  goal: float | None = None) -> dict[str, Any]:
    """The vertex bound of every trigger position whose part of eta_up (``parts``: ``error.eta_upper``'s
    ``by_part``) is above the target: the largest of the other parts, the fixed-query bound at the
    witness search's best trigger input times 1 + TARGET_SLACK, and ``goal`` (eta_lo times the
    caller's target ratio), whichever is largest (each position's points are refined while above
    it; the figures are what they are). Positions go in order of their box part, and each is
    refined only down to the larger of the target and the largest position figure so far (eta_up
    is the largest part: below that nothing is gained). ``found``: the witness search's result, if
    run already. Returns the target, the goal, the fixed-query figure and per position j
    ``position_bound``'s record."""
    starts = trigger_starts(h, L, found)
    floor = max((v for k, v in parts.items() if not k.startswith("trigger ")), default=0.0)
    best_j = max(starts, key=lambda j: starts[j][1]) if starts else None
    anchor = td.fixed_query_bound(h, best_j, starts[best_j][0])["bound"] if best_j is not None else 0.0
    target = max(floor, anchor * (1 + TARGET_SLACK), goal * (1 - GOAL_MARGIN) if goal is not None else -np.inf)
    default = starts[best_j][0] if best_j is not None else np.zeros(h.n)
    ranges = ranges or error.whole_box_ranges(h)
    positions = sorted((int(k.split()[1]) for k in parts if k.startswith("trigger ")), key=lambda j: -parts[f"trigger {j}"])
    out, reached = {}, -np.inf
    for j in positions:
        if parts[f"trigger {j}"] > max(target, reached):
            out[j] = position_bound(h, j, starts.get(j, (default, 0.0))[0], max(target, reached), ranges)
            reached = max(reached, min(out[j]["bound"], parts[f"trigger {j}"]))
    return {"target": target, "goal": goal, "anchor": anchor, "anchor_trigger": best_j, "positions": out}


def tightened_eta(by_part: dict[str, float], vertex: dict[int, float]) -> dict[str, Any]:
    """eta_up with each trigger position's part replaced by the smaller of it and its vertex bound
    (``vertex``: {j: position_bound's figure}); ``by_part`` is ``error.eta_upper``'s."""
    parts = dict(by_part)
    for j, b in vertex.items():
        parts[f"trigger {j}"] = min(parts[f"trigger {j}"], b)
    where = max(parts, key=parts.get)
    return {"eta_up": parts[where], "attained_by": where, "by_part": parts}


def trigger_starts(h: heads.Head, L: int, found=None) -> dict[int, tuple[np.ndarray, float]]:
    """Per trigger position, the trigger content of the best typed input the witness search finds
    there and its (float) error: the start of the screening multipliers; ``found``: the search's
    result, if run already."""
    from .. import witness

    starts: dict[int, tuple[np.ndarray, float]] = {}
    for t in found if found is not None else witness.search(h, L, kicks=witness.KICKS):
        if t.case == "trigger" and (t.i not in starts or t.error > starts[t.i][1]):
            starts[t.i] = (t.c, t.error)
    return starts
