"""Kernels of the Optional ops: an optional is a tuple of tensors, or None for no value."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.runtime.kernel_table import register_kernel


@dataclass(frozen=True)
class OptionalValue:
    """An Optional value: its components, or None where it has none."""

    components: Optional[tuple]

    def zeros_like(self) -> "OptionalValue":
        """ZerosLike of an optional: one with zeros of its components (TF2 cond gradients)."""
        if self.components is None:
            return self
        return OptionalValue(tuple(np.zeros_like(c) for c in self.components))


def _optional(node, value) -> OptionalValue:
    if not isinstance(value, OptionalValue):
        raise errors.InvalidArgumentError(
            None, None, f"Input to {node.op} is not an optional (got {type(value).__name__})",
            node_name=node.name)
    return value


@register_kernel("OptionalFromValue", "CPU")
def _from_value(node, device):
    return lambda ctx, *components: (OptionalValue(tuple(components)),)


@register_kernel("OptionalNone", "CPU")
def _none(node, device):
    return lambda ctx: (OptionalValue(None),)


@register_kernel("OptionalHasValue", "CPU")
def _has_value(node, device):
    return lambda ctx, optional: (np.bool_(_optional(node, optional).components is not None),)


@register_kernel("OptionalGetValue", "CPU")
def _get_value(node, device):
    def get_value(ctx, optional):
        components = _optional(node, optional).components
        if components is None:
            raise errors.InvalidArgumentError(None, None, "The optional does not have a value.",
                                              node_name=node.name)
        return components
    return get_value
