"""Checkpoint ops with TF's names: SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename.

The kernels (kernels/io.py) read and write files on the task that runs the
op; a checkpoint whose shards are written by several tasks needs a directory
they all see (one host, or a shared file system), as in TensorFlow.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes as dtypes_lib
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Operation, Tensor
from nbcluster.framework.tensor_shape import TensorShape, scalar


def _check_strings(op, inputs: dict) -> None:
    for what, (tensor, rank) in inputs.items():
        if tensor.dtype != dtypes_lib.string:
            raise TypeError(f"{op.type} '{op.name}': {what} must be a string tensor, got "
                            f"{tensor.dtype.name}")
        if tensor.shape.rank is not None and tensor.shape.rank != rank:
            raise ValueError(f"{op.type} '{op.name}': {what} must have rank {rank}, got "
                             f"shape {tensor.shape}")


def _check_count(op, count: int) -> None:
    for what, tensor in (("tensor_names", op.inputs[1]), ("shape_and_slices", op.inputs[2])):
        size = tensor.shape[0] if tensor.shape.rank == 1 else None
        if size is not None and size != count:
            raise ValueError(f"{op.type} '{op.name}': {what} has {size} entries for "
                             f"{count} tensors")


@register_op("SaveV2", stateful=True)
def _save_v2_shape(op):
    prefix, names, slices, *tensors = op.inputs
    _check_strings(op, {"prefix": (prefix, 0), "tensor_names": (names, 1),
                        "shape_and_slices": (slices, 1)})
    wanted = list(op.get_attr("dtypes"))
    got = [t.dtype for t in tensors]
    if wanted != got:
        raise TypeError(f"SaveV2 '{op.name}': dtypes attr {[d.name for d in wanted]} does "
                        f"not match the tensors' {[d.name for d in got]}")
    _check_count(op, len(tensors))
    return []


@register_op("RestoreV2", stateful=True)
def _restore_v2_shape(op):
    prefix, names, slices = op.inputs
    _check_strings(op, {"prefix": (prefix, 0), "tensor_names": (names, 1),
                        "shape_and_slices": (slices, 1)})
    wanted = list(op.get_attr("dtypes"))
    _check_count(op, len(wanted))
    return [(d, TensorShape(None)) for d in wanted]


@register_op("MergeV2Checkpoints", stateful=True)
def _merge_shape(op):
    prefixes, destination = op.inputs
    _check_strings(op, {"checkpoint_prefixes": (prefixes, 1),
                        "destination_prefix": (destination, 0)})
    return []


@register_op("ShardedFilename")
def _sharded_filename_shape(op):
    basename, shard, num_shards = op.inputs
    _check_strings(op, {"basename": (basename, 0)})
    for what, t in (("shard", shard), ("num_shards", num_shards)):
        if t.dtype != dtypes_lib.int32:
            raise TypeError(f"ShardedFilename '{op.name}': {what} must be int32, got "
                            f"{t.dtype.name}")
    return [(dtypes_lib.string, scalar())]


def _input(value, dtype, graph) -> Tensor:
    # A tensor keeps its dtype, so the shape function names the input that is wrong.
    if isinstance(value, Tensor):
        return value
    return convert_to_tensor(value, dtype=dtype, graph=graph)


def _strings(value, graph) -> Tensor:
    return _input(value, dtypes_lib.string, graph)


def save_v2(prefix, tensor_names, shape_and_slices, tensors, name: Optional[str] = None
            ) -> Operation:
    """Writes `tensors` as a one-shard checkpoint at `prefix` (on this op's task).

    Args:
      prefix: scalar string; the files are `<prefix>.index` and
        `<prefix>-00000-of-00001.npz` (directories are created).
      tensor_names: string vector, one name per tensor.
      shape_and_slices: string vector; each entry "" (whole tensors only).
      tensors: list of tensors (any dtype with a numpy form, strings too).
      name: the op's name (default "SaveV2").
    Returns: the SaveV2 Operation (no outputs).
    Raises:
      TypeError / ValueError: mistyped or mis-sized inputs, at build time.

    Example:
      >>> save_v2("/tmp/ck/model", ["w"], [""], [constant([1.0])])
    """
    tensors = list(tensors)
    graph = graph_of(prefix, tensor_names, *tensors)
    tensors = [convert_to_tensor(t, graph=graph) for t in tensors]
    inputs = [_strings(prefix, graph), _strings(tensor_names, graph),
              _strings(shape_and_slices, graph)] + tensors
    return graph.create_op("SaveV2", inputs, {"dtypes": [t.dtype for t in tensors]},
                           name=name or "SaveV2")


def restore_v2(prefix, tensor_names, shape_and_slices, dtypes: list,
               name: Optional[str] = None) -> list:
    """Reads the tensors named `tensor_names` of the checkpoint at `prefix`.

    Args:
      prefix: scalar string, the checkpoint's prefix (its `.index` file says
        which data file holds each tensor, whatever task wrote it).
      tensor_names: string vector.
      shape_and_slices: string vector; each entry "".
      dtypes: the dtype of each tensor to read.
      name: the op's name (default "RestoreV2").
    Returns: a list of Tensors, one per name (shapes known when run).
    Raises (when run):
      NotFoundError: a name is not in the checkpoint, or a file is missing.
      InvalidArgumentError: a stored dtype differs from the one asked for.
      DataLossError: a corrupt index or data file.
    """
    graph = graph_of(prefix, tensor_names)
    attrs = {"dtypes": [dtypes_lib.as_dtype(d) for d in dtypes]}
    inputs = [_strings(prefix, graph), _strings(tensor_names, graph),
              _strings(shape_and_slices, graph)]
    return list(graph.create_op("RestoreV2", inputs, attrs, name=name or "RestoreV2").outputs)


def merge_v2_checkpoints(checkpoint_prefixes, destination_prefix,
                         delete_old_dirs: bool = True, name: Optional[str] = None
                         ) -> Operation:
    """Merges the checkpoints at `checkpoint_prefixes` into one at `destination_prefix`.

    The sources' data files are renamed `<destination>-<k>-of-<n>.npz` in
    order, one index is written for them all and the sources' indexes are
    removed (with their directories, if `delete_old_dirs` and now empty).
    All tasks that wrote the sources must share the file system.
    """
    graph = graph_of(checkpoint_prefixes, destination_prefix)
    inputs = [_strings(checkpoint_prefixes, graph), _strings(destination_prefix, graph)]
    return graph.create_op("MergeV2Checkpoints", inputs,
                           {"delete_old_dirs": bool(delete_old_dirs)},
                           name=name or "MergeV2Checkpoints")


def sharded_filename(basename, shard, num_shards, name: Optional[str] = None) -> Tensor:
    """`<basename>-<shard>-of-<num_shards>`, both numbers zero-padded to 5 digits."""
    graph = graph_of(basename, shard, num_shards)
    inputs = [_strings(basename, graph),
              _input(shard, dtypes_lib.int32, graph), _input(num_shards, dtypes_lib.int32, graph)]
    return graph.create_op("ShardedFilename", inputs, {},
                           name=name or "ShardedFilename").outputs[0]
