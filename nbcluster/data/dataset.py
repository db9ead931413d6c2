"""tf.data.Dataset in graph mode: each method adds one dataset op (TF's op types) to
the default graph and returns a Dataset holding its DT_VARIANT output.

A Dataset is a recipe: nothing runs until an iterator made of it is
initialised and read (data/iterators.py), and then on the device its ops
were placed on (a worker's input pipeline on that worker). The dataset ops
and their iterator are one colocation group (ops/data.py). The modules that
build its ops (sources, padding, readers) return (variant, element_spec) pairs
(data/dataset_value.py), which only this module wraps as Datasets.

Example:
  >>> ds = Dataset.range(10).map(lambda x: x * 2).batch(4)
  >>> ds.output_shapes
  TensorShape([None])
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from nbcluster.data import padding, sources, structure
from nbcluster.data.dataset_value import (
    AUTOTUNE,
    DatasetValue,
    add_dataset_op,
    batched,
    int64_input,
    static_rows,
)
from nbcluster.data.functions import trace
from nbcluster.data.iterators import make_initializable_iterator, make_one_shot_iterator
from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.tensor_shape import TensorShape


class Dataset(DatasetValue):
    """A graph-mode tf.data dataset (tf.data.Dataset, tf.compat.v1.data.Dataset): a
    DatasetValue (its variant tensor and element spec) and the methods that make
    new datasets of it.
    """

    # -- sources (data/sources.py) -----------------------------------------------------
    @staticmethod
    def from_tensors(tensors, name: Optional[str] = None) -> "Dataset":
        return Dataset(*sources.from_tensors(tensors, name))

    @staticmethod
    def from_tensor_slices(tensors, name: Optional[str] = None) -> "Dataset":
        return Dataset(*sources.from_tensor_slices(tensors, name))

    @staticmethod
    def range(*args, output_type=dtypes.int64, name: Optional[str] = None) -> "Dataset":
        return Dataset(*sources.range_(*args, output_type=output_type, name=name))

    @staticmethod
    def from_generator(generator: Callable, output_types=None, output_shapes=None,
                       args=None, output_signature=None, name: Optional[str] = None):
        return Dataset(*sources.from_generator(generator, output_types, output_shapes, args,
                                               output_signature, name))

    @staticmethod
    def zip(*datasets, name: Optional[str] = None) -> "Dataset":
        """Elements of `datasets` (a tuple, dict or nest of Datasets) side by side."""
        nest = datasets[0] if len(datasets) == 1 and not isinstance(datasets[0], Dataset) \
            else tuple(datasets)
        leaves = structure.flatten(nest)
        for d in leaves:
            if not isinstance(d, Dataset):
                raise TypeError(f"Invalid `datasets`. `datasets` is expected to be a (nested) "
                                f"structure of `tf.data.Dataset` objects, got {d!r}")
        spec = structure.pack_as(nest, [d.element_spec for d in leaves])
        return make_dataset("ZipDataset", [d._variant for d in leaves], spec,
                            {"N": len(leaves)}, name)

    # -- transformations ---------------------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls=None, deterministic=None,
            name: Optional[str] = None) -> "Dataset":
        """`map_func` over each element; `num_parallel_calls` (or AUTOTUNE) elements
        at a time on the dataset's task, in input order."""
        traced = trace(map_func, self._element_spec, "map_func")
        attrs = {"f": traced.func, "Targuments": [t.dtype.base_dtype for t in traced.captured],
                 "use_inter_op_parallelism": True, "preserve_cardinality": True}
        inputs = [self._variant] + traced.captured
        if num_parallel_calls is None:
            return make_dataset("MapDataset", inputs, traced.output_spec, attrs, name)
        attrs["deterministic"] = "default" if deterministic is None else \
            ("true" if deterministic else "false")
        inputs.append(int64_input(num_parallel_calls, "num_parallel_calls"))
        return make_dataset("ParallelMapDatasetV2", inputs, traced.output_spec, attrs, name)

    def filter(self, predicate: Callable, name: Optional[str] = None) -> "Dataset":
        traced = trace(predicate, self._element_spec, "predicate", returns="bool")
        attrs = {"predicate": traced.func,
                 "Targuments": [t.dtype.base_dtype for t in traced.captured]}
        return make_dataset("FilterDataset", [self._variant] + traced.captured,
                            self._element_spec, attrs, name)

    def interleave(self, map_func: Callable, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None,
                   name: Optional[str] = None) -> "Dataset":
        """Datasets from `map_func`, `cycle_length` open at once, `block_length`
        elements from each in turn (num_parallel_calls: read in order here)."""
        traced = trace(map_func, self._element_spec, "map_func", returns="dataset")
        attrs = {"f": traced.func, "Targuments": [t.dtype.base_dtype for t in traced.captured]}
        inputs = [self._variant] + traced.captured + [
            int64_input(AUTOTUNE if cycle_length is None else cycle_length, "cycle_length"),
            int64_input(1 if block_length is None else block_length, "block_length")]
        return make_dataset("InterleaveDataset", inputs, traced.output_spec, attrs, name)

    def flat_map(self, map_func: Callable, name: Optional[str] = None) -> "Dataset":
        traced = trace(map_func, self._element_spec, "map_func", returns="dataset")
        attrs = {"f": traced.func, "Targuments": [t.dtype.base_dtype for t in traced.captured]}
        return make_dataset("FlatMapDataset", [self._variant] + traced.captured,
                            traced.output_spec, attrs, name)

    def batch(self, batch_size, drop_remainder: bool = False, num_parallel_calls=None,
              deterministic=None, name: Optional[str] = None) -> "Dataset":
        size = int64_input(batch_size, "batch_size")
        drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
        rows = static_rows(size, drop)
        spec = structure.with_leaves(self._element_spec, lambda s: structure.TensorSpec(
            batched(s.shape, rows), s.dtype))
        return make_dataset("BatchDatasetV2", [self._variant, size, drop], spec,
                            {"parallel_copy": False}, name)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        return Dataset(*padding.padded_batch(self, batch_size, padded_shapes, padding_values,
                                             drop_remainder, name))

    def shuffle(self, buffer_size, seed: Optional[int] = None,
                reshuffle_each_iteration: bool = True, name: Optional[str] = None):
        """Elements drawn at random from a buffer of `buffer_size`; a seed (this op's or
        the graph's) gives the same orders every run."""
        from nbcluster.ops.random import get_seed
        seed1, seed2 = get_seed(seed)
        graph = get_default_graph()
        generator = graph.create_op("DummySeedGenerator", [], {}).outputs[0]
        inputs = [self._variant, int64_input(buffer_size, "buffer_size"),
                  int64_input(seed1 or 0, "seed"), int64_input(seed2 or 0, "seed2"), generator]
        return make_dataset("ShuffleDatasetV3", inputs, self._element_spec,
                            {"reshuffle_each_iteration": bool(reshuffle_each_iteration)}, name)

    def repeat(self, count=None, name: Optional[str] = None) -> "Dataset":
        return make_dataset("RepeatDataset",
                            [self._variant, int64_input(-1 if count is None else count, "count")],
                            self._element_spec, name=name)

    def take(self, count, name: Optional[str] = None) -> "Dataset":
        return make_dataset("TakeDataset", [self._variant, int64_input(count, "count")],
                            self._element_spec, name=name)

    def skip(self, count, name: Optional[str] = None) -> "Dataset":
        return make_dataset("SkipDataset", [self._variant, int64_input(count, "count")],
                            self._element_spec, name=name)

    def cache(self, filename: str = "", name: Optional[str] = None) -> "Dataset":
        """Elements kept in memory by the first whole pass; later passes replay them
        (a file name is UnimplementedError when it runs)."""
        file = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        return make_dataset("CacheDataset", [self._variant, file], self._element_spec,
                            name=name)

    def unbatch(self, name: Optional[str] = None) -> "Dataset":
        """Each element's rows as elements of their own.

        Raises:
          ValueError: a component is a scalar.
        """
        for s in structure.flatten(self._element_spec):
            if s.shape.rank == 0:
                raise ValueError("Cannot unbatch an input with scalar components.")
        spec = structure.with_leaves(self._element_spec, lambda s: structure.TensorSpec(
            TensorShape(s.shape.as_list()[1:]) if s.shape.rank else TensorShape(None),
            s.dtype))
        return make_dataset("UnbatchDataset", [self._variant], spec, name=name)

    def enumerate(self, start=0, name: Optional[str] = None) -> "Dataset":
        """(index, element) pairs, indices counting from `start` (TF's: a zip with a range)."""
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self), name=name)

    def shard(self, num_shards, index, name: Optional[str] = None) -> "Dataset":
        """Every `num_shards`-th element, from the `index`-th on."""
        return make_dataset("ShardDataset", [self._variant, int64_input(num_shards, "num_shards"),
                                             int64_input(index, "index")], self._element_spec,
                            {"require_non_empty": False}, name)

    def prefetch(self, buffer_size, name: Optional[str] = None) -> "Dataset":
        return make_dataset("PrefetchDataset",
                            [self._variant, int64_input(buffer_size, "buffer_size")],
                            self._element_spec, {"slack_period": 0, "legacy_autotune": True,
                                                 "buffer_size_min": 0}, name)

    def concatenate(self, dataset: "Dataset", name: Optional[str] = None) -> "Dataset":
        """This dataset's elements, then `dataset`'s.

        Raises:
          TypeError: the two have different structures or dtypes.
        """
        a, b = self._element_spec, dataset.element_spec
        if not structure.same_structure(a, b) or \
                structure.dtypes_of(a) != structure.dtypes_of(b):
            raise TypeError(f"Incompatible dataset elements:\n  {a}\nvs.  {b}")
        spec = structure.pack_as(a, [structure.TensorSpec(structure.merged_shapes(
            x.shape, y.shape), x.dtype) for x, y in zip(structure.flatten(a),
                                                        structure.flatten(b))])
        return make_dataset("ConcatenateDataset", [self._variant, dataset._variant], spec,
                            name=name)

    def apply(self, transformation_func: Callable) -> "Dataset":
        """`transformation_func(self)`, which must return a Dataset.

        Raises:
          TypeError: it returned something else.
        """
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"`transformation_func` must return a `tf.data.Dataset` object, "
                            f"got {result!r}")
        return result

    # -- iterators (data/iterators.py) ---------------------------------------------------
    def make_one_shot_iterator(self):
        return make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: Optional[str] = None):
        return make_initializable_iterator(self, shared_name)


def make_dataset(*args, **kwargs) -> Dataset:
    """`add_dataset_op(...)`'s op, as a Dataset."""
    return Dataset(*add_dataset_op(*args, **kwargs))


DatasetV1 = DatasetV2 = Dataset
