"""What is measured and certified on trained models: certificates over every input beside the
evaluation set's figures (``certificates``), each uncertified stack head's worst input found
(``stack_attack``), the worst-case training setting in which T1 applies in
full (``worst_case``), the functional-sink ablations (``ablation``), the other attention kinds and
task variants trained by name (``beyond_runs``), and the explicit constructions by name, drawn and
run in float at any length (``constructions_by_name``, ``float_check``). Imports ``empirical.host``
and ``empirical.training``."""

PUBLIC = ("certificates", "stack_attack", "worst_case", "ablation", "beyond_runs", "constructions_by_name", "float_check")
