"""A single-layer softmax head's minimum BOS mass over every input, checked by the Coq kernel:
``export`` builds the certificate (a covering tree with exact bounds), ``check`` compiles it with
coqc against the generic development (Head.v, Checker.v, Sound.v, Certified.v, Main.v)."""
