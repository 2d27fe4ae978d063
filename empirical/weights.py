"""Weight files in, exact numbers out: every format ``sinks certify`` reads, as one ``Weights``.

Formats (files are data, never code):

- the project's JSON (``sinks construct --format json``: exact fraction strings) and npz
  (``allow_pickle=False``), read through ``empirical.construction_check``'s loaders;
- a ``sinks train`` summary JSON with its ``weights`` (one entry per seed; ``select`` picks one);
- safetensors (keys as in the npz: ``L{l}.W_Q`` [H, d, d] ... ``L{l}.W_O`` [d, H*d], or the
  paper's state-dict keys below);
- a PyTorch state dict of the paper's original code, read with ``torch.load(weights_only=True)``:
  single head ``W_Q.weight``, ``W_K.weight``, ``W_V.weight``, ``W_O.weight`` (each d x d,
  ``nn.Linear`` so y = W x: the project's layout); several layers ``layers.{l}.W_Q.weight``
  [H*d, d] (head h in rows h*d..h*d+d-1; likewise W_K, W_V) and ``layers.{l}.W_O.weight``
  [d, H*d] (head h in columns h*d..h*d+d-1), always residual.

Every entry becomes an exact ``Fraction`` (a float is a dyadic rational), so the certificates
of ``proofs.certify`` work on the very numbers in the file. Wrong shapes, NaN / inf, unknown or
missing keys and a pickle that is not weights-only are ``BadInput`` (one line, exit 2 in the CLI).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any


def model_weights(model) -> list[dict[str, Any]]:
    """Per ensemble member, the trained weights as plain float lists (exact: float32 -> float64
    -> JSON repr round-trips), in the npz layout: ``layers[l]`` = {W_Q: [H][d][d], W_K, W_V,
    W_O: [d][H*d]}. Stored in ``sinks train`` summaries so that runs can be certified later."""
    members = model.ensemble or 1
    out = []
    for m in range(members):
        def pick(W):
            W = W.detach().cpu().double()
            return (W if model.ensemble is None else W[m]).tolist()

        out.append({"kind": model.kind.name, "residual": bool(model.residual), "d": model.d,
                    "layers": [{name: pick(getattr(layer, name)) for name in ("W_Q", "W_K", "W_V", "W_O")}
                               for layer in model.layers]})
    return out
