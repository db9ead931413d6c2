"""tf.data.Dataset in graph mode: each method adds one dataset op (TF's op types) to
the default graph and returns a Dataset holding its DT_VARIANT output.

A Dataset is a recipe: nothing runs until an iterator made of it is
initialised and read (data/iterators.py), and then on the device its ops
were placed on (a worker's input pipeline on that worker). The dataset ops
and their iterator are one colocation group (ops/data.py).

Example:
  >>> ds = Dataset.range(10).map(lambda x: x * 2).batch(4)
  >>> ds.output_shapes
  TensorShape([None])
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from nbcluster.data import structure
from nbcluster.data.functions import trace
from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.ops.shape_inference import constant_value

AUTOTUNE = -1


def _int64(value, name: str) -> Tensor:
    return convert_to_tensor(np.int64(value) if isinstance(value, (int, np.integer))
                             else value, dtype=dtypes.int64, name=name)


def make_dataset(op_type: str, inputs: list, spec, attrs: Optional[dict] = None,
                 name: Optional[str] = None, types_attr: str = "output_types") -> "Dataset":
    """Adds one dataset op producing elements of `spec`; returns its Dataset."""
    graph = get_default_graph()
    full = dict(attrs or {})
    full[types_attr] = structure.dtypes_of(spec)
    full["output_shapes"] = structure.shapes_of(spec)
    op = graph.create_op(op_type, inputs, full, name=name or op_type)
    return Dataset(op.outputs[0], spec)


class Dataset:
    """A graph-mode tf.data dataset (tf.data.Dataset, tf.compat.v1.data.Dataset).

    Args:
      variant: the DT_VARIANT tensor of its last op.
      element_spec: the structure of TensorSpecs of one element.
    """

    def __init__(self, variant: Tensor, element_spec) -> None:
        self._variant = variant
        self._element_spec = element_spec

    # -- what an element is ---------------------------------------------------------
    element_spec = property(lambda self: self._element_spec)
    output_types = property(lambda self: structure.with_leaves(self._element_spec,
                                                               lambda s: s.dtype))
    output_shapes = property(lambda self: structure.with_leaves(self._element_spec,
                                                                lambda s: s.shape))
    output_classes = property(lambda self: structure.with_leaves(self._element_spec,
                                                                 lambda s: Tensor))

    def _as_variant_tensor(self) -> Tensor:
        return self._variant

    def __iter__(self):
        raise RuntimeError("`tf.data.Dataset` only supports Python-style iteration in eager "
                           "mode or within tf.function; in a graph, make an iterator: "
                           "`tf.compat.v1.data.make_one_shot_iterator(dataset)`")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={self._element_spec}>"

    # -- sources (data/sources.py) -----------------------------------------------------
    @staticmethod
    def from_tensors(tensors, name: Optional[str] = None) -> "Dataset":
        from nbcluster.data import sources
        return sources.from_tensors(tensors, name)

    @staticmethod
    def from_tensor_slices(tensors, name: Optional[str] = None) -> "Dataset":
        from nbcluster.data import sources
        return sources.from_tensor_slices(tensors, name)

    @staticmethod
    def range(*args, output_type=dtypes.int64, name: Optional[str] = None) -> "Dataset":
        from nbcluster.data import sources
        return sources.range_(*args, output_type=output_type, name=name)

    @staticmethod
    def from_generator(generator: Callable, output_types=None, output_shapes=None,
                       args=None, output_signature=None, name: Optional[str] = None):
        from nbcluster.data import sources
        return sources.from_generator(generator, output_types, output_shapes, args,
                                      output_signature, name)

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
        inputs.append(_int64(num_parallel_calls, "num_parallel_calls"))
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
            _int64(AUTOTUNE if cycle_length is None else cycle_length, "cycle_length"),
            _int64(1 if block_length is None else block_length, "block_length")]
        return make_dataset("InterleaveDataset", inputs, traced.output_spec, attrs, name)

    def flat_map(self, map_func: Callable, name: Optional[str] = None) -> "Dataset":
        traced = trace(map_func, self._element_spec, "map_func", returns="dataset")
        attrs = {"f": traced.func, "Targuments": [t.dtype.base_dtype for t in traced.captured]}
        return make_dataset("FlatMapDataset", [self._variant] + traced.captured,
                            traced.output_spec, attrs, name)

    def batch(self, batch_size, drop_remainder: bool = False, num_parallel_calls=None,
              deterministic=None, name: Optional[str] = None) -> "Dataset":
        size = _int64(batch_size, "batch_size")
        drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool, name="drop_remainder")
        rows = _static_rows(size, drop)
        spec = structure.with_leaves(self._element_spec, lambda s: structure.TensorSpec(
            _batched(s.shape, rows), s.dtype))
        return make_dataset("BatchDatasetV2", [self._variant, size, drop], spec,
                            {"parallel_copy": False}, name)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        from nbcluster.data.padding import padded_batch
        return padded_batch(self, batch_size, padded_shapes, padding_values, drop_remainder,
                            name)

    def shuffle(self, buffer_size, seed: Optional[int] = None,
                reshuffle_each_iteration: bool = True, name: Optional[str] = None):
        """Elements drawn at random from a buffer of `buffer_size`; a seed (this op's or
        the graph's) gives the same orders every run."""
        from nbcluster.ops.random import get_seed
        seed1, seed2 = get_seed(seed)
        graph = get_default_graph()
        generator = graph.create_op("DummySeedGenerator", [], {}).outputs[0]
        inputs = [self._variant, _int64(buffer_size, "buffer_size"),
                  _int64(seed1 or 0, "seed"), _int64(seed2 or 0, "seed2"), generator]
        return make_dataset("ShuffleDatasetV3", inputs, self._element_spec,
                            {"reshuffle_each_iteration": bool(reshuffle_each_iteration)}, name)

    def repeat(self, count=None, name: Optional[str] = None) -> "Dataset":
        return make_dataset("RepeatDataset",
                            [self._variant, _int64(-1 if count is None else count, "count")],
                            self._element_spec, name=name)

    def take(self, count, name: Optional[str] = None) -> "Dataset":
        return make_dataset("TakeDataset", [self._variant, _int64(count, "count")],
                            self._element_spec, name=name)

    def skip(self, count, name: Optional[str] = None) -> "Dataset":
        return make_dataset("SkipDataset", [self._variant, _int64(count, "count")],
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
        return make_dataset("ShardDataset", [self._variant, _int64(num_shards, "num_shards"),
                                             _int64(index, "index")], self._element_spec,
                            {"require_non_empty": False}, name)

    def prefetch(self, buffer_size, name: Optional[str] = None) -> "Dataset":
        return make_dataset("PrefetchDataset",
                            [self._variant, _int64(buffer_size, "buffer_size")],
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
        from nbcluster.data.iterators import make_one_shot_iterator
        return make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: Optional[str] = None):
        from nbcluster.data.iterators import make_initializable_iterator
        return make_initializable_iterator(self, shared_name)


def _static_rows(size: Tensor, drop: Tensor) -> Optional[int]:
    rows, dropped = constant_value(size), constant_value(drop)
    return int(rows) if rows is not None and dropped is not None and bool(dropped) else None


def _batched(shape: TensorShape, rows: Optional[int]) -> TensorShape:
    return TensorShape([rows] + shape.as_list()) if shape.rank is not None \
        else TensorShape(None)


DatasetV1 = DatasetV2 = Dataset
