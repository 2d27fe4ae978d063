"""PyTorch models, training, metrics, sweeps, figures and the ``sinks`` CLI.
Importing the package does not load torch; ``empirical.model`` and friends do."""
