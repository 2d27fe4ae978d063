"""The empirical side of the suite: torch models and their training, weight files, what is measured
and certified on trained models, the real-LM probe, and the pipeline with the ``sinks`` CLI.

Its rooms follow the stages of the work (README.md here has a paragraph on each). A room imports
only rooms below it, never a sibling or one above (``tests/test_import_graph.py``); ``RANKS`` is
that rule as data, lowest first. Each room's ``PUBLIC`` names the modules other rooms may import.
Importing the package, or a room, does not load torch; ``empirical.training.model`` and friends do.
"""

RANKS = {"host": 0, "training": 1, "weights": 2, "analysis": 2, "lm": 2, "pipeline": 3}
