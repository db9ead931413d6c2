"""`tf.summary`: TF1's summary ops and the FileWriter that puts them in TensorBoard's files.

The ops (nbcluster/ops/summary.py) need nothing beyond nbcluster; the
FileWriter loads the tensorboard package when one is made. Event, SessionLog
and TaggedRunMetadata are tensorboard's own proto classes, loaded on first use.
"""
from nbcluster.ops.summary import (
    audio,
    histogram,
    image,
    merge,
    merge_all,
    scalar,
    tensor_summary,
    text,
)
from nbcluster.proto.summary_pb2 import HistogramProto, Summary, SummaryDescription, SummaryMetadata
from nbcluster.summary.writer import FileWriter
from nbcluster.summary.writer_cache import FileWriterCache

_EVENT_PROTOS = ("Event", "SessionLog", "TaggedRunMetadata")

__all__ = ["FileWriter", "FileWriterCache", "HistogramProto", "Summary", "SummaryDescription",
           "SummaryMetadata", "audio", "histogram", "image", "merge", "merge_all", "scalar",
           "tensor_summary", "text", *_EVENT_PROTOS]


def __getattr__(name: str):
    if name in _EVENT_PROTOS:
        from tensorboard.compat.proto import event_pb2
        return getattr(event_pb2, name)
    raise AttributeError(f"module 'nbcluster.summary' has no attribute {name!r}")
