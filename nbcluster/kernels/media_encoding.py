"""PNG and WAV bytes for image and audio summaries, with the standard library only.

Rule: lossless and dependency-free (zlib, struct, wave): a task that runs a
summary op needs no imaging or audio package.
"""
from __future__ import annotations

import io
import struct
import wave
import zlib

import numpy as np

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (gray, gray+a, RGB, RGBA)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def encode_png(pixels: np.ndarray) -> bytes:
    """An 8-bit PNG of a [height, width, channels] uint8 array (1 to 4 channels)."""
    height, width, channels = pixels.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    # Each row starts with filter type 0 (none).
    rows = np.concatenate([np.zeros((height, 1), np.uint8),
                           np.ascontiguousarray(pixels, np.uint8).reshape(height, -1)], axis=1)
    return (_PNG_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))


def encode_wav(samples: np.ndarray, sample_rate: float) -> bytes:
    """16-bit PCM WAV of [frames, channels] float samples, clipped to [-1, 1]."""
    frames, channels = samples.shape
    pcm = (np.clip(np.nan_to_num(samples.astype(np.float32)), -1.0, 1.0) * 32767.0)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(int(round(sample_rate)))
        out.writeframes(pcm.astype("<i2").tobytes())
    return buffer.getvalue()
