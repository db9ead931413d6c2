"""Kernels for the summary ops: each builds one serialized Summary proto (a string scalar).

Rule: bad values (tags that do not match values, NaN in a histogram, an image
of the wrong rank) are InvalidArgumentError naming the tag, as TF's kernels
say; nothing here writes files. PNG and WAV bytes come from
kernels/media_encoding.py.
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.framework.tensor_util import make_tensor_proto
from nbcluster.kernels.media_encoding import encode_png, encode_wav
from nbcluster.proto import summary_pb2
from nbcluster.runtime.kernel_table import register_kernel

BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)  # TF's default for NaN/inf pixels
_BUCKET_LIMITS = None


def _string(value) -> str:
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _single_tag(tags: np.ndarray) -> str:
    return f" (tag '{_string(tags)}')" if tags.shape == () else ""


def _scalar_tag(value, op: str) -> str:
    value = np.asarray(value, dtype=object)
    if value.shape != ():
        raise errors.InvalidArgumentError(
            None, None, f"{op}: tag must be a scalar, got shape {list(value.shape)}")
    return _string(value)


def _out(summary: summary_pb2.Summary) -> tuple:
    return (np.array(summary.SerializeToString(), dtype=object),)


# ------------------------------------------------------------------ scalars

@register_kernel("ScalarSummary", "CPU")
def _scalar_summary(node, device):
    def compute(ctx, tags, values):
        tags = np.asarray(tags, dtype=object)
        values = np.asarray(device.to_numpy(values))
        if tags.shape != values.shape:
            raise errors.InvalidArgumentError(
                None, None, f"tags and values are not the same shape: {list(tags.shape)} != "
                            f"{list(values.shape)}{_single_tag(tags)}")
        summary = summary_pb2.Summary()
        for tag, value in zip(tags.reshape(-1), values.reshape(-1)):
            summary.value.add(tag=_string(tag), simple_value=float(value))
        return _out(summary)
    return compute


# ------------------------------------------------------------------ histograms

def bucket_limits() -> np.ndarray:
    """TF's default histogram bucket edges: +-1e-12 growing by 1.1x up to 1e20, 0, +-DBL_MAX."""
    global _BUCKET_LIMITS
    if _BUCKET_LIMITS is None:
        positive, v = [], 1.0e-12
        while v < 1.0e20:
            positive.append(v)
            v *= 1.1
        positive.append(np.finfo(np.float64).max)
        negative = [-p for p in reversed(positive)]
        _BUCKET_LIMITS = np.array(negative + [0.0] + positive)
    return _BUCKET_LIMITS


def histogram_proto(values: np.ndarray) -> summary_pb2.HistogramProto:
    """A HistogramProto of `values` with runs of empty buckets collapsed, as TF encodes it."""
    values = values.astype(np.float64).reshape(-1)
    limits = bucket_limits()
    counts = np.bincount(np.searchsorted(limits, values, side="right"),
                         minlength=len(limits))[:len(limits)].astype(np.float64)
    proto = summary_pb2.HistogramProto(num=float(values.size), sum=float(values.sum()),
                                       sum_squares=float(np.dot(values, values)))
    if values.size:
        proto.min, proto.max = float(values.min()), float(values.max())
    else:
        proto.min, proto.max = float(limits[-1]), float(limits[0])
    i = 0
    while i < len(counts):
        end, count = limits[i], counts[i]
        i += 1
        if count <= 0:
            while i < len(counts) and counts[i] <= 0:
                end, count = limits[i], counts[i]
                i += 1
        proto.bucket_limit.append(float(end))
        proto.bucket.append(float(count))
    return proto


@register_kernel("HistogramSummary", "CPU")
def _histogram_summary(node, device):
    def compute(ctx, tag, values):
        tag = _scalar_tag(tag, "HistogramSummary")
        values = np.asarray(device.to_numpy(values))
        if values.dtype.kind == "c" or values.dtype == object:
            raise errors.InvalidArgumentError(
                None, None, f"Histogram of {values.dtype} values is not supported (tag "
                            f"'{tag}')")
        if not np.all(np.isfinite(values)):
            raise errors.InvalidArgumentError(
                None, None, f"Nan in summary histogram for: {tag}")
        summary = summary_pb2.Summary()
        summary.value.add(tag=tag, histo=histogram_proto(values))
        return _out(summary)
    return compute


# ------------------------------------------------------------------ images

def to_uint8_image(image: np.ndarray) -> np.ndarray:
    """One float image rescaled to uint8 as TF does; NaN/inf pixels become BAD_COLOR."""
    if image.dtype == np.uint8:
        return image
    image = image.astype(np.float32)
    finite = np.isfinite(image).all(axis=-1)
    good = image[finite]
    lo, hi = (float(good.min()), float(good.max())) if good.size else (0.0, 0.0)
    if lo < 0:
        biggest = max(abs(lo), abs(hi))
        scale, offset = (127.0 / biggest if biggest else 0.0), 128.0
    else:
        scale, offset = (255.0 / hi if hi else 0.0), 0.0
    out = np.clip(np.where(np.isfinite(image), image, 0) * scale + offset, 0, 255)
    out = out.astype(np.uint8)
    out[~finite] = BAD_COLOR[:image.shape[-1]]
    return out


@register_kernel("ImageSummary", "CPU")
def _image_summary(node, device):
    max_images = int(node.attrs.get("max_images", 3))

    def compute(ctx, tag, tensor):
        tag = _scalar_tag(tag, "ImageSummary")
        tensor = np.asarray(device.to_numpy(tensor))
        if tensor.ndim != 4 or tensor.shape[3] not in (1, 3, 4):
            raise errors.InvalidArgumentError(
                None, None, f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                            f"{list(tensor.shape)} (tag '{tag}')")
        summary = summary_pb2.Summary()
        for i in range(min(max_images, tensor.shape[0])):
            pixels = to_uint8_image(tensor[i])
            value = summary.value.add(tag=f"{tag}/image/{i}" if max_images > 1
                                      else f"{tag}/image")
            value.image.height, value.image.width = pixels.shape[0], pixels.shape[1]
            value.image.colorspace = pixels.shape[2]
            value.image.encoded_image_string = encode_png(pixels)
        return _out(summary)
    return compute


# ------------------------------------------------------------------ audio

@register_kernel("AudioSummaryV2", "CPU")
def _audio_summary(node, device):
    max_outputs = int(node.attrs.get("max_outputs", 3))

    def compute(ctx, tag, tensor, sample_rate):
        tag = _scalar_tag(tag, "AudioSummaryV2")
        tensor = np.asarray(device.to_numpy(tensor))
        rate = np.asarray(device.to_numpy(sample_rate))
        if rate.shape != () or not float(rate) > 0:
            raise errors.InvalidArgumentError(
                None, None, f"sample_rate must be a positive scalar, got {rate.tolist()!r} "
                            f"(tag '{tag}')")
        if tensor.ndim == 2:
            tensor = tensor[:, :, None]
        if tensor.ndim != 3:
            raise errors.InvalidArgumentError(
                None, None, f"Tensor must be 3-D [batch, frames, channels] or 2-D, not "
                            f"{list(tensor.shape)} (tag '{tag}')")
        summary = summary_pb2.Summary()
        for i in range(min(max_outputs, tensor.shape[0])):
            value = summary.value.add(tag=f"{tag}/audio/{i}" if max_outputs > 1
                                      else f"{tag}/audio")
            value.audio.sample_rate = float(rate)
            value.audio.num_channels, value.audio.length_frames = tensor.shape[2], tensor.shape[1]
            value.audio.content_type = "audio/wav"
            value.audio.encoded_audio_string = encode_wav(tensor[i], float(rate))
        return _out(summary)
    return compute


# ------------------------------------------------------------------ tensors, merge

@register_kernel("TensorSummaryV2", "CPU")
def _tensor_summary(node, device):
    def compute(ctx, tag, tensor, serialized_metadata):
        tag = _scalar_tag(tag, "TensorSummaryV2")
        metadata = summary_pb2.SummaryMetadata()
        try:
            metadata.ParseFromString(np.asarray(serialized_metadata, dtype=object).item())
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError, named below
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse the summary metadata of tag '{tag}': {e}") \
                from None
        summary = summary_pb2.Summary()
        value = summary.value.add(tag=tag)
        value.metadata.CopyFrom(metadata)
        value.tensor.CopyFrom(make_tensor_proto(np.asarray(device.to_numpy(tensor))))
        return _out(summary)
    return compute


@register_kernel("MergeSummary", "CPU")
def _merge_summary(node, device):
    def compute(ctx, *inputs):
        merged, seen = summary_pb2.Summary(), set()
        for i, serialized in enumerate(inputs):
            for raw in np.asarray(serialized, dtype=object).reshape(-1):
                part = summary_pb2.Summary()
                try:
                    part.ParseFromString(raw)
                except Exception:  # noqa: BLE001 - protobuf's DecodeError
                    raise errors.InvalidArgumentError(
                        None, None, f"Could not parse one of the summary inputs (input "
                                    f"{i})") from None
                for value in part.value:
                    if value.tag and value.tag in seen:
                        raise errors.InvalidArgumentError(
                            None, None, f"Duplicate tag {value.tag} found in summary inputs")
                    seen.add(value.tag)
                    merged.value.add().CopyFrom(value)
        return _out(merged)
    return compute
