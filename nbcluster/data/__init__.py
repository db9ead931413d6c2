"""tf.data in graph mode (tf.data, tf.compat.v1.data): datasets as graph ops with
TensorFlow's op types, read through iterators in a session.

`dataset.py` holds Dataset and its transformations, `sources.py` the datasets
made from values, `readers.py` the file datasets, `iterators.py` the
iterators, `functions.py` the tracing of map/filter/interleave functions;
the kernels are in kernels/data*.py.

Example:
  >>> import nbcluster as tf
  >>> ds = tf.data.Dataset.from_tensor_slices([1, 2, 3]).map(lambda x: x * 10)
  >>> x = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
  >>> # with tf.Session() as s: s.run(x) -> 10, 20, 30, then OutOfRangeError
"""
from nbcluster.data import experimental
from nbcluster.data.dataset import Dataset, DatasetV1, DatasetV2
from nbcluster.data.dataset_value import AUTOTUNE
from nbcluster.data.iterators import Iterator, make_initializable_iterator, make_one_shot_iterator
from nbcluster.data.readers import TextLineDataset, TFRecordDataset
from nbcluster.data.structure import TensorSpec


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes


__all__ = ["AUTOTUNE", "Dataset", "DatasetV1", "DatasetV2", "Iterator", "TFRecordDataset",
           "TensorSpec", "TextLineDataset", "experimental", "get_output_classes",
           "get_output_shapes", "get_output_types", "make_initializable_iterator",
           "make_one_shot_iterator"]
