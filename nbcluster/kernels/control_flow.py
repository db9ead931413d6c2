"""Control-flow kernels: Switch routes its input to one output and leaves the
other DEAD; Enter, Exit, NextIteration and LoopCond forward their input.

Rule: `DEAD` (runtime/dead_tensor.py) is the one value a dead tensor holds.
Only the frame executor (`runtime/control_flow_executor.py`) runs these
kernels; it never runs an op
whose input is dead (Merge aside, which it implements itself), so no other
kernel ever sees `DEAD`.
"""
from __future__ import annotations

import numpy as np

from nbcluster.runtime.dead_tensor import DEAD
from nbcluster.runtime.kernel_table import register_kernel


def _switch(node, device):
    to_host = device.to_numpy

    def compute(ctx, data, pred):
        taken = bool(np.asarray(to_host(pred)).reshape(-1)[0]) if not isinstance(pred, bool) \
            else pred
        return (DEAD, data) if taken else (data, DEAD)
    return compute


def _forward(node, device):
    return lambda ctx, x: (x,)


for _prefix in ("", "Ref"):
    register_kernel(_prefix + "Switch", "CPU", "GPU")(_switch)
    for _type in ("Enter", "Exit", "NextIteration"):
        register_kernel(_prefix + _type, "CPU", "GPU")(_forward)
register_kernel("LoopCond", "CPU", "GPU")(_forward)


@register_kernel("ControlTrigger", "CPU", "GPU")
def _control_trigger(node, device):
    return lambda ctx: ()


def _merge(node, device):
    # The executor merges (it knows which inputs are live); this serves a plan
    # that hands it exactly the live one.
    def compute(ctx, *inputs):
        for i, value in enumerate(inputs):
            if value is not DEAD:
                return value, np.int32(i)
        return DEAD, DEAD
    return compute


register_kernel("Merge", "CPU", "GPU")(_merge)
register_kernel("RefMerge", "CPU", "GPU")(_merge)


@register_kernel("Assert", "CPU", "GPU")
def _assert(node, device):
    from nbcluster import errors

    summarize = int(node.attrs.get("summarize", 3))

    def compute(ctx, condition, *data):
        if not bool(np.all(device.to_numpy(condition))):
            shown = ", ".join(
                "[" + " ".join(str(v) for v in np.asarray(device.to_numpy(d)).reshape(-1)
                               [:summarize]) + "]" for d in data)
            raise errors.InvalidArgumentError(None, None, f"assertion failed: [{shown}]",
                                              node_name=node.name)
        return ()
    return compute
