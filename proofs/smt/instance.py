"""Finite instances of the task for the SMT search: a few token types, short sequences.

A finite instance keeps SPEC's features (``constructions.task``) but lets only K content token
types occur, each a fixed exact content vector, plus one trigger type. A head without positional
encoding then sees only token *types*; the SMT encodings work on those.

The conventions that the feasibility study found to matter (traps F1-F5) are parameters; the
defaults are SPEC's reference task:

- ``mean``: "inclusive" (reference: positions 1..j, the trigger included) or "exclusive" (1..j-1).
- ``trigger_value``: "features" (reference: the trigger's own feature vector enters the mean) or
  "zero" (the abstract task of the study: the trigger counts as the zero vector).
- ``max_triggers``: 1 (reference: exactly one trigger per sequence) or None (any number).
- ``bos_value``: "row" (reference: W_V x_BOS is free, but BOS is itself a query whose target is 0,
  so its image is within eps of 0), "free" (abstract: BOS row not scored) or "zero".
- ``covered``: which non-trigger queries the claim speaks about: "pre_trigger" (no trigger seen
  yet) or "non_trigger" (every non-trigger query after BOS, positions after the trigger included).
- ``bos_in_mean``: a planted bug for tests only (BOS counted in the mean); must stay False.

Sequences have ``length`` tokens after BOS (L = length + 1 positions); every trigger sits at a
position >= 2 (SPEC draws j from {2..L-1}).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterator, Sequence

from constructions import task
from constructions.errors import BadInput

MEANS = ("inclusive", "exclusive")
TRIGGER_VALUES = ("features", "zero")
BOS_VALUES = ("row", "free", "zero")
COVERAGES = ("pre_trigger", "non_trigger")

BOS = 0  # token type indices: 0 = BOS, 1..K = content types, K+1 = trigger


def _frac_vector(v: Sequence, what: str) -> tuple[Fraction, ...]:
    try:
        return tuple(Fraction(x) for x in v)
    except (TypeError, ValueError):
        raise BadInput(f"{what} must be a vector of rationals, got {v!r}") from None


def one_hot_contents(k: int) -> tuple[tuple[Fraction, ...], ...]:
    """K content types with one-hot content vectors in Q^K (d = K + 3): linearly independent
    token vectors, so every score matrix and every value table is realised by some W."""
    if not isinstance(k, int) or k < 1:
        raise BadInput(f"number of content token types must be an integer >= 1, got {k!r}")
    return tuple(tuple(Fraction(int(r == c)) for c in range(k)) for r in range(k))


@dataclass(frozen=True)
class Instance:
    contents: tuple[tuple[Fraction, ...], ...]
    length: int
    eps: Fraction
    trigger_content: tuple[Fraction, ...] | None = None  # default: zero content values
    mean: str = "inclusive"
    trigger_value: str = "features"
    max_triggers: int | None = 1
    bos_value: str = "row"
    covered: str = "non_trigger"
    bos_in_mean: bool = False  # planted bug (tests only)
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.contents:
            raise BadInput("an instance needs at least one content token type")
        contents = tuple(_frac_vector(c, "content vector") for c in self.contents)
        width = len(contents[0])
        if width < 1 or any(len(c) != width for c in contents):
            raise BadInput("content vectors must all have the same length >= 1")
        if len(set(contents)) != len(contents):
            raise BadInput("content token types must be distinct")
        object.__setattr__(self, "contents", contents)
        trig = (Fraction(0),) * width if self.trigger_content is None else _frac_vector(self.trigger_content, "trigger content")
        if len(trig) != width:
            raise BadInput(f"trigger content must have {width} values, got {len(trig)}")
        object.__setattr__(self, "trigger_content", trig)
        if not isinstance(self.length, int) or isinstance(self.length, bool) or self.length < 2:
            raise BadInput(f"instance length (tokens after BOS) must be an integer >= 2, got {self.length!r}")
        try:
            eps = Fraction(self.eps)
        except (TypeError, ValueError):
            raise BadInput(f"eps must be a rational number, got {self.eps!r}") from None
        if eps < 0:
            raise BadInput(f"eps must be >= 0, got {eps}")
        object.__setattr__(self, "eps", eps)
        for fname, allowed in (("mean", MEANS), ("trigger_value", TRIGGER_VALUES),
                               ("bos_value", BOS_VALUES), ("covered", COVERAGES)):
            if getattr(self, fname) not in allowed:
                raise BadInput(f"instance field {fname!r} must be one of {', '.join(allowed)}, got {getattr(self, fname)!r}")
        if self.max_triggers not in (1, None):
            raise BadInput(f"max_triggers must be 1 or None (unlimited), got {self.max_triggers!r}")

    # ---- sizes and token types ---------------------------------------------------------

    @property
    def k(self) -> int:
        return len(self.contents)

    @property
    def d(self) -> int:
        return len(self.contents[0]) + 3

    @property
    def trigger(self) -> int:
        """Type index of the trigger."""
        return self.k + 1

    @property
    def types(self) -> range:
        return range(self.k + 2)

    @property
    def content_types(self) -> range:
        return range(1, self.k + 1)

    @property
    def query_types(self) -> range:
        """Types that occur as queries after position 0 (contents and the trigger)."""
        return range(1, self.k + 2)

    @property
    def is_reference(self) -> bool:
        """True when the conventions are SPEC's (so ``task.target`` is the target)."""
        return (self.mean, self.trigger_value, self.max_triggers, self.bos_in_mean) == ("inclusive", "features", 1, False)

    def type_label(self, t: int) -> str:
        return "BOS" if t == BOS else ("T" if t == self.trigger else f"c{t}")

    def token_vectors(self) -> tuple[tuple[Fraction, ...], ...]:
        """Exact feature vectors of BOS, c1..cK, T, built by ``task.make_sequence``."""
        rows = task.make_sequence(list(self.contents) + [self.trigger_content], j=self.k + 1,
                                  zero=Fraction(0), one=Fraction(1))
        return tuple(tuple(r) for r in rows)

    def independent(self) -> bool:
        """Are the K + 2 token vectors linearly independent? Then any score matrix and value
        table over types is realised by some d x d weights, and the pattern encodings are exact."""
        import sympy

        return sympy.Matrix(self.token_vectors()).rank() == self.k + 2

    def symmetric(self) -> bool:
        """One-hot contents and a constant trigger content: permuting content types permutes
        coordinates, so classes equal up to that permutation give the same query."""
        return self.contents == one_hot_contents(self.k) and len(set(self.trigger_content)) <= 1

    # ---- sequences and targets ---------------------------------------------------------

    def mean_image(self, t: int) -> tuple[Fraction, ...]:
        """What a token of type t contributes to the mean (the trigger may count as zero)."""
        if t == self.trigger and self.trigger_value == "zero":
            return (Fraction(0),) * self.d
        return self.token_vectors()[t]

    def type_sequences(self) -> Iterator[tuple[int, ...]]:
        """Every sequence of the instance as token types (BOS first), L = length + 1."""
        n, T = self.length, self.trigger
        if self.max_triggers == 1:
            for j in range(2, n + 1):
                for rest in itertools.product(self.content_types, repeat=n - 1):
                    yield (BOS,) + rest[: j - 1] + (T,) + rest[j - 1:]
        else:
            for first in self.content_types:
                for rest in itertools.product(self.query_types, repeat=n - 1):
                    yield (BOS, first) + rest

    def count_sequences(self) -> int:
        n, k = self.length, self.k
        return (n - 1) * k ** (n - 1) if self.max_triggers == 1 else k * (k + 1) ** (n - 1)

    def features(self, types: Sequence[int]) -> list[list[Fraction]]:
        vecs = self.token_vectors()
        return [list(vecs[t]) for t in types]

    def target(self, types: Sequence[int]) -> list[list[Fraction]]:
        """Exact target rows of a type sequence under the instance's conventions.

        For the reference conventions this is ``constructions.task.target`` itself; the other
        conventions are the documented variants of the feasibility study (a test holds the two
        equal where they overlap)."""
        if self.is_reference:
            j = types.index(self.trigger)
            return task.target(self.features(types), j)
        zero = [Fraction(0)] * self.d
        rows = []
        for i, t in enumerate(types):
            rows.append(self.mean_of(types[: i + 1]) if t == self.trigger and i >= 1 else list(zero))
        return rows

    def mean_of(self, prefix: Sequence[int]) -> list[Fraction]:
        """Target of a trigger query that sees ``prefix`` (BOS first, the query last)."""
        items = list(prefix[1:]) if self.mean == "inclusive" else list(prefix[1:-1])
        images = [self.mean_image(t) for t in items]
        if self.bos_in_mean:  # the planted bug: BOS counted in the mean
            images.append(self.token_vectors()[BOS])
        if not images:
            raise BadInput("a trigger query with an empty mean (trigger at position 1) is not part of the task")
        return [sum((v[c] for v in images), Fraction(0)) / len(images) for c in range(self.d)]

    def describe(self) -> str:
        conv = f"mean={self.mean}, trigger_value={self.trigger_value}, max_triggers={self.max_triggers}, " \
               f"bos_value={self.bos_value}, covered={self.covered}"
        bug = ", PLANTED BUG bos_in_mean" if self.bos_in_mean else ""
        return f"{self.name or 'instance'}: K={self.k} content types, length={self.length}, d={self.d}, eps={self.eps}, {conv}{bug}"


def reference_instance(k: int, length: int, eps, **conventions) -> Instance:
    """The reference task restricted to K one-hot content types (d = K + 3)."""
    return Instance(contents=one_hot_contents(k), length=length, eps=Fraction(eps), **conventions)
