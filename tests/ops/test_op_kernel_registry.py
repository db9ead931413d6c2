"""Registry sweep: every op type has a CPU kernel, and every kernel serves a known op.

Adding an op touches ops/<family>.py and kernels/<family>.py; this test fails
when one half is missing. It loads every module of both packages, so it
covers families it does not name.
"""
import importlib
import pkgutil

import pytest

import nbcluster  # noqa: F401 - also registers ops defined outside ops/ (Const, ...)
import nbcluster.kernels
import nbcluster.ops
from nbcluster.framework.op_registry import registered_ops
from nbcluster.kernels.registry import registered_kernels

pytestmark = pytest.mark.timeout(60)


def _load_all_families() -> None:
    for package in (nbcluster.ops, nbcluster.kernels):
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
    nbcluster.kernels.load_all()


def test_every_op_has_a_cpu_kernel():
    _load_all_families()
    kernels = registered_kernels()
    missing = sorted(op for op in registered_ops() if (op, "CPU") not in kernels)
    assert not missing, f"op types with no CPU kernel: {missing}"


def test_every_kernel_serves_a_registered_op():
    _load_all_families()
    ops = registered_ops()
    orphans = sorted({op for op, _ in registered_kernels() if op not in ops})
    assert not orphans, f"kernels for unregistered op types: {orphans}"


def test_gpu_kernels_have_cpu_twins():
    _load_all_families()
    kernels = registered_kernels()
    lonely = sorted(op for op, device in kernels if device == "GPU" and (op, "CPU") not in kernels)
    assert not lonely, f"op types with a GPU kernel but no CPU kernel: {lonely}"
