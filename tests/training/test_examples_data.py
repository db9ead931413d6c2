"""nbcluster.examples: the synthetic data set is deterministic and one task across
seeds; the MLP builds with its documented tensors."""
import numpy as np
import pytest

from nbcluster.examples.mlp import build_mlp
from nbcluster.examples.synthetic import Batches, mnist_like, prototypes

pytestmark = pytest.mark.timeout(60)


def test_mnist_like_is_deterministic_and_one_task_across_seeds():
    x, y = mnist_like(300, seed=4)
    x2, y2 = mnist_like(300, seed=4)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    assert x.dtype == y.dtype == np.float32 and x.shape == (300, 784) and y.shape == (300, 10)
    np.testing.assert_array_equal(y.sum(axis=1), np.ones(300))
    other, _ = mnist_like(300, seed=5)
    assert not np.array_equal(x, other)
    # Any seed's samples sit nearest their own class prototype: one task for all seeds.
    for seed in (4, 5):
        xs, ys = mnist_like(300, seed=seed)
        dist = ((xs[:, None, :] - prototypes()[None]) ** 2).sum(axis=2)
        assert (dist.argmin(axis=1) == ys.argmax(axis=1)).mean() > 0.99


def test_mnist_like_errors_and_batches():
    with pytest.raises(ValueError, match="-1"):
        mnist_like(-1)
    with pytest.raises(ValueError, match="noise"):
        mnist_like(3, noise=-0.5)
    x, y = mnist_like(10, seed=0)
    with pytest.raises(ValueError, match="batch_size"):
        Batches(x, y, 11)
    batches = Batches(x, y, 4, seed=0)
    seen = [batches.next() for _ in range(5)]
    assert all(bx.shape == (4, 784) and by.shape == (4, 10) for bx, by in seen)
    first_epoch = np.concatenate([bx for bx, _ in seen[:2]])
    assert len({row.tobytes() for row in first_epoch}) == 8  # no repeats within an epoch


def test_build_mlp_tensors():
    model = build_mlp(hidden=16)
    assert [v.op.name for v in model.variables] == ["hid_w", "hid_b", "sm_w", "sm_b"]
    assert model.weights[0].shape.as_list() == [784, 16]
    assert model.logits.shape.as_list() == [None, 10]
    assert model.train_op is None and model.global_step is None
    with pytest.raises(ValueError, match="hidden must be positive, got 0"):
        build_mlp(hidden=0)
