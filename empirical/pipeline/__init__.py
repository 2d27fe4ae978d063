"""The pipeline on top: the ``sinks`` CLI (``cli``, one module per command in ``commands/``),
``sinks reproduce`` and its parts (``reproduce``, ``parts/``), REPORT.md's rendering (``report``), resumable sweeps of registered jobs
(``sweep``) and the README tables generated from a run (``published/``). The one place that wires
the rooms below together; no room imports it.

Inside, the same rule: ``RANKS`` orders its pieces (a part runs sweeps, the published tables read
the parts, a command calls any of them, the CLI dispatches to the commands by name).
"""

PUBLIC = ()
RANKS = {"sweep": 0, "report": 0, "reproduce": 1, "parts": 2, "published": 3, "commands": 4, "cli": 5}
