"""``sinks certify WEIGHTS --recheck marabou``: Marabou 2.0 (optional extra ``.[marabou]``) asked two
questions per query position of a single-layer head, beside the certificate
(``proofs.certify.head.sink``):

- **below the certificate**: an input with a_i0 <= certified - margin (at the trigger: a_j0 >=
  certified + margin)? The certificate says no: Marabou must answer ``unsat``;
- **below the witness**: an input with a_i0 <= witness + margin (at the trigger: >= witness -
  margin)? The replayed witness says yes: Marabou must find one, and its model counts only once
  replayed exactly (``sink.Replayer``: exact scores, the kind's weights in certified intervals).

margin = ``MARGIN`` x min(a, 1 - a) (``thresholds``). Each question runs on the ``pl``
encoding (``encode``), which Marabou decides completely, in a branch and bound over the query
content's box: a box Marabou calls ``unsat`` is closed; a ``sat`` box's model is replayed and, if
it does not hold exactly, Marabou is probed next with the query content pinned at the model's (the
products exact, only the chords relax) and the threshold tightened by the chords' own gap, and the
box is halved along its widest side (breadth first, the halves' chords refined; a probe closes
nothing); every box closed is ``unsat``,
a replayed model is ``sat``, anything else (a Marabou timeout or error, the box budget spent) is
``unknown``. The first question is also put to the ``native`` encoding (Marabou's own bilinear
and softmax constraints) once over the whole box: ``unsat`` or ``unknown``, never more.

Per question the verdict is ``agree`` / ``unknown`` / ``DISAGREE``; a DISAGREE on the first question
is an input replayed exactly below the certified minimum (the certificate is wrong), on the second
an ``unsat`` where the witness is a replayed counterexample (Marabou or the encoding is wrong).
Every Marabou call runs in a hard-killed worker process (``proofs.smt.hardkill.Worker``) in a
scratch folder (Marabou writes ``failedMarabouQuery.ipq`` into the current one on an error).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from constructions import task
from proofs.smt.hardkill import Answer, Worker

MARGIN = 0.05
TIMEOUT_S = 20  # Marabou's own limit per call (whole seconds); the worker is killed 2 s later
MAX_BOXES = 64  # boxes per question before the answer is unknown
MIN_CHORD = 0.05  # a halved box's chords are 0.7 x its parent's, down to this: the relaxation tightens on both

QUESTIONS = ("below certificate", "below witness")
# the chords' step per question: coarse enough for few ReLU splits where unsat is expected (3 % of
# overshoot inside the 5 % margin), finer where a model must replay
CHORDS = {"below certificate": 0.5, "below witness": 0.3}
EXPECTED = {"below certificate": "unsat", "below witness": "sat"}


def available() -> bool:
    return importlib.util.find_spec("maraboupy") is not None


def _solve(job: dict) -> tuple[str, float, str, dict]:  # pragma: no cover - runs in the child
    import maraboupy.MarabouCore as MC

    from . import encode

    q = encode.build(np.array(job["M"]), job["d"], job["L"], job["i"], job["case"], job["t"], job["encoding"],
                     np.array(job["box"]), chord_width=job.get("chord_width", encode.CHORD_WIDTH),
                     probe=job.get("probe", False))
    options = MC.Options()
    options._timeoutInSeconds, options._verbosity = max(1, int(job["timeout"])), 0
    start = time.perf_counter()
    try:
        result, values, _ = MC.solve(q.ipq, options, os.devnull)
    except Exception as e:  # maraboupy raises on some sat answers (IndexError map::at): no answer
        return "error", time.perf_counter() - start, f"{type(e).__name__}: {e}", {}
    seconds = time.perf_counter() - start
    model = {}
    if result == "sat":
        query, keys = encode.model_contents(q, values)
        model = {"query": [[v.numerator, v.denominator] for v in query],
                 "keys": [[[v.numerator, v.denominator] for v in k] for k in keys], "roles": q.key_roles}
    return result, seconds, "" if result in ("sat", "unsat") else result, model


def _serve(inp, out) -> None:  # pragma: no cover - runs in the child
    os.chdir(tempfile.mkdtemp(prefix="marabou-"))
    if out is sys.stdout:  # Marabou's C++ code prints to file descriptor 1: keep the answers apart
        out = os.fdopen(os.dup(1), "w")
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    for line in inp:
        try:
            result, seconds, reason, model = _solve(json.loads(line))
        except Exception as e:  # an encoding error is an answer of its own, never a pass
            result, seconds, reason, model = "error", 0.0, f"{type(e).__name__}: {e}", {}
        out.write(json.dumps([result if result in ("sat", "unsat") else "unknown", seconds, reason,
                              {"model": json.dumps(model)}]) + "\n")
        out.flush()


class MarabouRunner(Worker):
    module = "proofs.marabou.recheck"

    def __init__(self) -> None:
        super().__init__(grace_s=2.0)

    def ask(self, job: dict) -> tuple[Answer, dict]:
        ans = self._one(job, job["timeout"])
        return ans, json.loads(ans.model.get("model", "{}")) if ans.model else {}


def sequence(L: int, i: int, case: str, query, keys, roles) -> tuple[list[list[Fraction]], int]:
    """The exact input of a model: BOS, the keys at positions 1..i-1 (after the trigger: the
    trigger at 2), the query at i, zero content elsewhere."""
    n = len(query)
    contents = [[Fraction(0)] * n for _ in range(L - 1)]
    if case == "after":
        j = 2
        slots = [1] + list(range(3, i))
        ordered = [k for k, r in zip(keys, roles) if r == "content"]
        contents[1] = list(keys[roles.index("trigger")])
    else:
        j = i + 1 if case == "before" else i
        slots, ordered = list(range(1, i)), list(keys)
    for pos, k in zip(slots, ordered):
        contents[pos - 1] = list(k)
    contents[i - 1] = list(query)
    return task.make_sequence(contents, j), j


@dataclass
class Answered:
    question: str
    threshold: float
    answer: str  # unsat / sat / unknown
    verdict: str  # agree / unknown / DISAGREE
    seconds: float
    boxes: int
    calls: int
    reason: str = ""
    model_bos: list[float] | None = None  # the replayed a_i0 of a sat model (interval ends)
    native: str | None = None  # the native encoding's answer (first question only)
    trigger: int | None = None
    contents: list | None = field(default=None, repr=False)


def thresholds(case: str, certified: float, witness: float, margin: float = MARGIN) -> dict[str, float]:
    """Each question's t: the figure moved by ``margin`` x its distance to the nearer of 0 and 1
    (1 - a on a sink, a on a head that does not sink), so t stays in (0, 1)."""
    m = lambda a: margin * min(a, 1 - a)  # noqa: E731
    sign = -1 if case == "trigger" else 1
    return {"below certificate": certified - sign * m(certified), "below witness": witness + sign * m(witness)}


def holds(case: str, weight, t: float) -> bool:
    """The replayed interval lies wholly on the question's side of t (a_i0 <= t; trigger: >= t)."""
    from proofs.certify.arithmetic import replay

    return replay.up(weight) <= t if case != "trigger" else replay.down(weight) >= t


def ask(runner: MarabouRunner, replayer, M: np.ndarray, d: int, L: int, i: int, case: str, t: float,
        timeout_s: float = TIMEOUT_S, max_boxes: int = MAX_BOXES, chord_width: float = 0.5) -> tuple[str, dict]:
    """Branch and bound over the query content's box with the ``pl`` encoding (module docstring)."""
    from proofs.certify.arithmetic import replay

    n = d - 3
    boxes = [(np.array([[-1.0, 1.0]] * n), chord_width, False)]
    seen, calls, reasons = 0, 0, []
    while boxes:
        if seen >= max_boxes:
            return "unknown", {"boxes": seen, "calls": calls, "reason": f"{max_boxes} boxes spent"}
        box, width, probe = boxes.pop(0)  # breadth first: every box of one size before the next
        seen += 1
        job = {"M": M.tolist(), "d": d, "L": L, "i": i, "case": case, "t": t, "encoding": "pl",
               "box": box.tolist(), "timeout": timeout_s, "chord_width": width, "probe": probe}
        ans, model = runner.ask(job)
        calls += 1
        if probe and ans.result != "sat":
            continue  # a probe covers nothing: its unsat or unknown leaves the covering boxes to decide
        if ans.result == "unsat":
            continue
        if ans.result != "sat":
            reasons.append(ans.reason or ans.result)
            continue  # an undecided box: the question can still be sat elsewhere, never unsat
        query = [Fraction(a, b) for a, b in model["query"]]
        keys = [[Fraction(a, b) for a, b in k] for k in model["keys"]]
        X, j = sequence(L, i, case, query, keys, model["roles"])
        w = replayer.bos_weight(X, i)
        if holds(case, w, t):
            return "sat", {"boxes": seen, "calls": calls, "model_bos": [replay.down(w), replay.up(w)], "trigger": j,
                           "contents": [[float(v) for v in row[task.CONTENT_START:d - 1]] for row in X[1:]]}
        if probe:
            reasons.append("a probe's model that does not replay")
            continue
        if np.max(box[:, 1] - box[:, 0]) < 1e-9:
            reasons.append("a model that does not replay in a box of width 1e-9")
            continue
        # first a probe: the model's own query content pinned (the products are then exact, only the
        # chords relax) and the threshold tightened by the chords' own gap, so a model there replays
        point = np.array([[float(v), float(v)] for v in query])
        boxes.insert(0, (np.clip(point, box[:, :1], box[:, 1:]), max(MIN_CHORD, width * 0.5), True))
        r = int(np.argmax(box[:, 1] - box[:, 0]))
        mid = (box[r, 0] + box[r, 1]) / 2
        for lo, hi in ((box[r, 0], mid), (mid, box[r, 1])):
            half = box.copy()
            half[r] = (lo, hi)
            boxes.append((half, max(MIN_CHORD, width * 0.7), False))
    if reasons:
        return "unknown", {"boxes": seen, "calls": calls, "reason": "; ".join(sorted(set(reasons)))[:200]}
    return "unsat", {"boxes": seen, "calls": calls}


def verdict(question: str, answer: str) -> str:
    if answer == "unknown":
        return "unknown"
    return "agree" if answer == EXPECTED[question] else "DISAGREE"


def recheck_head(net, L: int, queries: list[dict], margin: float = MARGIN, timeout_s: float = TIMEOUT_S,
                 max_boxes: int = MAX_BOXES, native: bool = True) -> dict[str, Any]:
    """Both questions at every (position, case) of a single-layer head's certificate ``queries``
    (``sink.certify_head``'s rows); the per-question rows and the tally."""
    from proofs.certify.arithmetic import heads
    from proofs.certify.head import sink

    h = heads.head_maps(net)
    replayer = sink.Replayer(net)
    rows, start = [], time.perf_counter()
    with MarabouRunner() as runner:
        for q in queries:
            i, case = q["position"], q["case"]
            witness = q["witness_low"] if case != "trigger" else q["witness_high"]
            for question, t in thresholds(case, q["certified"], witness, margin).items():
                began = time.perf_counter()
                answer, info = ask(runner, replayer, h.M, h.d, L, i, case, t, timeout_s, max_boxes, CHORDS[question])
                row = Answered(question, t, answer, verdict(question, answer), 0.0, info["boxes"], info["calls"],
                               info.get("reason", ""), info.get("model_bos"), trigger=info.get("trigger"),
                               contents=info.get("contents"))
                if native and question == "below certificate":
                    job = {"M": h.M.tolist(), "d": h.d, "L": L, "i": i, "case": case, "t": t, "encoding": "native",
                           "box": [[-1.0, 1.0]] * h.n, "timeout": timeout_s}
                    row.native = runner.ask(job)[0].result
                    row.native = row.native if row.native in ("unsat", "unknown") else "unknown"
                row.seconds = time.perf_counter() - began
                rows.append({"position": i, "case": case, "certified": q["certified"], "witness": witness,
                             **asdict(row)})
    tally = {v: sum(r["verdict"] == v for r in rows) for v in ("agree", "unknown", "DISAGREE")}
    tally["native unsat"] = sum(r["native"] == "unsat" for r in rows)
    return {"solver": "marabou", "margin": margin, "timeout_s": timeout_s, "max_boxes": max_boxes,
            "rows": rows, "tally": tally, "seconds": round(time.perf_counter() - start, 3)}


if __name__ == "__main__":  # pragma: no cover
    _serve(sys.stdin, sys.stdout)
