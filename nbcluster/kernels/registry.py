"""Facade: the kernel table lives in `runtime/kernel_table.py` (the runtime reads it, kernels
write it). This defines nothing; it keeps `nbcluster.kernels.registry` importing for kernel
modules written against the old path."""
from nbcluster.runtime.kernel_table import (  # noqa: F401
                                            get_kernel_factory,
                                            has_kernel,
                                            register_kernel,
                                            registered_kernels,
)
