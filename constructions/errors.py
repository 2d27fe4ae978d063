"""The one exception type for bad user input (configs, names, sizes, files).

The CLI turns it into a one-line message and exit status 2; library callers can catch it as
a plain ``ValueError``.
"""


class BadInput(ValueError):
    """Input that names an impossible configuration; the message names the offending field."""


class NotExpressible(NotImplementedError):
    """An attention kind (or operation) that a numeric backend cannot represent exactly.

    Raised instead of approximating silently: softmax needs ``exp``, which is neither
    rational (fractions) nor expressible in z3's real arithmetic.
    """
