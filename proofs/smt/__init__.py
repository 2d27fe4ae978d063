"""z3 search for counterexamples to T1 on finite instances of the task.

Entry points: ``instance.reference_instance`` (a finite instance), ``search.search_counterexample``
(proof / counterexample / candidate / unknown, with a per-step certificate and a replay on every
sequence), ``theta_star.theta_star``, ``multihead.cancelling_heads``. See README "SMT search".
"""

PUBLIC = ("hardkill", "instance", "multihead", "recheck", "search", "theta_star", "verdict")
