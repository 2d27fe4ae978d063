"""The trigger-conditional task of SPEC section 1: one definition for proofs, SMT, constructions
and training.

A sequence has ``L`` positions; position 0 is BOS. Token ``i`` has ``d`` features:

    0        BOS flag        (1 on BOS only)
    1        trigger flag    (1 on the trigger only)
    2..d-2   content         (i.i.d. Uniform(-1, 1) on content and trigger tokens, 0 on BOS)
    d-1      content flag    (1 on ordinary content tokens only)

Exactly one trigger, at position ``j`` in {2..L-1}. Targets:

    single layer:  y_i = 0 for i != j,     y_j = (1/j) sum_{k=1..j} x_k
    residual:      y_i = x_i for i != j,   y_j = x_j + (1/j) sum_{k=1..j} x_k

The exact pieces (``make_sequence``, ``target``, ``enumerate_sequences``) work on any numbers
that support ``+``, ``*`` and division by an ``int`` (``Fraction``, sympy, floats). The torch
pieces (``sample``, ``target_torch``) import torch lazily so that exact-only users never pay
for it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, Sequence

from .errors import BadInput
from .numbers import exact_div

if TYPE_CHECKING:  # pragma: no cover
    import torch

BOS_FLAG = 0
TRIGGER_FLAG = 1
CONTENT_START = 2  # content coordinates are CONTENT_START .. d-2

CONTENT_DISTRIBUTIONS = ("uniform", "gaussian")


def content_flag(d: int) -> int:
    """Index of the content flag (the last coordinate)."""
    return d - 1


def content_slice(d: int) -> slice:
    """Slice of the d-3 content coordinates."""
    return slice(CONTENT_START, d - 1)


def feature_names(d: int) -> list[str]:
    """Labels of the d coordinates, for printing matrices."""
    return ["BOS", "trigger"] + [f"c{k}" for k in range(1, d - 2)] + ["content"]


@dataclass(frozen=True)
class TaskConfig:
    """One instance of the task.

    ``trigger=None`` draws the trigger position uniformly from {2..L-1} (training);
    an int fixes it (evaluation uses 7). ``content`` picks the content distribution
    ("uniform" is SPEC's Uniform(-1, 1); "gaussian" is a variant).
    """

    d: int = 16
    L: int = 16
    trigger: int | None = None
    residual: bool = False
    content: str = "uniform"

    def __post_init__(self) -> None:
        for name in ("d", "L"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise BadInput(f"task field {name!r} must be an integer, got {value!r}")
        if self.d < 4:
            raise BadInput(f"task field 'd' must be >= 4 (one content coordinate at least), got {self.d}")
        if self.L < 4:
            raise BadInput(f"task field 'L' must be >= 4, got {self.L}")
        if self.trigger is not None and (
            not isinstance(self.trigger, int) or isinstance(self.trigger, bool)
            or not 2 <= self.trigger <= self.L - 1
        ):
            raise BadInput(
                f"task field 'trigger' must be None or an integer in 2..{self.L - 1}, got {self.trigger!r}"
            )
        if not isinstance(self.residual, bool):
            raise BadInput(f"task field 'residual' must be true or false, got {self.residual!r}")
        if self.content not in CONTENT_DISTRIBUTIONS:
            raise BadInput(
                f"task field 'content' must be one of {', '.join(CONTENT_DISTRIBUTIONS)}, got {self.content!r}"
            )

    @property
    def trigger_positions(self) -> range:
        """The trigger positions this config can produce."""
        if self.trigger is not None:
            return range(self.trigger, self.trigger + 1)
        return range(2, self.L)

    @property
    def n_content(self) -> int:
        return self.d - 3


# ----------------------------------------------------------------------------------------
# Exact side: any number type.


def make_sequence(contents: Sequence[Sequence[Any]], j: int, zero: Any = 0, one: Any = 1) -> list[list[Any]]:
    """Feature rows of a sequence: BOS, then ``contents[k-1]`` at position k, trigger at ``j``.

    ``contents`` holds L-1 vectors of the d-3 content values for positions 1..L-1.
    """
    n = len(contents[0])
    d = n + 3
    bos = [zero] * d
    bos[BOS_FLAG] = one
    rows = [bos]
    for position, values in enumerate(contents, start=1):
        if len(values) != n:
            raise BadInput(f"content vector at position {position} has {len(values)} values, expected {n}")
        row = [zero, zero, *values, zero]
        row[TRIGGER_FLAG if position == j else content_flag(d)] = one
        rows.append(row)
    L = len(rows)
    if not 2 <= j <= L - 1:
        raise BadInput(f"trigger position j must be in 2..{L - 1}, got {j}")
    return rows


def trigger_position(X: Sequence[Sequence[Any]]) -> int:
    """The position whose trigger flag is set (exactly one, by construction)."""
    hits = [i for i, row in enumerate(X) if row[TRIGGER_FLAG] == 1]
    if len(hits) != 1:
        raise BadInput(f"a sequence must hold exactly one trigger, found {len(hits)}")
    return hits[0]


def target(X: Sequence[Sequence[Any]], j: int | None = None, residual: bool = False) -> list[list[Any]]:
    """The exact target of SPEC section 1 (mean over positions 1..j, BOS excluded)."""
    j = trigger_position(X) if j is None else j
    d = len(X[0])
    mean = [exact_div(sum((X[k][c] for k in range(2, j + 1)), X[1][c]), j) for c in range(d)]
    rows = []
    for i, row in enumerate(X):
        if residual:
            rows.append([row[c] + mean[c] for c in range(d)] if i == j else list(row))
        else:
            rows.append(list(mean) if i == j else [row[c] * 0 for c in range(d)])
    return rows


def enumerate_sequences(cfg: TaskConfig, values: Sequence[Any]) -> Iterator[tuple[list[list[Any]], int]]:
    """Every sequence of the finite instance: content coordinates drawn from ``values``.

    Yields ``(X, j)`` for every trigger position of ``cfg`` and every assignment of the
    (L-1)(d-3) content coordinates; there are ``count_sequences(cfg, len(values))`` of them.
    """
    n, positions = cfg.n_content, cfg.L - 1
    vectors = list(itertools.product(values, repeat=n))
    for j in cfg.trigger_positions:
        for contents in itertools.product(vectors, repeat=positions):
            yield make_sequence(contents, j), j


def count_sequences(cfg: TaskConfig, n_values: int) -> int:
    """Size of the finite instance enumerated by ``enumerate_sequences``."""
    return len(cfg.trigger_positions) * n_values ** (cfg.n_content * (cfg.L - 1))


DEFAULT_VALUES = (Fraction(-1), Fraction(0), Fraction(1, 2), Fraction(1))
"""A small set of rationals in [-1, 1] for exact finite instances."""


# ----------------------------------------------------------------------------------------
# Torch side: vectorised, seeded, any device.


class Batch(NamedTuple):
    x: "torch.Tensor"  # [B, L, d] inputs
    y: "torch.Tensor"  # [B, L, d] targets
    trigger: "torch.Tensor"  # [B] trigger positions (int64)


def target_torch(x: "torch.Tensor", trigger: "torch.Tensor", residual: bool = False) -> "torch.Tensor":
    """Vectorised target for inputs ``x`` [..., L, d] with trigger positions [...]."""
    import torch

    L = x.shape[-2]
    prefix = torch.cumsum(x[..., 1:, :], dim=-2)  # [..., L-1, d]: sum of positions 1..k+1
    idx = (trigger - 1).unsqueeze(-1).unsqueeze(-1).expand(*trigger.shape, 1, x.shape[-1])
    mean = torch.gather(prefix, -2, idx) / trigger.to(x.dtype).unsqueeze(-1).unsqueeze(-1)  # [..., 1, d]
    at_trigger = (torch.arange(L, device=x.device) == trigger.unsqueeze(-1)).unsqueeze(-1)  # [..., L, 1]
    base = x if residual else torch.zeros_like(x)
    return base + at_trigger.to(x.dtype) * mean


def sample(
    cfg: TaskConfig,
    batch: int,
    generator: "torch.Generator",
    device: "str | torch.device | None" = None,
    dtype: "torch.dtype | None" = None,
) -> Batch:
    """A batch of ``batch`` sequences drawn with ``generator`` (on the generator's device),
    returned on ``device``. No per-sequence Python work."""
    import torch

    dtype = dtype or torch.float32
    gen_device = generator.device
    B, L, d = batch, cfg.L, cfg.d
    x = torch.zeros(B, L, d, dtype=dtype, device=gen_device)
    shape = (B, L - 1, d - 3)
    if cfg.content == "uniform":
        content = torch.rand(shape, generator=generator, dtype=dtype, device=gen_device) * 2 - 1
    else:
        content = torch.randn(shape, generator=generator, dtype=dtype, device=gen_device)
    x[:, 1:, content_slice(d)] = content
    if cfg.trigger is None:
        trig = torch.randint(2, L, (B,), generator=generator, device=gen_device)
    else:
        trig = torch.full((B,), cfg.trigger, dtype=torch.long, device=gen_device)
    is_trigger = torch.arange(L, device=gen_device) == trig.unsqueeze(-1)  # [B, L]
    x[:, 0, BOS_FLAG] = 1
    x[:, :, TRIGGER_FLAG] = is_trigger.to(dtype)
    x[:, 1:, content_flag(d)] = (~is_trigger[:, 1:]).to(dtype)
    y = target_torch(x, trig, cfg.residual)
    if device is not None:
        x, y, trig = x.to(device), y.to(device), trig.to(device)
    return Batch(x, y, trig)
