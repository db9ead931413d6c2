"""The kernel table: (op type, device type) -> kernel factory. Kernels (L1 `kernels/`)
write it with `register_kernel` when their module loads; the runtime only reads it, so
runtime/ never imports kernels/.

A factory is called once per node when a graph is planned, with the node
(its attrs bound now, not per step) and the device; it returns the compute
function `compute(ctx, *inputs) -> tuple of outputs`. `device.xp` is numpy
on CPU and cupy on GPU, so most factories serve both device types.
"""
from __future__ import annotations

from typing import Callable

from nbcluster import errors

KernelFactory = Callable  # (node: Node, device: Device) -> compute

_KERNELS: dict[tuple, KernelFactory] = {}


def register_kernel(op_type: str, *device_types: str):
    """Decorator: `factory` serves `op_type` on each of `device_types`."""
    device_types = device_types or ("CPU",)

    def wrap(factory: KernelFactory) -> KernelFactory:
        for device_type in device_types:
            key = (op_type, device_type)
            if key in _KERNELS:
                raise KeyError(f"Kernel for {op_type} on {device_type} is already registered")
            _KERNELS[key] = factory
        return factory

    return wrap


def has_kernel(op_type: str, device_type: str) -> bool:
    return (op_type, device_type) in _KERNELS


def get_kernel_factory(op_type: str, device_type: str) -> KernelFactory:
    try:
        return _KERNELS[(op_type, device_type)]
    except KeyError:
        raise errors.NotFoundError(
            None, None, f"No registered '{op_type}' OpKernel for '{device_type}' devices "
                        f"compatible with node") from None


def registered_kernels() -> dict:
    return dict(_KERNELS)
