"""A single-layer softmax head's minimum BOS mass as a Coq certificate.

``build(net, L)`` covers the query's content box [-1, 1]^n by a bisection tree and bounds, on
each leaf, the exp of the score gap (key score minus BOS score) of the three kinds of key a
non-trigger query sees: a content key, the trigger, the query itself. The bounds are exactly the
ones ``Checker.v`` recomputes (this module mirrors it in Fractions: outward interval bounds of
the query's score functional g_b = sum_a x_a M[a][b] over the box, the corner maximum of each
product g_b (y_b - bos_b), exp through the three tables of ``exp_up``), so the tree Coq checks is
the tree built here, and every leaf's sum (L - 3) e^uC + e^uT + e^uS is at most Rc by
construction. The leaf with the largest sum is split (on the coordinate whose width costs the
most) until that sum is within ``tol`` of the best value the certified branch and bound
(``proofs.certify``) attains; the figure is q = 1/(1 + Rc) rounded down. ``coq_text`` writes the
certificate as one .v file.

A certificate that cannot close fails closed (``Unclosed``, a one-line reason, nothing written):
when a tree reaches ``MAX_LEAVES`` leaves with its worst leaf still above the goal, or when an exp
argument lies beyond +-``EXP_ARG_MAX`` (its table entry would be an integer of ~1.44 |u| bits; a
score form taken as N instead of N / D multiplies every argument by D, and one such tree grew to
23 GB; e^1000 already makes the figure nothing). The two bound the exporter's time and memory;
both decide whether a certificate exists.

Why not the branch and bound's own leaves: ``proofs.certify.arithmetic.branch`` reduces monotone
coordinates to faces and splits convex ones into faces, so its leaves do not cover the box;
each reduction would need its monotonicity or convexity proved in Coq. A covering needs neither.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from constructions import reference
from constructions.errors import BadInput
from constructions.numbers import fraction_down, fraction_up

# exp_up's tables (Checker.v): exp(u) = exp(a) exp(b/32) exp(c/1024) exp(x), 0 <= x < 1/1024.
SCALES = {"units": 1, "thirty_seconds": 32, "kilo": 1024}
TABLE_BITS = 60  # significant bits of each table entry
TABLE_MARGIN = Fraction(1, 2 ** 52)  # relative room above exp(t) that the interval tactic proves
FIGURE_DIGITS = 15  # Rc rounded up and q down to this many decimals
MAX_LEAVES = 20_000  # leaves per covering tree: beyond, the certificate fails closed (pinned)
EXP_ARG_MAX = 1000  # |u| of every exp_up / exp_down argument: beyond, it fails closed (pinned)


class Unclosed(Exception):
    """The covering cannot close within the budget: no certificate (the message is one line)."""


@dataclass
class Certificate:
    d: int
    L: int
    N: list[list[int]]  # the score form M = N / D, exactly
    D: int
    tree: Any  # None (a leaf) or (k, left, right)
    Rc: Fraction  # every leaf's sum is <= Rc
    q: Fraction  # the figure: q (1 + Rc) <= 1
    tables: dict[str, dict[int, Fraction]] = field(default_factory=dict)
    leaves: int = 1
    depth: int = 0
    target: float | None = None  # the branch and bound's attained sum at the worst query
    trigger_tree: Any = None  # the trigger query's covering tree
    p: Fraction = Fraction(1)  # the trigger's figure: a_j0 <= p on every input
    trigger_tables: dict[str, dict[int, Fraction]] = field(default_factory=dict)  # lower exp facts
    trigger_leaves: int = 1
    trigger_depth: int = 0
    trigger_target: float | None = None  # the branch and bound's attained sum at the trigger (j = 2)

    @property
    def figure(self) -> float:
        """q as a float, rounded down (a lower bound stays one; ``float()`` rounds to nearest)."""
        return fraction_down(self.q)

    @property
    def trigger_figure(self) -> float:
        """p as a float, rounded up (an upper bound stays one)."""
        return fraction_up(self.p)


class ExpTables:
    """exp_up (``lower``: exp_down) of Checker.v / TriggerChecker.v, recording the table entries it
    uses (each an interval-tactic fact: exp(t) <= e, or e <= exp(t) for the lower tables)."""

    def __init__(self, lower: bool = False) -> None:
        self.lower = lower
        self.entries: dict[str, dict[int, Fraction]] = {name: {} for name in SCALES}

    def entry(self, name: str, z: int) -> Fraction:
        table = self.entries[name]
        if z not in table:
            from mpmath import mp, mpf, exp, floor, log

            with mp.workprec(200):
                margin = mpf(TABLE_MARGIN.numerator) / TABLE_MARGIN.denominator
                value = exp(mpf(z) / SCALES[name]) * (1 - margin if self.lower else 1 + margin)
                shift = TABLE_BITS - int(floor(log(value, 2)))
                rounded = int((mp.floor if self.lower else mp.ceil)(value * mpf(2) ** shift))
                table[z] = Fraction(rounded, 2 ** shift) if shift >= 0 else Fraction(rounded * 2 ** -shift)
        return table[z]

    def _parts(self, u: Fraction) -> tuple[Fraction, Fraction]:
        """(e1 e2 e3, x) with u = a + b/32 + c/1024 + x, 0 <= x < 1/1024 (the checker's split)."""
        if abs(u) > EXP_ARG_MAX:
            raise Unclosed(f"an exp argument {_magnitude(u)} lies beyond +-{EXP_ARG_MAX} (EXP_ARG_MAX): no certificate "
                           f"(is the score form's scale right?)")
        a = math.floor(u)
        r1 = u - a
        b = math.floor(r1 * 32)
        r2 = r1 - Fraction(b, 32)
        c = math.floor(r2 * 1024)
        x = r2 - Fraction(c, 1024)
        return self.entry("units", a) * self.entry("thirty_seconds", b) * self.entry("kilo", c), x

    def up(self, u: Fraction) -> Fraction:
        e, x = self._parts(u)
        return e / (1 - x)

    def down(self, u: Fraction) -> Fraction:
        e, x = self._parts(u)
        return e * (1 + x)


def _magnitude(u: Fraction) -> str:
    """``u`` to 3 digits, also where it is beyond a float's range."""
    if abs(u) < 10 ** 300:
        return f"{float(u):.3g}"
    return f"{'-' if u < 0 else ''}~1e{len(str(math.floor(abs(u)))) - 1}"


class LeafBound:
    """The leaf sum of Checker.v's ``leaf_ok`` for one head (M = N / D), in exact rationals."""

    def __init__(self, N: list[list[int]], D: int, L: int, tables: ExpTables):
        self.N, self.D, self.d, self.L, self.tables = N, D, len(N), L, tables

    def _is_content(self, a: int) -> bool:
        return 2 <= a <= self.d - 2

    def query_iv(self, box, a: int):
        if a == self.d - 1:
            return (Fraction(1), Fraction(1))
        return box[a - 2] if self._is_content(a) else (Fraction(0), Fraction(0))

    def keys(self, box):
        d = self.d
        one, zero, flag = (Fraction(-1), Fraction(1)), (Fraction(0), Fraction(0)), (Fraction(1), Fraction(1))
        bos = (Fraction(-1), Fraction(-1))
        content = [bos if b == 0 else flag if b == d - 1 else one if self._is_content(b) else zero for b in range(d)]
        trigger = [bos if b == 0 else flag if b == 1 else one if self._is_content(b) else zero for b in range(d)]
        own = [bos if b == 0 else self.query_iv(box, b) for b in range(d)]
        return content, trigger, own

    def trigger_iv(self, box, a: int):
        if a == 1:
            return (Fraction(1), Fraction(1))
        return box[a - 2] if self._is_content(a) else (Fraction(0), Fraction(0))

    def functional(self, box, token=None):
        token = token or self.query_iv
        out = []
        for b in range(self.d):
            lo = hi = Fraction(0)
            for a in range(self.d):
                m, (xl, xh) = self.N[a][b], token(box, a)
                p, r = (m * xl, m * xh) if m >= 0 else (m * xh, m * xl)
                lo, hi = lo + p, hi + r
            out.append((lo, hi))
        return out

    def gaps(self, box) -> tuple[Fraction, Fraction, Fraction]:
        G = self.functional(box)
        return tuple(sum((max(g[0] * y[0], g[0] * y[1], g[1] * y[0], g[1] * y[1]) for g, y in zip(G, ys)),
                         Fraction(0)) / self.D for ys in self.keys(box))

    def total(self, box) -> Fraction:
        uC, uT, uS = self.gaps(box)
        up = self.tables.up
        return (self.L - 3) * up(uC) + up(uT) + up(uS)

    def trigger_gaps(self, box) -> tuple[Fraction, Fraction]:
        """Lower bounds of a content key's and the trigger query's own gap (TriggerChecker.v)."""
        G = self.functional(box, self.trigger_iv)
        content = self.keys(box)[0]
        own = [(Fraction(-1), Fraction(-1)) if b == 0 else self.trigger_iv(box, b) for b in range(self.d)]
        return tuple(sum((min(g[0] * y[0], g[0] * y[1], g[1] * y[0], g[1] * y[1]) for g, y in zip(G, ys)),
                         Fraction(0)) / self.D for ys in (content, own))

    def trigger_total(self, box, lower: ExpTables) -> Fraction:
        lC, lS = self.trigger_gaps(box)
        return lower.down(lC) + lower.down(lS)


def _split_coordinate(M, box) -> int:
    """The content coordinate whose width costs the most: its rows and columns of M, by width."""
    d = len(M)
    cost = [(sum(abs(M[a][b]) + abs(M[b][a]) for b in range(d))) * (hi - lo)
            for a, (lo, hi) in zip(range(2, d - 1), box)]
    return max(range(len(cost)), key=lambda k: cost[k])


def _halves(box, k: int):
    lo, hi = box[k]
    mid = (lo + hi) / 2
    left, right = list(box), list(box)
    left[k], right[k] = (lo, mid), (mid, hi)
    return left, right


def single_head_form(net: reference.Network) -> tuple[list[list[int]], int]:
    """(N, D) with M = W_Q^T W_K = N / D of a single-layer, single-head softmax network, exactly
    (D the least common denominator)."""
    from proofs.certify.arithmetic import exact, heads

    if net.kind != "softmax":
        raise BadInput(f"the Coq certificate covers softmax heads; got kind {net.kind!r}")
    if len(net.layers) != 1 or len(net.layers[0].W_Q) != 1:
        raise BadInput("the Coq certificate covers a single-layer, single-head network")
    M = exact.IntMatrix.of(heads.head_maps(net).M_exact)
    return [list(row) for row in M.N], M.den


def branch_and_bound_targets(net: reference.Network, L: int) -> tuple[float, float]:
    """The sums the certified branch and bound attains at the worst queries: the largest at a
    non-trigger query (L - 1, trigger earlier: L - 3 content keys, the trigger, the query itself)
    and the smallest at the trigger (j = 2: one content key and the trigger itself)."""
    from proofs.certify.arithmetic import branch, heads
    from proofs.certify.head import sink

    h = heads.head_maps(net)
    after, _, _ = sink.objective(h, L - 1, "after")
    trigger, _, _ = sink.objective(h, 2, "trigger")
    return branch.maximise(after, net.d - 3).best, -branch.maximise(trigger, net.d - 3).best


def _refine(badness, n: int, N, goal: float, max_leaves: int = MAX_LEAVES, what: str = "covering"):
    """Split the worst leaf (largest ``badness``) until every leaf is at most ``goal``: (tree, {leaf
    id: badness}); ``Unclosed`` when that needs more than ``max_leaves`` leaves."""
    root = [(Fraction(-1), Fraction(1))] * n
    nodes: dict[int, Any] = {}  # id -> (k, left id, right id) for split nodes
    first = badness(root)
    heap, leaves, counter = [(-_float(first), 0, root)], {0: first}, 1
    while heap and len(leaves) < max_leaves and -heap[0][0] > goal:
        _, i, box = heapq.heappop(heap)
        k = _split_coordinate(N, box)
        del leaves[i]
        nodes[i] = (k, counter, counter + 1)
        for child in _halves(box, k):
            leaves[counter] = badness(child)
            heapq.heappush(heap, (-_float(leaves[counter]), counter, child))
            counter += 1
    if heap and -heap[0][0] > goal:
        raise Unclosed(f"the {what} tree did not close within {max_leaves} leaves: worst leaf {-heap[0][0]:.6g}, "
                       f"goal {goal:.6g}; no certificate")

    def tree(i: int):
        return None if i not in nodes else (nodes[i][0], tree(nodes[i][1]), tree(nodes[i][2]))

    return tree(0), leaves


def _float(x: Fraction) -> float:
    """x as a float, +-inf beyond the float range (a leaf sum up to L e^EXP_ARG_MAX)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _depth(t) -> int:
    return 0 if t is None else 1 + max(_depth(t[1]), _depth(t[2]))


def build(net: reference.Network, L: int, tol: float = 1e-3, max_leaves: int = MAX_LEAVES) -> Certificate:
    """The covering trees, their bounds and the figures q (non-trigger minimum) and p (trigger
    maximum) for ``net`` at length ``L``; ``Unclosed`` when a tree cannot close within the budget."""
    if L < 4 or net.d < 4:
        raise BadInput(f"the task needs d >= 4 and L >= 4; got d = {net.d}, L = {L}")
    N, D = single_head_form(net)
    upper, lower = ExpTables(), ExpTables(lower=True)
    bound = LeafBound(N, D, L, upper)
    target, trigger_target = branch_and_bound_targets(net, L)
    n = net.d - 3
    tree, leaves = _refine(bound.total, n, N, target * (1 + tol), max_leaves, "non-trigger")
    scale = 10 ** FIGURE_DIGITS
    Rc = max(leaves.values())
    Rc_up = Fraction(math.ceil(Rc * scale), scale)
    q = Fraction(math.floor(scale / (1 + Rc_up)), scale)
    assert q * (1 + Rc_up) <= 1 and Rc_up >= Rc
    t_tree, t_leaves = _refine(lambda box: -bound.trigger_total(box, lower), n, N,
                               -trigger_target * (1 - tol), max_leaves, "trigger")
    low = min(-v for v in t_leaves.values())
    p = Fraction(math.ceil(scale / (1 + low)), scale)
    assert p * (1 + low) >= 1
    return Certificate(net.d, L, N, D, tree, Rc_up, q, upper.entries, len(leaves), _depth(tree), target,
                       t_tree, p, lower.entries, len(t_leaves),
                       _depth(t_tree), trigger_target)


# ----------------------------------------------------------------------------------------
# The Coq text.


def _q(x: Fraction) -> str:
    return f"({x.numerator} # {x.denominator})"


def _tree_text(t) -> str:
    parts, stack = [], [t]
    while stack:  # iterative: a deep tree must not hit Python's recursion limit
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif item is None:
            parts.append("Leaf")
        else:
            k, left, right = item
            stack += [")", right, " ", left, f"(Node {k} "]
    return "".join(parts)


def _tables_text(prefix: str, tables: dict[str, dict[int, Fraction]], predicate: str) -> list[str]:
    """The three tables and their facts, each fact by the interval tactic."""
    out = []
    for table, scale in SCALES.items():
        body = "; ".join(f"(({z})%Z, {_q(e)})" for z, e in sorted(tables[table].items()))
        out.append(f"Definition {prefix}_{table} : table := [{body}].")
        out.append(f"Lemma {prefix}_{table}_ok : {predicate} {scale} {prefix}_{table}.\n"
                   f"Proof.\n  unfold {predicate}, {prefix}_{table}.\n"
                   "  repeat (apply Forall_cons; [cbv beta; cbn [fst snd Qnum Qden]; unfold Q2R; cbn [Qnum Qden];\n"
                   "                              interval with (i_prec 90)|]).\n"
                   "  apply Forall_nil.\nQed.")
    out.append(f"Definition {prefix}_tables : tables := {{| units := {prefix}_units; "
               f"thirty_seconds := {prefix}_thirty_seconds; kilo := {prefix}_kilo |}}.")
    return out


def _tables_proof(prefix: str) -> str:
    return (f"  - split; [exact {prefix}_units_ok | split; [exact {prefix}_thirty_seconds_ok | "
            f"exact {prefix}_kilo_ok]].")


def theorems(name: str) -> tuple[str, str]:
    """The certificate file's two theorems: the non-trigger minimum and the trigger maximum."""
    return f"{name}_min_bos_mass", f"{name}_max_bos_at_trigger"


def statements(cert: Certificate, name: str) -> tuple[str, str]:
    """What the kernel's Check must print for ``theorems(name)``."""
    low, high = theorems(name)
    return (f"{low} : min_bos_mass_at_least {cert.d} {cert.L} {name}_M {name}_q",
            f"{high} : max_bos_mass_at_trigger_at_most {cert.d} {cert.L} {name}_M {name}_p")


def coq_text(cert: Certificate, name: str) -> str:
    """The certificate as a Coq file: data, the table facts (interval tactic) and the theorems."""
    rows = ";\n  ".join("[" + "; ".join(f"({v})%Z" for v in row) + "]" for row in cert.N)
    low, high = theorems(name)
    args = f"{cert.d} {cert.L} {name}_N {name}_D"
    out = [
        f"(* Generated by proofs/coq/certificate/export.py: {name}, d = {cert.d}, L = {cert.L}, "
        f"{cert.leaves} + {cert.trigger_leaves} leaves. *)",
        "From Coq Require Import Reals QArith List ZArith.",
        "From Interval Require Import Tactic.",
        "Import ListNotations.",
        "From SinksCert Require Import Head Checker Main TriggerChecker TriggerSound.",
        "Open Scope Q_scope.",
        f"Definition {name}_N : list (list Z) :=\n  [{rows}].",
        f"Definition {name}_D : positive := {cert.D}.",
        f"Definition {name}_M : list (list Q) := form {name}_N {name}_D.",
        *_tables_text(f"{name}_up", cert.tables, "table_ok"),
        *_tables_text(f"{name}_lo", cert.trigger_tables, "table_lo_ok"),
        f"Definition {name}_tree : tree := {_tree_text(cert.tree)}.",
        f"Definition {name}_trigger_tree : tree := {_tree_text(cert.trigger_tree)}.",
        f"Definition {name}_Rc : Q := {_q(cert.Rc)}.",
        f"Definition {name}_q : Q := {_q(cert.q)}.",
        f"Definition {name}_p : Q := {_q(cert.p)}.",
        f"Theorem {low} : min_bos_mass_at_least {cert.d} {cert.L} {name}_M {name}_q.",
        "Proof.",
        f"  apply (certificate_sound {args} {name}_up_tables {name}_Rc {name}_q {name}_tree).",
        _tables_proof(f"{name}_up"),
        "  - vm_compute. reflexivity.",
        "Qed.",
        f"Theorem {high} : max_bos_mass_at_trigger_at_most {cert.d} {cert.L} {name}_M {name}_p.",
        "Proof.",
        f"  apply (trigger_certificate_sound {args} {name}_lo_tables {name}_p {name}_trigger_tree).",
        _tables_proof(f"{name}_lo"),
        "  - vm_compute. reflexivity.",
        "Qed.",
    ]
    return "\n".join(out) + "\n"
