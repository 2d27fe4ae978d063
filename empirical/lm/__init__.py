"""``sinks probe``: the theory's quantities on a real causal language model, offline (see README.md here)."""
