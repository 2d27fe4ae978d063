"""Residual stacks over every input, a certified BOS-mass bound per head: the stream as affine
forms with interval remainders (``affine_stack``, its deeper layers' scores in ``scores``, their
remainders read along the scores' directions by ``directional``) or as zonotopes (``zono_stack``);
a head's bracket with a worst input replayed exactly (``refute``).
"""

PUBLIC = ("affine_stack", "directional", "zono_stack", "refute")
