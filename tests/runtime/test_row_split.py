"""runtime/row_split.py: one MatMul in blocks over our own threads gives np.matmul's
values, from any number of callers at once, and a block's error reaches its caller."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from nbcluster.runtime import row_split

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(128, 784, 256), (784, 128, 256), (10, 64, 300), (33, 7, 40)])
def test_blocks_give_the_values_of_one_call(ta, tb, m, k, n):
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    a, b = (a.T if ta else a), (b.T if tb else b)
    assert row_split.splittable(a, b)
    for threads in (2, 3):
        got = row_split.matmul(a, b, threads)
        assert got.dtype == np.float32 and got.shape == (m, n)
        # Another block size sums in another order: float32 rounding only.
        np.testing.assert_allclose(got, np.matmul(a.astype(np.float64), b), rtol=1e-4,
                                   atol=1e-4 * np.sqrt(k))


def test_only_two_dimensional_blas_types_with_room_for_two_blocks_are_split():
    f = np.ones((64, 64), np.float32)
    assert row_split.splittable(f, f)
    assert not row_split.splittable(f.astype(np.int32), f.astype(np.int32))
    assert not row_split.splittable(f, f.astype(np.float64))
    assert not row_split.splittable(np.ones((8, 64), np.float32), np.ones((64, 8), np.float32))
    assert not row_split.splittable(np.ones((2, 64, 64), np.float32), f)


def test_callers_on_several_threads_each_get_their_own_product():
    rng = np.random.default_rng(1)
    pairs = [(rng.standard_normal((96, 50)), rng.standard_normal((50, 80))) for _ in range(6)]
    results, errors = {}, []

    def work(i):
        try:
            a, b = pairs[i]
            for _ in range(30):
                results[i] = row_split.matmul(a, b, 2)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and not any(t.is_alive() for t in threads)
    for i, (a, b) in enumerate(pairs):
        np.testing.assert_allclose(results[i], a @ b, rtol=1e-12)


def test_an_error_in_any_block_reaches_the_caller_and_the_helpers_go_on():
    seen = []

    def block(lo, hi):
        seen.append(lo)
        if lo == 3:
            raise MemoryError("block 3")

    for _ in range(5):  # whichever thread ran the failing block
        with pytest.raises(MemoryError, match="block 3"):
            row_split.run_blocks(block, [(i, i + 1) for i in range(6)], 2)
    assert seen.count(3) == 5  # blocks after the failure may be left undone
    a = np.ones((64, 32), np.float32)
    np.testing.assert_array_equal(row_split.matmul(a, a.T, 2), np.full((64, 64), 32.0))


def test_a_product_leaves_no_reference_to_its_operands():
    # A finished job left in the queue until a helper next looked kept its
    # operands alive, so a variable's array read by a split MatMul was copied on
    # its update instead of updated in place (VariableResource.sole_array).
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 96)).astype(np.float32)
    before = sys.getrefcount(a), sys.getrefcount(b)
    for _ in range(20):  # helpers often still asleep when the caller is done
        row_split.matmul(a, b, 2)
        assert (sys.getrefcount(a), sys.getrefcount(b)) == before
