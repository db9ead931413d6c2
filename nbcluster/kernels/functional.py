"""Kernels of TF2's functional ops: a call runs its function; If picks a branch; While loops.

Rule: each function is planned once, when the kernel is built, on the
kernel's own device (data_functions.FunctionRunner), and each run calls it
with the op's inputs, in the step's resources and cancellation, so
variables a body reads or updates are the task's own. A condition is
truthy as TF's: a scalar non-zero (or a non-empty string), or a non-scalar
with any element.
"""
from __future__ import annotations

import numpy as np

from nbcluster.kernels.data_functions import FunctionRunner, PipelineEnv
from nbcluster.runtime.kernel_table import register_kernel


def truthy(value) -> bool:
    value = np.asarray(value)
    if value.ndim:
        return value.size > 0
    item = value.item()
    return len(item) > 0 if isinstance(item, (bytes, str)) else bool(item)


def _runner(node, device, attr: str) -> FunctionRunner:
    return FunctionRunner(node.attrs[attr], device, node.name)


def _call(function: FunctionRunner, ctx, device, args: tuple) -> tuple:
    """One call of `function` within the step `ctx`: its resources, cancellation, deadline."""
    return function.call(PipelineEnv.of(ctx, device), args, ctx.cancellation, ctx.step_id,
                         ctx.deadline)


def _call_kernel(node, device):
    function = _runner(node, device, "f")

    def call(ctx, *args):
        return _call(function, ctx, device, args)
    return call


def _if_kernel(node, device):
    then_branch = _runner(node, device, "then_branch")
    else_branch = _runner(node, device, "else_branch")

    def if_(ctx, cond, *args):
        return _call(then_branch if truthy(cond) else else_branch, ctx, device, args)
    return if_


def _while_kernel(node, device):
    cond = _runner(node, device, "cond")
    body = _runner(node, device, "body")

    def while_(ctx, *args):
        while truthy(_call(cond, ctx, device, args)[0]):
            ctx.check()  # a loop that never ends still ends with its step
            args = _call(body, ctx, device, args)
        return tuple(args)
    return while_


for _type in ("PartitionedCall", "StatefulPartitionedCall"):
    register_kernel(_type, "CPU")(_call_kernel)
for _type in ("If", "StatelessIf"):
    register_kernel(_type, "CPU")(_if_kernel)
for _type in ("While", "StatelessWhile"):
    register_kernel(_type, "CPU")(_while_kernel)
