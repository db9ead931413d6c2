"""Synthetic, learnable classification data from fixed seeds: nothing is downloaded.

Rule: the task (the class prototypes) depends only on `task_seed`, the samples
only on `seed`, so two workers drawing with different seeds learn one task.
"""
from __future__ import annotations

import numpy as np

NUM_CLASSES = 10
IMAGE_PIXELS = 784  # 28 x 28, as MNIST


def prototypes(task_seed: int = 1234, num_classes: int = NUM_CLASSES,
               dim: int = IMAGE_PIXELS) -> np.ndarray:
    """The class prototypes: [num_classes, dim] float32, each a sparse "image" in [0, 1].

    Each prototype lights up about a quarter of the pixels, so classes overlap
    (as digits do) yet a small MLP separates them.
    """
    rng = np.random.default_rng(task_seed)
    lit = rng.random((num_classes, dim)) < 0.25
    return (lit * rng.uniform(0.5, 1.0, (num_classes, dim))).astype(np.float32)


def mnist_like(n: int, seed: int = 0, noise: float = 1.0, task_seed: int = 1234,
               num_classes: int = NUM_CLASSES, dim: int = IMAGE_PIXELS) -> tuple:
    """`n` labelled samples: a random class's prototype plus Gaussian noise.

    Args:
      n: how many samples.
      seed: the samples' seed (which classes, which noise).
      noise: the noise's standard deviation per pixel.
      task_seed: the prototypes' seed; keep it to keep the task.
      num_classes: number of classes.
      dim: pixels per sample.
    Returns: (x float32 [n, dim], y_onehot float32 [n, num_classes]).
    Raises:
      ValueError: n is negative or noise is negative.
    Example:
      >>> x, y = mnist_like(128, seed=1)
      >>> x.shape, y.shape, float(y.sum())
      ((128, 784), (128, 10), 128.0)
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    protos = prototypes(task_seed, num_classes, dim)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, n)
    x = protos[labels] + rng.normal(0.0, noise, (n, dim)).astype(np.float32)
    y = np.eye(num_classes, dtype=np.float32)[labels]
    return x.astype(np.float32), y


class Batches:
    """An endless stream of (x, y) batches from one fixed sample set, reshuffled each epoch.

    Args:
      x, y: the samples, as `mnist_like` returns them.
      batch_size: rows per batch.
      seed: the shuffling seed.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, seed: int = 0) -> None:
        if batch_size < 1 or batch_size > len(x):
            raise ValueError(f"batch_size must be in [1, {len(x)}], got {batch_size}")
        self._x, self._y, self._batch = x, y, batch_size
        self._rng = np.random.default_rng(seed)
        self._order = self._rng.permutation(len(x))
        self._at = 0

    def next(self) -> tuple:
        """The next (x, y) batch."""
        if self._at + self._batch > len(self._order):
            self._order, self._at = self._rng.permutation(len(self._x)), 0
        rows = self._order[self._at:self._at + self._batch]
        self._at += self._batch
        return self._x[rows], self._y[rows]
