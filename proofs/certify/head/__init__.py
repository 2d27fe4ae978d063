"""A single head over every input: its sink (``sink``; ``free`` for sink-free ReLU heads), its
worst-case error bracketed (``witness`` below, ``error`` and ``trigger`` above, ``eta`` the two
together) and T1 applied with it (``t1``).
"""

PUBLIC = ("eta", "free", "sink", "t1", "trigger", "witness")
