"""The project's models as TransformerLens modules (optional extra ``.[lens]``).

``hooked(model)`` wraps an ``empirical.training.model.AttentionModel`` (any layers x heads, any
registered kind, ensembles included) as a ``transformer_lens.HookedRootModule`` whose
``HookPoint``s carry TransformerLens's names (``empirical.training.staged`` lists them with their
layouts), so ``run_with_cache``, ``run_with_hooks``, ``add_hook`` and activation patching work
as on a language model::

    from empirical.weights.lens import hooked
    lens = hooked(model)
    out, cache = lens.run_with_cache(x)
    cache["blocks.0.attn.hook_pattern"]          # == model(x)[1]["L0.pattern"]
    lens.run_with_hooks(x, fwd_hooks=[("blocks.1.attn.hook_pattern", zero_head_0)])

The wrapper shares the model's parameters (no copy): a weight changed in one is changed in the
other. Its forward is ``empirical.training.staged.run`` with every stage sent through its HookPoint; a
test holds outputs and patterns equal to the plain model's.

Project cache name -> TransformerLens name: ``L{l}.input`` -> ``blocks.{l}.hook_resid_pre``;
``L{l}.pattern`` -> ``blocks.{l}.attn.hook_pattern``; the model's output ->
``blocks.{L-1}.hook_resid_post``. The other hook points have no project cache entry.

TransformerLens 4.x dropped ``HookedTransformer`` for its Hugging Face bridge, but
``HookedRootModule`` and ``HookPoint`` remain; they are all this needs.
"""

from __future__ import annotations

from typing import Any

from constructions.errors import BadInput

INSTALL_HINT = "TransformerLens is not installed: pip install -e '.[lens]' (transformer-lens)"
CACHE_NAMES = {"L{l}.input": "blocks.{l}.hook_resid_pre", "L{l}.pattern": "blocks.{l}.attn.hook_pattern"}


def available() -> bool:
    try:
        import transformer_lens  # noqa: F401
        from transformer_lens.hook_points import HookPoint  # noqa: F401
    except ImportError:
        return False
    return True


def hooked(model: Any):
    """``model`` as a TransformerLens ``HookedRootModule`` (see the module docstring)."""
    if not available():
        raise BadInput(INSTALL_HINT)
    return _hooked_class()(model)


def _hooked_class():
    from torch import nn
    from transformer_lens import HookedRootModule
    from transformer_lens.hook_points import HookPoint

    from empirical.training import staged

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            for stage in staged.STAGES:
                if stage.startswith("attn."):
                    setattr(self, stage.removeprefix("attn."), HookPoint())

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()
            for stage in staged.STAGES:
                if not stage.startswith("attn."):
                    setattr(self, stage, HookPoint())

    class HookedAttentionModel(HookedRootModule):
        """An ``AttentionModel`` with TransformerLens hook points."""

        def __init__(self, model):
            super().__init__()
            self.model = model
            self.blocks = nn.ModuleList(Block() for _ in model.layers)
            self.setup()  # names every HookPoint and fills hook_dict

        def forward(self, x):
            return staged.run(self.model, x, lambda name, t: self.hook_dict[name](t))

    return HookedAttentionModel
