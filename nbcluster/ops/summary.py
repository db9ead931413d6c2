"""Summary ops with TF's names (ScalarSummary, HistogramSummary, ImageSummary, AudioSummaryV2,
TensorSummaryV2, MergeSummary) and the tf.summary functions that build them.

Rule: each op outputs one serialized Summary proto (a string scalar), made by
its kernel (kernels/summary.py) on the task that runs it; writing event files
is the FileWriter's job (nbcluster/summary/), not an op's. The functions add
their output to the SUMMARIES collection, as TF1's do, so merge_all finds it.
"""
from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import get_default_graph, graph_of
from nbcluster.framework.graph_keys import GraphKeys
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor
from nbcluster.framework.tensor_shape import scalar as scalar_shape
from nbcluster.ops.shape_inference import tensor_list
from nbcluster.proto import summary_pb2

logger = logging.getLogger(__name__)

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")
FLOAT_IMAGE_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def _string_output(op):
    return [(dtypes.string, scalar_shape())]


def _check_scalar_string(op, tensor, what: str) -> None:
    if tensor.dtype != dtypes.string:
        raise TypeError(f"{op.type} '{op.name}': {what} must be a string tensor, got "
                        f"{tensor.dtype.name}")
    if tensor.shape.rank not in (None, 0):
        raise ValueError(f"{op.type} '{op.name}': {what} must be a scalar, got shape "
                         f"{tensor.shape}")


@register_op("ScalarSummary")
def _scalar_summary_shape(op):
    # Tags and values must agree in shape; like TF, the kernel checks it, so
    # the error (InvalidArgumentError naming the tag) comes when the op runs.
    if op.inputs[0].dtype != dtypes.string:
        raise TypeError(f"ScalarSummary '{op.name}': tags must be a string tensor, got "
                        f"{op.inputs[0].dtype.name}")
    return _string_output(op)


@register_op("HistogramSummary")
def _histogram_summary_shape(op):
    _check_scalar_string(op, op.inputs[0], "tag")
    return _string_output(op)


@register_op("ImageSummary")
def _image_summary_shape(op):
    _check_scalar_string(op, op.inputs[0], "tag")
    image = op.inputs[1]
    if image.dtype != dtypes.uint8 and image.dtype not in FLOAT_IMAGE_DTYPES:
        raise TypeError(f"ImageSummary '{op.name}': tensor must be uint8 or float, got "
                        f"{image.dtype.name}")
    shape = image.shape
    if shape.rank is not None and (shape.rank != 4 or shape[3] not in (None, 1, 3, 4)):
        raise ValueError(f"ImageSummary '{op.name}': tensor must be 4-D [batch, height, "
                         f"width, channels] with 1, 3 or 4 channels, got shape {shape}")
    return _string_output(op)


@register_op("AudioSummaryV2")
def _audio_summary_shape(op):
    _check_scalar_string(op, op.inputs[0], "tag")
    audio, rate = op.inputs[1], op.inputs[2]
    if audio.dtype != dtypes.float32 or rate.dtype != dtypes.float32:
        raise TypeError(f"AudioSummaryV2 '{op.name}': tensor and sample_rate must be "
                        f"float32, got {audio.dtype.name} and {rate.dtype.name}")
    if audio.shape.rank not in (None, 2, 3):
        raise ValueError(f"AudioSummaryV2 '{op.name}': tensor must be 2-D [batch, frames] "
                         f"or 3-D [batch, frames, channels], got shape {audio.shape}")
    return _string_output(op)


@register_op("TensorSummaryV2")
def _tensor_summary_shape(op):
    _check_scalar_string(op, op.inputs[0], "tag")
    _check_scalar_string(op, op.inputs[2], "serialized_summary_metadata")
    return _string_output(op)


@register_op("MergeSummary")
def _merge_summary_shape(op):
    for i, t in enumerate(op.inputs):
        if t.dtype != dtypes.string:
            raise TypeError(f"MergeSummary '{op.name}': input {i} must be a string tensor "
                            f"(a serialized Summary), got {t.dtype.name}")
    return _string_output(op)


# ------------------------------------------------------------------ tf.summary.*

def clean_tag(name: Optional[str]) -> Optional[str]:
    """`name` with characters TensorBoard tags may not hold replaced by '_' (TF's rule)."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        logger.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextmanager
def summary_scope(name: str, family: Optional[str] = None, values=None):
    """Yields (tag, scope): the name scope of a summary op and the tag it writes."""
    name, family = clean_tag(name), clean_tag(family)
    graph = graph_of(*(values or ()))
    base = name if family is None else f"{family}/{name}"
    with graph.name_scope(base) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def _collect(tensor: Tensor, collections) -> Tensor:
    for key in (collections if collections is not None else [GraphKeys.SUMMARIES]):
        tensor.graph.add_to_collection(key, tensor)
    return tensor


def _build(op_type: str, tag: str, scope: str, inputs: list, attrs: dict) -> Tensor:
    graph = inputs[0].graph
    tag_t = convert_to_tensor(tag, dtype=dtypes.string, graph=graph)
    return graph.create_op(op_type, [tag_t] + inputs, attrs, name=scope).outputs[0]


def scalar(name: str, tensor, collections=None, family: Optional[str] = None) -> Tensor:
    """A ScalarSummary of the real scalar `tensor`, tagged with its scope's name.

    Returns: a string scalar Tensor, the serialized Summary.
    Raises:
      InvalidArgumentError (when run): `tensor` is not a scalar (its tag and
        shape are named).
    Example:
      >>> tf.summary.scalar("loss", loss)
    """
    tensor = convert_to_tensor(tensor)
    with summary_scope(name, family, [tensor]) as (tag, scope):
        return _collect(_build("ScalarSummary", tag, scope, [tensor], {"T": tensor.dtype}),
                        collections)


def histogram(name: str, values, collections=None, family: Optional[str] = None) -> Tensor:
    """A HistogramSummary of every element of `values` (TF's exponential buckets).

    Raises:
      InvalidArgumentError (when run): `values` holds a NaN or infinity.
    Example:
      >>> tf.summary.histogram("weights", w)
    """
    values = convert_to_tensor(values)
    with summary_scope(name, family, [values]) as (tag, scope):
        return _collect(_build("HistogramSummary", tag, scope, [values], {"T": values.dtype}),
                        collections)


def image(name: str, tensor, max_outputs: int = 3, collections=None,
          family: Optional[str] = None) -> Tensor:
    """An ImageSummary of up to `max_outputs` PNG images from a [batch, h, w, c] tensor.

    Float images are rescaled to 0..255 as TF does (non-negative: max -> 255;
    with negatives: 0 -> 128, max |value| -> 127); tags are `<tag>/image/<i>`,
    or `<tag>/image` when max_outputs is 1.
    Example:
      >>> tf.summary.image("inputs", tf.reshape(x, [-1, 28, 28, 1]), max_outputs=4)
    """
    tensor = convert_to_tensor(tensor)
    with summary_scope(name, family, [tensor]) as (tag, scope):
        attrs = {"T": tensor.dtype, "max_images": int(max_outputs)}
        return _collect(_build("ImageSummary", tag, scope, [tensor], attrs), collections)


def audio(name: str, tensor, sample_rate, max_outputs: int = 3, collections=None,
          family: Optional[str] = None) -> Tensor:
    """An AudioSummaryV2 of up to `max_outputs` WAV clips from a [batch, frames(, channels)]
    float tensor with values in [-1, 1].
    Example:
      >>> tf.summary.audio("voice", waves, sample_rate=16000)
    """
    tensor = convert_to_tensor(tensor, dtype=dtypes.float32)
    with summary_scope(name, family, [tensor]) as (tag, scope):
        rate = convert_to_tensor(sample_rate, dtype=dtypes.float32, name="sample_rate",
                                 graph=tensor.graph)
        return _collect(_build("AudioSummaryV2", tag, scope, [tensor, rate],
                               {"max_outputs": int(max_outputs)}), collections)


def tensor_summary(name: str, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family: Optional[str] = None,
                   display_name: Optional[str] = None) -> Tensor:
    """A TensorSummaryV2: the whole `tensor` as a TensorProto, with plugin metadata."""
    if summary_metadata is None:
        summary_metadata = summary_pb2.SummaryMetadata()
    if summary_description is not None:
        summary_metadata.summary_description = summary_description
    if display_name is not None:
        summary_metadata.display_name = display_name
    tensor = convert_to_tensor(tensor)
    with summary_scope(name, family, [tensor]) as (tag, scope):
        meta = convert_to_tensor(summary_metadata.SerializeToString(), dtype=dtypes.string,
                                 name="serialized_summary_metadata", graph=tensor.graph)
        return _collect(_build("TensorSummaryV2", tag, scope, [tensor, meta],
                               {"T": tensor.dtype}), collections)


def text(name: str, tensor, collections=None) -> Tensor:
    """A text summary (TensorBoard's text plugin) of a string tensor.

    Raises:
      ValueError: `tensor` is not a string tensor (its dtype is named).
    Example:
      >>> tf.summary.text("config", tf.constant("lr=0.1"))
    """
    tensor = convert_to_tensor(tensor)
    if tensor.dtype != dtypes.string:
        raise ValueError(f"Expected tensor {tensor.name} to have dtype string, got "
                         f"{tensor.dtype.name}")
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, tensor, collections=collections, summary_metadata=metadata)


def merge(inputs, collections=None, name: Optional[str] = None) -> Tensor:
    """A MergeSummary: one Summary holding every value of the serialized `inputs`.

    Raises:
      InvalidArgumentError (when run): two inputs hold the same tag (named).
    """
    inputs = list(inputs)
    graph = graph_of(*inputs)
    with graph.name_scope(name or "Merge") as scope:
        tensors = tensor_list(inputs, "inputs", graph, "MergeSummary")
        out = graph.create_op("MergeSummary", tensors, {"N": len(tensors)},
                              name=scope).outputs[0]
    for key in collections or []:
        graph.add_to_collection(key, out)
    return out


def merge_all(key: str = GraphKeys.SUMMARIES, scope: Optional[str] = None,
              name: Optional[str] = None) -> Optional[Tensor]:
    """Merges every summary in collection `key` (under `scope`); None when there is none."""
    found = [t for t in get_default_graph().get_collection(key)
             if not scope or t.name.startswith(scope)]
    if not found:
        return None
    return merge(found, name=name)
