"""What each check needs defined before its probes run, by check name (the probe side's `missing`), and
the other methods of its exercise kept as the learner's while it runs, when defined (`COMPANIONS`).

Written by `python -m autograder.checks` from each check's declared targets: do not edit.
"""

NEEDS: dict[str, tuple[str, ...]] = {
    "tanh_local": ("Value.tanh",),
    "relu_local": ("Value.relu",),
    "exp_local": ("Value.exp",),
    "pow_local": ("Value.__pow__",),
    "tanh_backward": ("Value.tanh",),
    "relu_backward": ("Value.relu",),
    "exp_backward": ("Value.exp",),
    "pow_backward": ("Value.__pow__",),
    "neg_sub_backward": ("Value.__neg__", "Value.__sub__"),
    "div_backward": ("Value.__truediv__",),
    "number_operands": ("Value.__radd__", "Value.__rmul__", "Value.__add__", "Value.__mul__"),
    "rsub_backward": ("Value.__rsub__",),
    "rtruediv_backward": ("Value.__rtruediv__",),
    "all_bricks": ("Value.exp", "Value.__truediv__", "Value.__pow__", "Value.__sub__", "Value.__rmul__"),
    "value_repr": ("Value.__repr__",),
    "add_forward": ("Value.__add__",),
    "mul_forward": ("Value.__mul__",),
    "add_local_backward": ("Value.__add__",),
    "mul_local_backward": ("Value.__mul__",),
    "backward_alone": ("Value.backward",),
    "eq_identity": (),
    "backward_seeds_root": ("Value.backward",),
    "backward_through_add": ("Value.backward",),
    "backward_through_mul": ("Value.backward",),
    "add_backward": ("Value.__add__",),
    "mul_backward": ("Value.__mul__",),
    "backward_accumulates": ("Value.backward",),
    "backward_chain_order": ("Value.backward",),
    "backward_topological_order": ("Value.backward",),
    "backward_once_per_node": ("Value.backward",),
    "backward_equal_data": ("Value.backward",),
    "numerical_derivative": ("numerical_derivative",),
    "relative_error": ("relative_error",),
    "manual_backprop": ("a", "b", "c", "e", "d", "f", "L"),
    "tanh_from_bricks": ("tanh_from_bricks",),
    "grads_of": ("grads_of",),
    "neuron_forward": ("Neuron",),
    "layer_forward": ("Layer",),
    "mlp_forward": ("MLP",),
    "mse_loss_backward": ("mse_loss",),
    "train_descends": ("train",),
}

COMPANIONS: dict[str, tuple[str, ...]] = {
    "neg_sub_backward": ("Value.__rsub__",),
    "rsub_backward": ("Value.__neg__", "Value.__sub__"),
}
