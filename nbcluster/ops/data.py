"""tf.data's graph ops, by TensorFlow's names: datasets are DT_VARIANT scalars,
iterators DT_RESOURCE handles (the Python API is `nbcluster.data`).

Rule: every input that takes a dataset or an iterator is a ref input, so the
placer keeps a whole pipeline with the iterator that reads it (a dataset value
is a Python object of its task and never crosses the wire); the tensors a
dataset captures (slices, a map function's captures) are ordinary inputs and
may come from any device.
"""
from __future__ import annotations

from nbcluster.framework import dtypes
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import TensorShape, scalar, unknown_shape

# Dataset op type -> its inputs that take a dataset (ZipDataset: all of them;
# 64 is past any zip a program builds). Kernels: kernels/data*.py.
DATASET_INPUTS = {
    "TensorDataset": (), "TensorSliceDataset": (), "RangeDataset": (),
    "GeneratorDataset": (), "TFRecordDataset": (), "TextLineDataset": (),
    "MapDataset": (0,), "ParallelMapDatasetV2": (0,), "FilterDataset": (0,),
    "BatchDatasetV2": (0,), "PaddedBatchDatasetV2": (0,), "ShuffleDatasetV3": (0, 4),
    "ShuffleDataset": (0,),  # TF1 graph mode's own (no seed generator): imported GraphDefs
    "RepeatDataset": (0,), "TakeDataset": (0,), "SkipDataset": (0,), "ShardDataset": (0,),
    "PrefetchDataset": (0,), "ZipDataset": tuple(range(64)),
    "ConcatenateDataset": (0, 1), "CacheDataset": (0,), "UnbatchDataset": (0,),
    "InterleaveDataset": (0,), "FlatMapDataset": (0,),
}


def _variant(op) -> list:
    return [(dtypes.variant, scalar())]


def _resource(op) -> list:
    return [(dtypes.resource, scalar())]


_STATEFUL = ("GeneratorDataset", "ShuffleDatasetV3", "ShuffleDataset")

for _op_type, _slots in DATASET_INPUTS.items():
    register_op(_op_type, ref_inputs=_slots, stateful=_op_type in _STATEFUL)(_variant)

register_op("DummySeedGenerator", stateful=True)(_resource)
register_op("IteratorV2", stateful=True)(_resource)


@register_op("MakeIterator", stateful=True, ref_inputs=(0, 1))
def _make_iterator(op) -> list:
    return []


@register_op("OneShotIterator", stateful=True)
def _one_shot(op) -> list:
    return _resource(op)


@register_op("IteratorGetNext", stateful=True, ref_inputs=(0,), blocking=True)
def _get_next(op) -> list:
    types = op.get_attr("output_types")
    shapes = op.get_attr("output_shapes") or [unknown_shape()] * len(types)
    return [(dtypes.as_dtype(t), TensorShape(s)) for t, s in zip(types, shapes)]


@register_op("_Arg")
def _arg(op) -> list:
    shape = op._attrs.get("_shape")
    return [(op.get_attr("T"), TensorShape(shape) if shape is not None else unknown_shape())]


@register_op("_Retval")
def _retval(op) -> list:
    return []


@register_op("IteratorToStringHandle", stateful=True, ref_inputs=(0,))
def _string_handle(op) -> list:
    return [(dtypes.string, scalar())]
