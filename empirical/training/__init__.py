"""The torch model of SPEC section 2 and its training: the model (``model``), the ways of writing a
layer's products and the fastest one on this host (``formulations``, ``fused``, ``compiled``,
``fastest``), the trainer with its ensemble of seeds (``train``, ``ensemble``, ``seed_groups``),
the sink metrics and the per-example bound (``metrics``, ``bound``), the staged forward and the
BOS edits the ablations make (``staged``, ``bos_edits``), trained weights in a summary
(``stored_weights``) and the training figures (``figures``). Imports ``empirical.host`` only."""

PUBLIC = ("model", "train", "seed_groups", "fastest", "metrics", "bound", "staged", "bos_edits",
          "stored_weights", "figures")
