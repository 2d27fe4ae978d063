"""Marabou 2.0 as a second, independent verifier of a head's certified BOS mass (optional extra
``.[marabou]``): ``encode`` builds one query of one head as a Marabou input query, ``recheck`` asks
the two questions per query position (below the certified minimum minus a margin: must be unsat;
below the witness's weight plus a margin: must be sat, its model replayed exactly) and reports
agreement (``sinks certify WEIGHTS --recheck marabou``). README.md says what it can and cannot decide.
"""

PUBLIC = ("recheck",)
