"""Runs a dataset's function (a map's `f`, a filter's `predicate`) on the dataset's device.

Rule: a function's body (framework/func_attr.py) is planned once, when the
kernel that calls it is built, into an Executor on that kernel's own device;
each call runs it with the call's arguments as `_Arg` values and collects
its `_Retval`s. So a worker's input pipeline, functions included, runs on
that worker.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nbcluster import errors
from nbcluster.framework.func_attr import FuncAttr
from nbcluster.framework.node import Node, parse_input
from nbcluster.runtime.kernel_table import register_kernel
from nbcluster.runtime.resources import ResourceMgr
from nbcluster.runtime.step import CancellationManager, StepContext


@dataclass(frozen=True)
class PipelineEnv:
    """What a pipeline's functions and readers need of the task that runs them."""

    resources: ResourceMgr
    container: str
    device: object  # runtime.devices.Device: its file_root confines the readers

    @staticmethod
    def of(ctx, device) -> "PipelineEnv":
        return PipelineEnv(ctx.resources, ctx.default_container, device)


class FunctionRunner:
    """One function body, planned on `device`; `call(env, args)` runs it once.

    Raises (on call): the body's kernel errors, as OpErrors naming the node.
    """

    def __init__(self, func: FuncAttr, device, caller: str) -> None:
        from nbcluster.runtime.executor import Executor  # executor -> planning -> kernels

        self.func = func
        self.caller = caller
        nodes = [n.with_changes(device="") for n in func.nodes]
        names = {n.name for n in nodes}
        for i, ref in enumerate(func.outputs):
            if parse_input(ref)[0] not in names:
                raise errors.InvalidArgumentError(
                    None, None, f"function {func.name!r} returns {ref!r}, which is not in "
                                f"its body", node_name=caller)
            nodes.append(Node(f"{func.name}/_retval_{i}", "_Retval", (ref,), "",
                              {"index": i}))
        self.executor = Executor(nodes, device)

    def call(self, env: PipelineEnv, args: tuple, cancellation: Optional[CancellationManager]
             = None, step_id: int = 0, deadline: Optional[float] = None) -> tuple:
        """Runs the body once; `step_id` and `deadline`: the calling step's, where a
        step's op calls it (a blocking kernel in the body then ends with the step)."""
        if len(args) != len(self.func.arg_types):
            raise errors.InvalidArgumentError(
                None, None, f"function {self.func.name!r} takes {len(self.func.arg_types)} "
                            f"arguments, got {len(args)}", node_name=self.caller)
        ctx = StepContext(step_id, env.resources, env.container, feeds=dict(enumerate(args)),
                          cancellation=cancellation, deadline=deadline)
        self.executor.run(ctx)
        return tuple(ctx.fetches[i] for i in range(len(self.func.outputs)))


@register_kernel("_Arg", "CPU")
def _arg(node, device):
    index = int(node.attrs["index"])

    def arg(ctx):
        try:
            return (ctx.feeds[index],)
        except KeyError:
            raise errors.InvalidArgumentError(
                None, None, f"_Arg {node.name} (index {index}) runs outside a function call",
                node_name=node.name) from None
    return arg


@register_kernel("_Retval", "CPU")
def _retval(node, device):
    index = int(node.attrs["index"])

    def retval(ctx, value):
        ctx.fetches[index] = value
        return ()
    return retval
