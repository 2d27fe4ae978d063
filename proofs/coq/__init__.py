"""T1, T3 and the T2 counterexample as Coq theorems, and their kernel check (see README.md here).

``kernel`` compiles the development and reads ``Print Assumptions``; ``twins`` says which
registered statements the Coq theorems check and what the Python constants imply for them;
``statements`` and ``weights`` read the Coq source back; ``overlay`` applies the check to verdicts.
"""

PUBLIC = ("certificate", "kernel", "overlay", "twins")
