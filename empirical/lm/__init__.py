"""``sinks probe``: the theory's quantities on a real causal language model, offline (see README.md
here). Imports ``empirical.training`` (the per-example bound, the BOS edits, the figures' basis)."""

PUBLIC = ("load", "probe", "report", "figures")
