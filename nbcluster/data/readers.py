"""TFRecordDataset and TextLineDataset: the records or lines of local files.

The files are read by the task the dataset runs on, inside that task's file
root (the directory its checkpoints may use: kernels/file_root.py); a path
outside it is PermissionDeniedError, a missing file NotFoundError.
"""
from __future__ import annotations

from typing import Optional

from nbcluster.data import structure
from nbcluster.data.dataset import Dataset
from nbcluster.data.dataset_value import int64_input
from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph

_DEFAULT_BUFFER = 256 * 1024


def _file_dataset(op_type: str, filenames, compression_type, buffer_size, name):
    names = convert_to_tensor(filenames, dtype=dtypes.string, name="filenames")
    if names.shape.rank not in (None, 0, 1):
        raise ValueError(f"`filenames` must be a scalar or a vector of strings, got shape "
                         f"{names.shape}")
    compression = convert_to_tensor(compression_type or "", dtype=dtypes.string,
                                    name="compression_type")
    size = int64_input(_DEFAULT_BUFFER if buffer_size is None else buffer_size, "buffer_size")
    op = get_default_graph().create_op(op_type, [names, compression, size],
                                       {"metadata": ""}, name=name or op_type)
    return op.outputs[0], structure.TensorSpec([], dtypes.string)


class TFRecordDataset(Dataset):
    """The records of TFRecord files (`compression_type` "", "GZIP" or "ZLIB"), as
    scalar strings, file after file."""

    def __init__(self, filenames, compression_type: Optional[str] = None,
                 buffer_size=None, num_parallel_reads=None, name: Optional[str] = None):
        super().__init__(*_file_dataset("TFRecordDataset", filenames, compression_type,
                                        buffer_size, name))


class TextLineDataset(Dataset):
    """The lines of text files, without their line ends, as scalar strings."""

    def __init__(self, filenames, compression_type: Optional[str] = None,
                 buffer_size=None, num_parallel_reads=None, name: Optional[str] = None):
        super().__init__(*_file_dataset("TextLineDataset", filenames, compression_type,
                                        buffer_size, name))
