"""L1: symbolic gradients: the rule table, tf.gradients and a graph-mode GradientTape.

Importing the package loads every rule family, so the table is complete.
"""
import importlib

from nbcluster.grad.gradient_table import (
    NotDifferentiable,
    get_gradient_rule,
    is_declared,
    register_gradient,
    registered_gradients,
)

FAMILIES = ("math", "linalg", "array", "shapes", "fill", "nn", "reduction", "control",
            "slicing", "state", "io", "indexing", "logic", "accumulator", "summary", "data",
            "control_flow", "control_flow_tensor_array", "control_flow_while",
            "resource_variables", "dynamic_partition", "functional")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")

from nbcluster.grad.gradients import gradients  # noqa: E402 - after the rules load
from nbcluster.grad.tape import GradientTape  # noqa: E402

__all__ = ["GradientTape", "NotDifferentiable", "get_gradient_rule", "gradients",
           "is_declared", "register_gradient", "registered_gradients"]
