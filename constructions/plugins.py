"""Attention kinds from other packages: found by name, loaded once, refused unless their two
forms agree.

A researcher's package defines an ``AttentionKind`` (``constructions.attention``) and exposes it

- through an entry point in the group ``sinks.kinds`` (the entry point's name is the kind's
  name, e.g. ``sqrelu = "mykinds:SQRELU"`` in ``[project.entry-points."sinks.kinds"]``), or
- by its import path ``package.module:NAME``, given wherever a kind name is taken
  (``--kind``, ``--kinds``, config files).

The name a kind is found by is the name it carries from then on (``sqrelu`` or
``package.module:NAME``): that is what run records store and what a fresh worker process
resolves again. This module only finds and checks; ``attention.get`` is the one lookup every
command uses, and it registers what this module loads. It does not import ``attention`` (no
import cycle): the check gets the float backend and the kind's two forms passed in.

The check (``forms_disagreement``): on seeded random scores (and random extra parameters) the
exact form over Python floats and the torch form in float64 must agree to ``FORMS_TOLERANCE``
at every query and key; a kind whose forms differ by more is refused, naming the largest
difference and where it is.
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any, Callable

from .errors import BadInput

GROUP = "sinks.kinds"
FORMS_TOLERANCE = 1e-9  # float64 rounding of both forms is ~1e-15; a real disagreement is far larger
CHECK_LENGTHS = (1, 2, 5, 9)  # query rows 0..L-1 of each; row 0 sees only BOS
CHECK_SEED = 20260401


def is_import_path(name: str) -> bool:
    return ":" in name


@functools.lru_cache(maxsize=1)
def entry_point_names() -> tuple[str, ...]:
    """Names of the kinds installed under the ``sinks.kinds`` entry-point group (not loaded;
    read once per process)."""
    from importlib.metadata import entry_points

    return tuple(sorted({ep.name for ep in entry_points(group=GROUP)}))


def load_object(name: str) -> Any:
    """The object a plug-in name points at: ``package.module:NAME`` or an entry point's name.
    Returns None when no plug-in has that name."""
    if is_import_path(name):
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise BadInput(f"attention kind {name!r} cannot be imported: {e}") from None
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=GROUP) if ep.name == name]
    if not found:
        return None
    try:
        return found[0].load()
    except Exception as e:  # a broken plug-in is the user's input: one line, not a traceback
        raise BadInput(f"attention kind {name!r} (entry point {found[0].value!r}) cannot be loaded: "
                       f"{type(e).__name__}: {e}") from None


def _random_extras(params, gen, B: int, L: int) -> tuple[dict[str, Any], Callable[[int, int], dict[str, float]]]:
    """Torch extras shaped like the model's, and the exact form's extras for (sequence, query)."""
    import torch

    torch_extras, values = {}, {}
    for p in params:
        if p.shape == "vector":  # the query's projection w . x_i: one number per query
            v = torch.randn(B, 1, L, 1, generator=gen, dtype=torch.float64) * 2
            torch_extras[p.name], values[p.name] = v, (lambda b, i, v=v: float(v[b, 0, i, 0]))
        else:
            v = torch.randn((), generator=gen, dtype=torch.float64) * 2
            torch_extras[p.name], values[p.name] = v.reshape(1, 1, 1, 1), (lambda b, i, v=v: float(v))
    return torch_extras, lambda b, i: {n: f(b, i) for n, f in values.items()}


def forms_disagreement(kind: Any, float_ops: Any) -> tuple[float, str]:
    """(largest |exact - torch| over the check's rows, where it is). A form that raises, or
    returns the wrong shape or a non-finite number, counts as an infinite difference."""
    import torch

    gen = torch.Generator().manual_seed(CHECK_SEED)
    worst, where = 0.0, "nowhere"
    B = 2
    for L in CHECK_LENGTHS:
        scores = torch.randn(B, 1, L, L, generator=gen, dtype=torch.float64) * 3
        mask = torch.ones(L, L, dtype=torch.bool).tril()
        torch_extras, exact_extras = _random_extras(kind.params, gen, B, L)
        try:
            fast = kind.torch(scores, mask, torch_extras)
            if tuple(fast.shape) != (B, 1, L, L):
                return math.inf, f"torch form returned shape {tuple(fast.shape)}, expected {(B, 1, L, L)}"
            for b in range(B):
                for i in range(L):
                    row = kind.exact([float(s) for s in scores[b, 0, i, :i + 1]], i, float_ops, exact_extras(b, i))
                    if len(row) != i + 1:
                        return math.inf, f"exact form returned {len(row)} weights for query {i}, expected {i + 1}"
                    for k in range(L):
                        slow = float(row[k]) if k <= i else 0.0
                        diff = abs(slow - float(fast[b, 0, i, k]))
                        if not math.isfinite(diff):
                            return math.inf, f"a non-finite weight at L={L}, query {i}, key {k}"
                        if diff > worst:
                            worst, where = diff, f"L={L}, query {i}, key {k}: exact {slow:.6g}, torch {float(fast[b, 0, i, k]):.6g}"
        except Exception as e:  # the plug-in's own code failed: refuse it, saying how
            return math.inf, f"{type(e).__name__}: {e}"
    return worst, where


def refuse_if_forms_disagree(name: str, kind: Any, float_ops: Any) -> None:
    diff, where = forms_disagreement(kind, float_ops)
    if not diff <= FORMS_TOLERANCE:
        raise BadInput(f"attention kind {name!r} refused: its exact and torch forms differ by {diff:.3g} "
                       f"(> {FORMS_TOLERANCE:g}) at {where}")
