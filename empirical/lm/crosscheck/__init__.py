"""Independent cross-checks of ``sinks probe``'s figures (see README.md here).

Nothing here imports the probe's code (``empirical.lm``'s modules): each check reads the probe's
``probe.json``, loads the model file it records with plain transformers, tokenises and draws the
inputs itself, and recomputes one figure by its own mechanism (``output_attentions``, a
monkeypatched eager attention function, its own hooks). ``python -m empirical.lm.crosscheck``."""
