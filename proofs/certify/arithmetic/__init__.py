"""The arithmetic the certificates share: a head's exact score and value maps and its BOS mass's
exponent functions (``heads``), rational matrices at integer speed (``exact``), exact replays in
interval arithmetic (``replay``), certified branch and bound over a content box (``branch``), the
affine-form and zonotope domains of a stream (``affine``, ``zonotope``) and the compiled inner
loops (``native``, ``dual.c``). Every module is used by the rooms above.
"""
