"""Registry sweep: every op type has a CPU kernel, and every kernel serves a known op.

Adding an op touches ops/<family>.py and kernels/<family>.py; this test fails
when one half is missing. It loads every module of both packages, so it
covers families it does not name.
"""
import pytest

from nbcluster.framework.op_registry import registered_ops
from nbcluster.runtime.kernel_table import registered_kernels

from op_families import load_every_op_family

pytestmark = pytest.mark.timeout(60)


def test_every_op_has_a_cpu_kernel():
    load_every_op_family()
    kernels = registered_kernels()
    missing = sorted(op for op in registered_ops() if (op, "CPU") not in kernels)
    assert not missing, f"op types with no CPU kernel: {missing}"


def test_every_kernel_serves_a_registered_op():
    load_every_op_family()
    ops = registered_ops()
    orphans = sorted({op for op, _ in registered_kernels() if op not in ops})
    assert not orphans, f"kernels for unregistered op types: {orphans}"


def test_gpu_kernels_have_cpu_twins():
    load_every_op_family()
    kernels = registered_kernels()
    lonely = sorted(op for op, device in kernels if device == "GPU" and (op, "CPU") not in kernels)
    assert not lonely, f"op types with a GPU kernel but no CPU kernel: {lonely}"
