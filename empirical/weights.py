"""A trained model's weights in its run record, and the model back from them.

``record(model)`` is JSON data (nested lists of the float parameters, keyed by the model's
``state_dict`` names, plus the shape fields), stored by training in each summary under
``"weights"`` so that post-hoc analyses (``empirical.ablation``, ``empirical.lens``) work from
saved runs without retraining. ``load(summary)`` rebuilds the ensemble model in float64 from
it; the float32 values convert to float64 exactly, so the loaded model computes what training's
float64 evaluation computed. Files are data: nothing here executes anything it reads.
"""

from __future__ import annotations

from typing import Any

from constructions.errors import BadInput


def record(model) -> dict[str, Any]:
    return {
        "kind": model.kind.name, "d": model.d, "layers": model.n_layers, "heads": model.n_heads,
        "residual": model.residual, "ensemble": model.ensemble,
        "state": {name: t.detach().cpu().tolist() for name, t in model.state_dict().items()},
    }


def load(summary: dict[str, Any], device: str = "cpu"):
    """The model stored in a training summary (an ``AttentionModel``, float64, ensemble as trained)."""
    import torch

    from empirical.model import AttentionModel

    w = summary.get("weights")
    if not isinstance(w, dict) or "state" not in w:
        raise BadInput("this run record holds no weights (written before weights were stored): rerun it")
    E = w["ensemble"]
    model = AttentionModel(w["kind"], w["d"], layers=w["layers"], heads=w["heads"], residual=w["residual"],
                           ensemble=E, seeds=list(range(E or 1)), device=device, dtype=torch.float64)
    state = {name: torch.tensor(v, dtype=torch.float64, device=device) for name, v in w["state"].items()}
    try:
        model.load_state_dict(state)
    except RuntimeError as e:
        raise BadInput(f"stored weights do not fit the model they name: {str(e).splitlines()[0]}") from None
    return model
