"""The shared definitions (task, attention kinds, exact reference evaluator) and explicit weight
constructions. Imports neither ``proofs`` nor ``empirical``, and loads torch only on demand."""
