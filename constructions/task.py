"""The trigger-conditional task of constructions/SPEC.md section 1: one definition for proofs, SMT, constructions
and training.

A sequence has ``L`` positions; position 0 is BOS. Token ``i`` has ``d`` features:

    0        BOS flag        (1 on BOS only)
    1        trigger flag    (1 on the trigger only)
    2..d-2   content         (i.i.d. Uniform(-1, 1) on content and trigger tokens, 0 on BOS)
    d-1      content flag    (1 on ordinary content tokens only)

Exactly one trigger, at position ``j`` in {2..L-1}. Targets:

    single layer:  y_i = 0 for i != j,     y_j = (1/j) sum_{k=1..j} x_k
    residual:      y_i = x_i for i != j,   y_j = x_j + (1/j) sum_{k=1..j} x_k

Variants (``TaskConfig`` fields whose defaults give the reference task above, unchanged):

- ``bos=False``: no BOS token. Position 0 is an ordinary content token (content flag 1,
  content drawn like every other); nothing marks it, and with no positional encoding a model
  cannot tell it apart from the others. The mean at a trigger then runs over positions 0..j
  (every token up to and including the trigger, divided by j + 1). Triggers stay in {2..L-1}.
- ``triggers=n``: n distinct trigger positions per sequence, drawn uniformly from {2..L-1}.
  Every trigger t gets the inclusive mean of positions 1..t (earlier triggers included: with
  the exclusive mean no per-token head can solve it, finding F1 in proofs/smt/README.md); every
  other position 0 (or x_i with ``residual``). ``Batch.trigger`` holds the first trigger;
  ``trigger_mask(x)`` gives all of them from the trigger flags.
- ``retrieval=True``: key-query retrieval. The first content coordinate (index
  ``RETRIEVAL_KEY`` = 2) of every non-BOS token is a key drawn uniformly from {-1, +1}
  instead of from the content distribution; the trigger's own value there is its query. The
  target at a trigger t is the mean of the tokens k in {first..t} (first = 1, or 0 without
  BOS) whose key equals t's query, x_k[2] == x_t[2]; t itself always matches, so the set is
  never empty. Other positions as in the reference task.

The variants compose (for instance several triggers with retrieval and no BOS).

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
D_MIN = 4  # SPEC section 1: at least one content coordinate
L_MIN = 4  # SPEC section 1: two trigger positions (2 and 3) at least
TRIGGER_FLAG = 1
CONTENT_START = 2  # content coordinates are CONTENT_START .. d-2

CONTENT_DISTRIBUTIONS = ("uniform", "gaussian")
RETRIEVAL_KEY = CONTENT_START  # the key / query feature of the retrieval variant


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
    ("uniform" is SPEC's Uniform(-1, 1); "gaussian" is a variant). ``bos``, ``triggers`` and
    ``retrieval`` select the variants described in the module docstring; their defaults are
    the reference task.
    """

    d: int = 16
    L: int = 16
    trigger: int | None = None
    residual: bool = False
    content: str = "uniform"
    bos: bool = True
    triggers: int = 1
    retrieval: bool = False

    def __post_init__(self) -> None:
        for name in ("d", "L"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise BadInput(f"task field {name!r} must be an integer, got {value!r}")
        if self.d < D_MIN:
            raise BadInput(f"task field 'd' must be >= {D_MIN} (one content coordinate at least), got {self.d}")
        if self.L < L_MIN:
            raise BadInput(f"task field 'L' must be >= {L_MIN}, got {self.L}")
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
        for name in ("bos", "retrieval"):
            if not isinstance(getattr(self, name), bool):
                raise BadInput(f"task field {name!r} must be true or false, got {getattr(self, name)!r}")
        if (not isinstance(self.triggers, int) or isinstance(self.triggers, bool)
                or not 1 <= self.triggers <= self.L - 2):
            raise BadInput(f"task field 'triggers' must be an integer in 1..{self.L - 2} "
                           f"(the positions 2..L-1), got {self.triggers!r}")
        if self.triggers > 1 and self.trigger is not None:
            raise BadInput(f"task field 'trigger' must be None when 'triggers' > 1, got {self.trigger!r}")

    @property
    def is_reference(self) -> bool:
        """True for the reference task of constructions/SPEC.md section 1 (no variant switched on)."""
        return self.bos and self.triggers == 1 and not self.retrieval

    @property
    def first(self) -> int:
        """First position a trigger's mean can include: 1 after BOS, 0 without BOS."""
        return 1 if self.bos else 0

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


def make_sequence(contents: Sequence[Sequence[Any]], j: int | Sequence[int], zero: Any = 0, one: Any = 1,
                  bos: bool = True) -> list[list[Any]]:
    """Feature rows of a sequence: BOS, then ``contents[k-1]`` at position k, trigger at ``j``.

    ``contents`` holds L-1 vectors of the d-3 content values for positions 1..L-1 (L vectors,
    for positions 0..L-1, with ``bos=False``). ``j`` is a trigger position or a collection of
    them (the several-triggers variant).
    """
    n = len(contents[0])
    d = n + 3
    triggers = {j} if isinstance(j, int) else set(j)
    rows = []
    if bos:
        rows.append([one if c == BOS_FLAG else zero for c in range(d)])
    for position, values in enumerate(contents, start=len(rows)):
        if len(values) != n:
            raise BadInput(f"content vector at position {position} has {len(values)} values, expected {n}")
        row = [zero, zero, *values, zero]
        row[TRIGGER_FLAG if position in triggers else content_flag(d)] = one
        rows.append(row)
    L = len(rows)
    if not triggers or any(not 2 <= t <= L - 1 for t in triggers):
        raise BadInput(f"trigger position j must be in 2..{L - 1}, got {j}")
    return rows


def trigger_position(X: Sequence[Sequence[Any]]) -> int:
    """The position whose trigger flag is set (exactly one, by construction)."""
    hits = [i for i, row in enumerate(X) if row[TRIGGER_FLAG] == 1]
    if len(hits) != 1:
        raise BadInput(f"a sequence must hold exactly one trigger, found {len(hits)}")
    return hits[0]


def trigger_positions_in(X: Sequence[Sequence[Any]]) -> list[int]:
    """Every position whose trigger flag is set (at least one)."""
    hits = [i for i, row in enumerate(X) if row[TRIGGER_FLAG] == 1]
    if not hits:
        raise BadInput("a sequence must hold at least one trigger, found none")
    return hits


def averaged_positions(X: Sequence[Sequence[Any]], t: int, bos: bool = True, retrieval: bool = False) -> list[int]:
    """The positions whose mean is the target at trigger ``t`` (see the module docstring)."""
    first = 1 if bos else 0
    return [k for k in range(first, t + 1) if not retrieval or X[k][RETRIEVAL_KEY] == X[t][RETRIEVAL_KEY]]


def target(X: Sequence[Sequence[Any]], j: int | None = None, residual: bool = False,
           bos: bool = True, retrieval: bool = False) -> list[list[Any]]:
    """The exact target of constructions/SPEC.md section 1 (mean over positions 1..j, BOS excluded).

    ``j=None`` reads the trigger(s) from the trigger flags (several for the several-triggers
    variant); ``bos`` and ``retrieval`` select those variants (module docstring).
    """
    triggers = trigger_positions_in(X) if j is None else [j]
    d = len(X[0])
    rows = [list(row) if residual else [row[c] * 0 for c in range(d)] for row in X]
    for t in triggers:
        group = averaged_positions(X, t, bos, retrieval)
        mean = [exact_div(sum((X[k][c] for k in group[1:]), X[group[0]][c]), len(group)) for c in range(d)]
        rows[t] = [rows[t][c] + mean[c] for c in range(d)] if residual else mean
    return rows


def target_for(cfg: TaskConfig, X: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The exact target of sequence ``X`` under ``cfg`` (every variant)."""
    return target(X, None, cfg.residual, bos=cfg.bos, retrieval=cfg.retrieval)


def enumerate_sequences(cfg: TaskConfig, values: Sequence[Any]) -> Iterator[tuple[list[list[Any]], int]]:
    """Every sequence of the finite instance: content coordinates drawn from ``values``.

    Yields ``(X, j)`` for every trigger position of ``cfg`` and every assignment of the
    (L-1)(d-3) content coordinates; there are ``count_sequences(cfg, len(values))`` of them.
    Reference task only: the variants are checked through ``sample`` and ``target_for``.
    """
    if not cfg.is_reference:
        raise BadInput("enumerate_sequences covers the reference task only (bos, one trigger, no retrieval)")
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
    trigger: "torch.Tensor"  # [B] trigger positions (int64); the first one with several triggers


def trigger_mask(x: "torch.Tensor") -> "torch.Tensor":
    """[..., L] bool: the trigger positions of inputs ``x`` [..., L, d] (every variant)."""
    return x[..., TRIGGER_FLAG] == 1


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
    if not cfg.is_reference:
        return _sample_variant(cfg, batch, generator, device, dtype)
    content, trig = _draw_reference(cfg, batch, generator, dtype)
    return _build_reference(cfg, content, trig, device)


def sample_members(
    cfg: TaskConfig,
    batch: int,
    generators: "Sequence[torch.Generator]",
    device: "str | torch.device | None" = None,
    dtype: "torch.dtype | None" = None,
) -> Batch:
    """One batch per generator, stacked: x, y [S, B, L, d], trigger [S, B]. Member m's batch is
    exactly ``sample(cfg, batch, generators[m])`` (each generator draws the same numbers in the
    same order); the reference task builds all members' sequences and targets at once."""
    import torch

    dtype = dtype or torch.float32
    if not cfg.is_reference:
        parts = [sample(cfg, batch, g, device, dtype) for g in generators]
        return Batch(*(torch.stack([getattr(p, f) for p in parts]) for f in Batch._fields))
    draws = [_draw_reference(cfg, batch, g, dtype) for g in generators]
    content = torch.stack([c for c, _ in draws])
    trig = torch.stack([t for _, t in draws])
    return _build_reference(cfg, content, trig, device)


def _draw_reference(cfg: TaskConfig, batch: int, generator: "torch.Generator", dtype) -> tuple:
    """The random numbers of one reference batch, in a fixed order: content, then triggers."""
    import torch

    gen_device = generator.device
    shape = (batch, cfg.L - 1, cfg.d - 3)
    if cfg.content == "uniform":
        content = torch.rand(shape, generator=generator, dtype=dtype, device=gen_device) * 2 - 1
    else:
        content = torch.randn(shape, generator=generator, dtype=dtype, device=gen_device)
    if cfg.trigger is None:
        trig = torch.randint(2, cfg.L, (batch,), generator=generator, device=gen_device)
    else:
        trig = torch.full((batch,), cfg.trigger, dtype=torch.long, device=gen_device)
    return content, trig


def _build_reference(cfg: TaskConfig, content: "torch.Tensor", trig: "torch.Tensor", device) -> Batch:
    """Sequences and targets from drawn ``content`` [..., B, L-1, d-3] and triggers [..., B]."""
    import torch

    L, d = cfg.L, cfg.d
    x = torch.zeros(*trig.shape, L, d, dtype=content.dtype, device=content.device)
    x[..., 1:, content_slice(d)] = content
    is_trigger = torch.arange(L, device=content.device) == trig.unsqueeze(-1)  # [..., B, L]
    x[..., 0, BOS_FLAG] = 1
    x[..., :, TRIGGER_FLAG] = is_trigger.to(x.dtype)
    x[..., 1:, content_flag(d)] = (~is_trigger[..., 1:]).to(x.dtype)
    y = target_torch(x, trig, cfg.residual)
    if device is not None:
        x, y, trig = x.to(device), y.to(device), trig.to(device)
    return Batch(x, y, trig)


def target_variant_torch(cfg: TaskConfig, x: "torch.Tensor", is_trigger: "torch.Tensor") -> "torch.Tensor":
    """Vectorised target of every variant for inputs ``x`` [..., L, d] and trigger mask [..., L].

    Each trigger t averages the tokens of its group among positions first..t: one group (all
    of them), or with ``retrieval`` two groups by key sign. Prefix sums per group, no loops
    over sequences.
    """
    import torch

    L = x.shape[-2]
    keep = torch.arange(L, device=x.device) >= cfg.first  # [L]
    if cfg.retrieval:
        key = x[..., RETRIEVAL_KEY]  # [..., L]
        groups = [keep & (key == 1), keep & (key == -1)]
    else:
        groups = [keep.expand(x.shape[:-1])]
    mean = torch.zeros_like(x)
    for g in groups:  # [..., L] bool; a trigger belongs to exactly one group
        gf = g.to(x.dtype).unsqueeze(-1)  # [..., L, 1]
        sums = torch.cumsum(x * gf, dim=-2)  # [..., L, d]
        counts = torch.cumsum(gf, dim=-2).clamp(min=1)  # [..., L, 1]
        mean = mean + gf * sums / counts
    base = x if cfg.residual else torch.zeros_like(x)
    return base + is_trigger.to(x.dtype).unsqueeze(-1) * mean


def _sample_variant(cfg: TaskConfig, batch: int, generator: "torch.Generator", device, dtype) -> Batch:
    import torch

    gen_device = generator.device
    B, L, d, first = batch, cfg.L, cfg.d, cfg.first
    shape = (B, L - first, d - 3)
    if cfg.content == "uniform":
        content = torch.rand(shape, generator=generator, dtype=dtype, device=gen_device) * 2 - 1
    else:
        content = torch.randn(shape, generator=generator, dtype=dtype, device=gen_device)
    if cfg.retrieval:
        signs = torch.randint(0, 2, shape[:-1], generator=generator, device=gen_device)
        content[..., 0] = (signs * 2 - 1).to(dtype)
    x = torch.zeros(B, L, d, dtype=dtype, device=gen_device)
    x[:, first:, content_slice(d)] = content
    pos = torch.arange(L, device=gen_device)
    if cfg.trigger is not None:
        is_trigger = (pos == cfg.trigger).expand(B, L)
    else:  # a uniformly random set of cfg.triggers positions in 2..L-1 per sequence
        order = torch.rand(B, L - 2, generator=generator, device=gen_device).argsort(dim=-1)
        chosen = order[:, :cfg.triggers] + 2  # [B, n]
        is_trigger = torch.zeros(B, L, dtype=torch.bool, device=gen_device).scatter(1, chosen, True)
    if cfg.bos:
        x[:, 0, BOS_FLAG] = 1
    x[:, :, TRIGGER_FLAG] = is_trigger.to(dtype)
    x[:, first:, content_flag(d)] = (~is_trigger[:, first:]).to(dtype)
    y = target_variant_torch(cfg, x, is_trigger)
    trig = is_trigger.to(torch.int8).argmax(dim=-1)  # [B] first trigger
    if device is not None:
        x, y, trig = x.to(device), y.to(device), trig.to(device)
    return Batch(x, y, trig)
