"""TensorArray (V3) and stack (V2) kernels: per-step lists in `ctx.step_state`.

Rule: a handle is a 2-element string vector (TF's layout: container, name)
naming an entry of the step's state, which the frame executor gives every
step of a partition with these ops. A gradient array (TensorArrayGradV3)
adds up what is written to one index, and reads zeros (of the forward
element's shape) where nothing was written, as TF's gradient arrays do.
"""
from __future__ import annotations

import itertools

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.runtime.kernel_table import register_kernel

_IDS = itertools.count(1)


class _Array:
    def __init__(self, dtype, size: int, dynamic: bool, clear_after_read: bool,
                 forward=None) -> None:
        self.dtype, self.dynamic, self.clear = dtype, dynamic, clear_after_read
        self.values: list = [None] * size
        self.forward = forward      # a gradient array's forward array
        self.closed = False

    def check(self, index: int, node, writing: bool) -> None:
        if self.closed:
            raise _invalid(f"TensorArray {node.name} has already been closed.", node)
        if index < 0 or (index >= len(self.values) and not (writing and self.dynamic)):
            raise _invalid(f"Tried to {'write to' if writing else 'read from'} index {index} "
                           f"but array size is: {len(self.values)}", node)
        if index >= len(self.values):
            self.values.extend([None] * (index + 1 - len(self.values)))

    def write(self, index: int, value, node) -> None:
        self.check(index, node, True)
        old = self.values[index]
        if old is not None and self.forward is not None:
            value = old + value
        elif old is not None:
            raise _invalid(f"Could not write to TensorArray index {index} because it has "
                           f"already been written to.", node)
        self.values[index] = value

    def read(self, index: int, node):
        self.check(index, node, False)
        value = self.values[index]
        if value is None:
            shape = None
            if self.forward is not None and index < len(self.forward.values) and \
                    self.forward.values[index] is not None:
                shape = np.shape(self.forward.values[index])
            if shape is None:
                raise _invalid(f"Could not read from TensorArray index {index}.  Furthermore, "
                               f"the element shape is not fully defined: <unknown>.  It is "
                               f"possible you are working with a resizeable TensorArray and "
                               f"stop_gradients is not allowing the gradients to be written."
                               f"  If you set the full element_shape property on the forward "
                               f"TensorArray, the proper all-zeros tensor will be returned "
                               f"instead of incurring this error.", node)
            return np.zeros(shape, self.dtype.as_numpy_dtype)
        return value


def _invalid(message: str, node) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message, node_name=node.name)


def _state(ctx) -> dict:
    try:
        return ctx.step_state
    except AttributeError:  # a plan without the frame executor: never for these ops
        raise errors.InternalError(None, None, "TensorArray ops need the frame executor") \
            from None


def _array(ctx, handle, node) -> _Array:
    key = str(np.asarray(handle).reshape(-1)[-1])
    array = _state(ctx).get(("ta", key))
    if array is None:
        raise errors.NotFoundError(None, None, f"Container __per_step_{ctx.step_id} does not "
                                               f"exist. (Could not find resource: {key})",
                                   node_name=node.name)
    return array


def _handle(name: str) -> np.ndarray:
    value = np.array(["_tensor_arrays", name], dtype=object)
    value.flags.writeable = False
    return value


_FLOW = np.float32(0.0)


@register_kernel("TensorArrayV3", "CPU", "GPU")
def _create(node, device):
    dtype = dtypes.as_dtype(node.attrs["dtype"])
    dynamic = bool(node.attrs.get("dynamic_size", False))
    clear = bool(node.attrs.get("clear_after_read", True))
    base = node.attrs.get("tensor_array_name") or node.name

    def compute(ctx, size):
        name = f"{base}_{next(_IDS)}"
        _state(ctx)[("ta", name)] = _Array(dtype, int(device.to_numpy(size)), dynamic, clear)
        return _handle(name), _FLOW
    return compute


@register_kernel("TensorArrayGradV3", "CPU", "GPU")
def _grad(node, device):
    source = node.attrs.get("source", "")

    def compute(ctx, handle, flow):
        forward = _array(ctx, handle, node)
        name = f"{str(np.asarray(handle).reshape(-1)[-1])}@{source}"
        state = _state(ctx)
        if ("ta", name) not in state:
            state[("ta", name)] = _Array(forward.dtype, len(forward.values), True, False,
                                         forward=forward)
        return _handle(name), _FLOW
    return compute


@register_kernel("TensorArrayWriteV3", "CPU", "GPU")
def _write(node, device):
    def compute(ctx, handle, index, value, flow):
        _array(ctx, handle, node).write(int(device.to_numpy(index)), value, node)
        return (_FLOW,)
    return compute


@register_kernel("TensorArrayReadV3", "CPU", "GPU")
def _read(node, device):
    def compute(ctx, handle, index, flow):
        array = _array(ctx, handle, node)
        i = int(device.to_numpy(index))
        # Reads never clear (TF's clear_after_read): a loop's gradient reads again.
        return (array.read(i, node),)
    return compute


@register_kernel("TensorArrayGatherV3", "CPU", "GPU")
def _gather(node, device):
    element = node.attrs.get("element_shape")

    def compute(ctx, handle, indices, flow):
        array = _array(ctx, handle, node)
        idx = [int(i) for i in np.asarray(device.to_numpy(indices)).reshape(-1)]
        if not idx:
            dims = element.as_list() if element is not None and element.is_fully_defined() \
                else [0]
            return (device.xp.zeros([0] + list(dims), array.dtype.as_numpy_dtype),)
        values = [array.read(i, node) for i in idx]
        shapes = {np.shape(v) for v in values}
        if len(shapes) > 1:
            raise _invalid(f"TensorArray has inconsistent shapes: {sorted(shapes)}", node)
        return (device.xp.stack(values),)
    return compute


@register_kernel("TensorArrayScatterV3", "CPU", "GPU")
def _scatter(node, device):
    def compute(ctx, handle, indices, value, flow):
        array = _array(ctx, handle, node)
        idx = [int(i) for i in np.asarray(device.to_numpy(indices)).reshape(-1)]
        if len(idx) != value.shape[0]:
            raise _invalid(f"Expected len(indices) == values.shape[0], but saw: {len(idx)} "
                           f"vs. {value.shape[0]}", node)
        for k, i in enumerate(idx):
            array.write(i, value[k], node)
        return (_FLOW,)
    return compute


@register_kernel("TensorArrayConcatV3", "CPU", "GPU")
def _concat(node, device):
    def compute(ctx, handle, flow):
        array = _array(ctx, handle, node)
        values = [array.read(i, node) for i in range(len(array.values))]
        lengths = np.array([np.shape(v)[0] for v in values], np.int64)
        return device.xp.concatenate(values) if values else device.xp.zeros(
            [0], array.dtype.as_numpy_dtype), lengths
    return compute


@register_kernel("TensorArraySplitV3", "CPU", "GPU")
def _split(node, device):
    def compute(ctx, handle, value, lengths, flow):
        array = _array(ctx, handle, node)
        sizes = [int(n) for n in np.asarray(device.to_numpy(lengths)).reshape(-1)]
        if sum(sizes) != value.shape[0]:
            raise _invalid(f"Expected sum of lengths to be equal to values.shape[0], but sum "
                           f"of lengths is {sum(sizes)} and value's shape is: "
                           f"{list(value.shape)}", node)
        offset = 0
        for i, n in enumerate(sizes):
            array.write(i, value[offset:offset + n], node)
            offset += n
        return (_FLOW,)
    return compute


@register_kernel("TensorArraySizeV3", "CPU", "GPU")
def _size(node, device):
    return lambda ctx, handle, flow: (np.int32(len(_array(ctx, handle, node).values)),)


@register_kernel("TensorArrayCloseV3", "CPU", "GPU")
def _close(node, device):
    def compute(ctx, handle):
        _array(ctx, handle, node).closed = True
        return ()
    return compute


# -- stacks --------------------------------------------------------------------
@register_kernel("StackV2", "CPU", "GPU")
def _stack(node, device):
    def compute(ctx, max_size):
        name = f"{node.name}_{next(_IDS)}"
        _state(ctx)[("stack", name)] = []
        return (np.array(name, dtype=object),)
    return compute


def _stack_of(ctx, handle, node) -> list:
    key = str(np.asarray(handle).reshape(-1)[-1])
    stack = _state(ctx).get(("stack", key))
    if stack is None:
        raise errors.NotFoundError(None, None, f"Could not find stack {key}",
                                   node_name=node.name)
    return stack


@register_kernel("StackPushV2", "CPU", "GPU")
def _push(node, device):
    def compute(ctx, handle, elem):
        _stack_of(ctx, handle, node).append(elem)
        return (elem,)
    return compute


@register_kernel("StackPopV2", "CPU", "GPU")
def _pop(node, device):
    def compute(ctx, handle):
        stack = _stack_of(ctx, handle, node)
        if not stack:
            raise _invalid("Stack is empty.", node)
        return (stack.pop(),)
    return compute


@register_kernel("StackCloseV2", "CPU", "GPU")
def _stack_close(node, device):
    def compute(ctx, handle):
        _stack_of(ctx, handle, node).clear()
        return ()
    return compute
