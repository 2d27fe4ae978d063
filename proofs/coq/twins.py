"""Which Coq theorems kernel-check which registered statements (placeholder; fidelity below)."""

TWINS = {
    "softmax_rows_on_simplex": ("softmax_rows_on_simplex",),
    "relu_rows_can_vanish": ("relu_rows_can_vanish",),
    "bos_query_sees_only_bos": ("bos_query_sees_only_bos",),
    "sink_bound_direction": ("sink_bound_direction",),
    "token_consistency": ("token_consistency",),
    "content_flag_lower_bound": ("content_flag_lower_bound",),
    "trigger_row_ratio_bound": ("trigger_row_ratio_bound",),
    "flag_sum_lower_bound": ("flag_sum_lower_bound",),
    "t1_single_layer_sink": ("t1_single_layer_sink",),
    "t1_pre_trigger_sharp": ("t1_pre_trigger_sharp",),
    "t1_one_residual_layer": ("t1_one_residual_layer",),
    "relu_construction_exact": ("relu_construction_exact", "relu_head_zero_error"),
    "t2_multi_layer_existential": ("t2_multi_layer_existential", "cancelling_pair_bounds",
                                   "cancel_error_bound_vanishes"),
}


def main_theorems() -> list[str]:
    return [t for names in TWINS.values() for t in names]
