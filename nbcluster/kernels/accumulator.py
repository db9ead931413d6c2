"""Kernels for ConditionalAccumulator: an AccumulatorResource per (container, name).

Rule: every change happens under the resource's condition lock, and a waiting
take is served by the apply that completes it (as TF does), so no gradient can
slip in between "enough arrived" and "taken".
"""
from __future__ import annotations

import collections
import logging
import threading
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.runtime.kernel_table import register_kernel

logger = logging.getLogger(__name__)


class _Take:
    """One waiting AccumulatorTakeGradient: how many it needs, and its result."""

    def __init__(self, num_required: int) -> None:
        self.num_required = num_required
        self.result: Optional[np.ndarray] = None


class AccumulatorResource:
    """Sums gradients of local_step >= its global step; serves takes in order."""

    def __init__(self, name: str, dtype, shape, reduction_type: str) -> None:
        self.name = name
        self.dtype = dtype.as_numpy_dtype
        self.shape = shape  # a TensorShape, maybe partial
        self.reduction_type = reduction_type
        self.global_step = 0
        self.count = 0
        self.total: Optional[np.ndarray] = None
        self.takes: collections.deque = collections.deque()
        self.cond = threading.Condition()

    def _check_shape(self, grad: np.ndarray, node_name: str) -> None:
        # The first gradient fixes a partially known shape for later ones.
        expected = self.total.shape if self.total is not None else None
        if not self.shape.is_compatible_with(grad.shape) or \
                (expected is not None and expected != grad.shape):
            want = list(expected) if expected is not None else self.shape
            raise errors.InvalidArgumentError(
                None, None, f"Shape mismatch in ConditionalAccumulator '{self.name}': "
                            f"gradient shape {list(grad.shape)}, expected {want}",
                node_name=node_name)

    def apply(self, local_step: int, grad: np.ndarray, node_name: str) -> None:
        grad = np.asarray(grad)
        with self.cond:
            self._check_shape(grad, node_name)
            if local_step < self.global_step:
                logger.info("Dropped a stale gradient of step %d in accumulator %s "
                            "(at step %d)", local_step, self.name, self.global_step)
                return
            if self.total is None:
                self.total = np.array(grad, dtype=self.dtype)  # a private, writable copy
            else:
                self.total += grad
            self.count += 1
            self._serve()

    def _serve(self) -> None:
        # Called with the lock held, after anything that may complete a take.
        if self.takes and self.count >= self.takes[0].num_required:
            take = self.takes.popleft()
            total, count = self.total, self.count
            if self.reduction_type == "MEAN":
                total = (total / count).astype(self.dtype)
            take.result = total
            self.total, self.count = None, 0
            self.global_step += 1
            self.cond.notify_all()

    def take(self, ctx, num_required: int, node_name: str) -> np.ndarray:
        if num_required < 1:
            raise errors.InvalidArgumentError(
                None, None, f"Argument num_required must be positive, but was "
                            f"{num_required}", node_name=node_name)
        take = _Take(num_required)
        with self.cond:
            self.takes.append(take)
            self._serve()
            try:
                ctx.wait(self.cond, lambda: take.result is not None,
                         f"{num_required} gradient(s) in accumulator {self.name}")
            finally:
                if take.result is None:
                    self.takes.remove(take)  # cancelled or timed out: stop waiting
        return take.result

    def set_global_step(self, step: int) -> None:
        with self.cond:
            if step < self.global_step:
                logger.warning("Accumulator %s: global step set back from %d to %d",
                               self.name, self.global_step, step)
            self.global_step = step


@register_kernel("ResourceConditionalAccumulator", "CPU")
@register_kernel("ConditionalAccumulator", "CPU")
def _accumulator(node, device):
    container = node.attrs.get("container") or None
    name = node.attrs.get("shared_name") or node.name
    dtype, shape = node.attrs["dtype"], node.attrs["shape"]
    reduction = node.attrs.get("reduction_type") or "MEAN"

    def accumulator(ctx):
        return (ctx.resources.lookup_or_create(
            container or ctx.default_container, name,
            lambda: AccumulatorResource(node.name, dtype, shape, reduction),
            AccumulatorResource),)
    return accumulator


@register_kernel("ResourceAccumulatorApplyGradient", "CPU")
@register_kernel("AccumulatorApplyGradient", "CPU")
def _apply_gradient(node, device):
    def apply_gradient(ctx, accumulator, local_step, gradient):
        accumulator.apply(int(local_step), gradient, node.name)
        return ()
    return apply_gradient


@register_kernel("ResourceAccumulatorTakeGradient", "CPU")
@register_kernel("AccumulatorTakeGradient", "CPU")
def _take_gradient(node, device):
    def take_gradient(ctx, accumulator, num_required):
        return (accumulator.take(ctx, int(num_required), node.name),)
    return take_gradient


@register_kernel("ResourceAccumulatorNumAccumulated", "CPU")
@register_kernel("AccumulatorNumAccumulated", "CPU")
def _num_accumulated(node, device):
    def num_accumulated(ctx, accumulator):
        with accumulator.cond:
            return (np.asarray(accumulator.count, dtype=np.int32),)
    return num_accumulated


@register_kernel("ResourceAccumulatorSetGlobalStep", "CPU")
@register_kernel("AccumulatorSetGlobalStep", "CPU")
def _set_global_step(node, device):
    def set_global_step(ctx, accumulator, new_global_step):
        accumulator.set_global_step(int(new_global_step))
        return ()
    return set_global_step
