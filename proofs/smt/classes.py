"""Position classes: what a head without positional encoding can tell apart.

Such a head computes the output at position i from the query's type and the *multiset* of key
types at 0..i (BOS is always key 0). So a class is (query type, counts of each non-BOS type among
positions 1..i, the query included). Classes grow polynomially with the length; sequences grow
exponentially, which is why the encodings enumerate classes and the replay enumerates sequences.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

from .instance import BOS, Instance

PRE, TRIG, POST = "pre_trigger", "trigger", "post_trigger"


@dataclass(frozen=True)
class PositionClass:
    query: int  # token type of the query
    counts: tuple[int, ...]  # counts[t - 1] = number of type-t tokens at positions 1..i (t = 1..K+1)

    @property
    def size(self) -> int:
        """Position i of the query (number of non-BOS keys it sees)."""
        return sum(self.counts)

    def count(self, t: int) -> int:
        return self.counts[t - 1]

    def phase(self, inst: Instance) -> str:
        if self.query == inst.trigger:
            return TRIG
        return POST if self.count(inst.trigger) else PRE

    def keys(self) -> list[int]:
        """Key types in a canonical order: BOS, then each type repeated by its count."""
        return [BOS] + [t for t, n in enumerate(self.counts, start=1) for _ in range(n)]

    def label(self, inst: Instance) -> str:
        parts = [f"{inst.type_label(t)}x{n}" for t, n in enumerate(self.counts, start=1) if n]
        return f"q={inst.type_label(self.query)} keys={{{', '.join(parts)}}}"


def _valid(inst: Instance, query: int, counts: tuple[int, ...]) -> bool:
    T, n = inst.trigger, inst.length
    triggers = counts[T - 1]
    contents = sum(counts[: inst.k])
    size = triggers + contents
    if size < 1 or size > n or counts[query - 1] < 1:
        return False
    if inst.max_triggers == 1:
        if triggers > 1:
            return False
        if triggers == 0 and size > n - 1:  # no room left for the one trigger
            return False
    if triggers:
        # a trigger never sits at position 1: some content other than the query comes first
        return contents - (query != T) >= 1
    return True


def enumerate_classes(inst: Instance) -> list[PositionClass]:
    """Every class of the instance, in a fixed order (by size, then query, then counts)."""
    out = []
    max_t = 1 if inst.max_triggers == 1 else inst.length
    for size in range(1, inst.length + 1):
        for query in inst.query_types:
            for triggers in range(0, max_t + 1):
                for content_counts in _compositions(size - triggers, inst.k):
                    counts = tuple(content_counts) + (triggers,)
                    if _valid(inst, query, counts):
                        out.append(PositionClass(query, counts))
    return out


def _compositions(total: int, parts: int):
    if total < 0:
        return
    for cut in itertools.combinations(range(total + parts - 1), parts - 1):
        bounds = (-1,) + cut + (total + parts - 1,)
        yield tuple(bounds[i + 1] - bounds[i] - 1 for i in range(parts))


def representative(inst: Instance, cls: PositionClass) -> tuple[int, ...]:
    """A valid type sequence BOS, x_1..x_i whose last position is in ``cls``."""
    T = inst.trigger
    others = list(cls.counts)
    others[cls.query - 1] -= 1
    contents = [t for t in inst.content_types for _ in range(others[t - 1])]
    triggers = [T] * others[T - 1]
    return (BOS,) + tuple(contents) + tuple(triggers) + (cls.query,)


def complete(inst: Instance, prefix: tuple[int, ...]) -> tuple[int, ...]:
    """Extend a prefix to a full sequence of the instance (one trigger placed if it must be)."""
    seq = list(prefix)
    if inst.max_triggers == 1 and inst.trigger not in seq:
        seq.append(inst.trigger)
    seq += [1] * (inst.length + 1 - len(seq))
    return tuple(seq)


def class_target(inst: Instance, cls: PositionClass) -> list[Fraction]:
    """The exact target of every position in the class, from the instance's own target."""
    rep = representative(inst, cls)
    return inst.target(complete(inst, rep))[cls.size]


def covered(inst: Instance, cls: PositionClass) -> bool:
    """Is the class a non-trigger query the claim speaks about?"""
    phase = cls.phase(inst)
    return phase == PRE or (phase == POST and inst.covered == "non_trigger")


def canonical(inst: Instance, cls: PositionClass) -> PositionClass:
    """Smallest image of ``cls`` under permutations of the content types (used only when the
    instance is ``symmetric()``, where such a permutation maps solutions to solutions)."""
    if not inst.symmetric():
        return cls
    best = None
    k = inst.k
    for perm in itertools.permutations(range(1, k + 1)):
        image = {t: perm[t - 1] for t in range(1, k + 1)}
        image[inst.trigger] = inst.trigger
        counts = [0] * (k + 1)
        for t in range(1, k + 2):
            counts[image[t] - 1] = cls.counts[t - 1]
        cand = PositionClass(image[cls.query], tuple(counts))
        key = (cand.query, tuple(-c for c in cand.counts))
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1]


def violation_classes(inst: Instance) -> list[PositionClass]:
    """Covered classes in which a violation is searched, one per symmetry orbit."""
    seen, out = set(), []
    for cls in enumerate_classes(inst):
        if not covered(inst, cls):
            continue
        can = canonical(inst, cls)
        if can not in seen:
            seen.add(can)
            out.append(can)
    return out
