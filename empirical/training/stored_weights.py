"""A trained model's weights as a training summary stores them, and the model back from them.

``model_weights`` writes each ensemble member's weights as plain float lists into a ``sinks
train`` summary (``empirical.training.train``, ``empirical.analysis.worst_case``);
``model_from_summary`` rebuilds the torch model from such a record. ``empirical.weights`` reads the
same lists as exact networks for the certificates.
"""

from __future__ import annotations

from typing import Any


def model_weights(model) -> list[dict[str, Any]]:
    """Per ensemble member, the trained weights as plain float lists (exact: float32 -> float64
    -> JSON repr round-trips), in the npz layout: ``layers[l]`` = {W_Q: [H][d][d], W_K, W_V,
    W_O: [d][H*d]}, plus ``extras`` {name: [H] or [H][d]} for kinds with parameters of their
    own. Stored in ``sinks train`` summaries: ``sinks certify`` reads them as exact networks,
    ``model_from_summary`` rebuilds the torch model (``empirical.analysis.ablation``, ``empirical.weights.lens``)."""
    members = model.ensemble or 1
    out = []
    for m in range(members):
        def pick(W):
            W = W.detach().cpu().double()
            return (W if model.ensemble is None else W[m]).tolist()

        out.append({"kind": model.kind.name, "residual": bool(model.residual), "d": model.d,
                    "layers": [{**{name: pick(getattr(layer, name)) for name in ("W_Q", "W_K", "W_V", "W_O")},
                                **({"extras": {name: pick(p) for name, p in layer.extras.items()}}
                                   if len(layer.extras) else {})}
                               for layer in model.layers]})
    return out


def model_from_summary(summary: dict[str, Any], device: str = "cpu"):
    """The ensemble model a training summary stored (an ``AttentionModel`` in float64, members
    in the summary's order); float32 values convert to float64 exactly, so it computes what
    training's float64 evaluation computed. A record without weights is ``BadInput``."""
    import torch

    from constructions.errors import BadInput
    from empirical.training.model import AttentionModel

    members = summary.get("weights")
    if not isinstance(members, list) or not members:
        raise BadInput("this run record holds no weights (written before weights were stored): rerun it")
    first, E = members[0], len(members)
    H = len(first["layers"][0]["W_Q"])
    model = AttentionModel(first["kind"], first["d"], layers=len(first["layers"]), heads=H,
                           residual=first["residual"], ensemble=E, seeds=list(range(E)), device=device,
                           dtype=torch.float64)
    with torch.no_grad():
        for n, layer in enumerate(model.layers):
            for name in ("W_Q", "W_K", "W_V", "W_O"):
                getattr(layer, name).copy_(torch.tensor([m["layers"][n][name] for m in members], dtype=torch.float64))
            for name, p in layer.extras.items():
                p.copy_(torch.tensor([m["layers"][n]["extras"][name] for m in members], dtype=torch.float64))
    return model
