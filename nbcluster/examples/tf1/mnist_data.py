"""MNIST-shaped synthetic data for the corpus programs, in the shape of TF1's
`input_data.read_data_sets` (`.train.next_batch`, `.validation.images`).

Rule: NumPy only (no nbcluster, no TensorFlow), so the same program runs on either;
the classes depend only on `task_seed`, the samples only on `seed`.
"""
import collections

import numpy as np

Datasets = collections.namedtuple("Datasets", ["train", "validation"])


class DataSet:
    """Images [n, 784] float32 in about [0, 1] and one-hot labels [n, 10]."""

    def __init__(self, images, labels, seed):
        self.images, self.labels = images, labels
        self._rng = np.random.RandomState(seed)
        self._order, self._at = self._rng.permutation(len(images)), 0

    @property
    def num_examples(self):
        return len(self.images)

    def next_batch(self, batch_size):
        """The next `batch_size` samples, reshuffled at each epoch's end."""
        if self._at + batch_size > len(self._order):
            self._order, self._at = self._rng.permutation(len(self.images)), 0
        rows = self._order[self._at:self._at + batch_size]
        self._at += batch_size
        return self.images[rows], self.labels[rows]


def samples(n, seed, task_seed=1234, noise=0.6):
    """`n` samples: a random class's prototype image plus Gaussian noise."""
    protos_rng = np.random.RandomState(task_seed)
    lit = protos_rng.random_sample((10, 784)) < 0.25
    prototypes = lit * protos_rng.uniform(0.5, 1.0, (10, 784))
    rng = np.random.RandomState(seed)
    classes = rng.randint(0, 10, n)
    images = prototypes[classes] + rng.normal(0.0, noise, (n, 784))
    return images.astype(np.float32), np.eye(10, dtype=np.float32)[classes]


def read_data_sets(seed=0, train_size=4096, validation_size=512):
    """A training set drawn with `seed` and a validation set every caller shares."""
    train = DataSet(*samples(train_size, seed=seed + 1), seed=seed)
    validation = DataSet(*samples(validation_size, seed=99), seed=0)
    return Datasets(train, validation)
