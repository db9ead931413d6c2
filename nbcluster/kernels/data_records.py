"""TFRecordDataset and TextLineDataset: records and lines of local files, read on the
task that runs the dataset, confined to its file root (kernels/file_root.py).

The TFRecord layout (TensorFlow's, so files either side writes read on the other):

    uint64 length            little-endian
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8, mod 2**32; crc32c is
the Castagnoli CRC (polynomial 0x82F63B78, reflected).
"""
from __future__ import annotations

import gzip
import io
import struct
import zlib
from typing import BinaryIO, Iterator

import numpy as np

from nbcluster import errors
from nbcluster.kernels.dataset_recipe import dataset_kernel
from nbcluster.kernels.file_root import confine


def _crc_table() -> list:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def encode_record(data: bytes) -> bytes:
    """One TFRecord: the framing around `data`."""
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


def read_records(stream: BinaryIO, path: str) -> Iterator[bytes]:
    """The records of a TFRecord stream.

    Raises:
      DataLossError: a truncated record or a checksum that does not match.
    """
    offset = 0
    while True:
        header = stream.read(12)
        if not header:
            return
        if len(header) < 12:
            raise _loss(path, offset, "truncated record header")
        length, = struct.unpack("<Q", header[:8])
        if struct.unpack("<I", header[8:])[0] != masked_crc32c(header[:8]):
            raise _loss(path, offset, "corrupted record length")
        data = stream.read(length)
        footer = stream.read(4)
        if len(data) < length or len(footer) < 4:
            raise _loss(path, offset, "truncated record")
        if struct.unpack("<I", footer)[0] != masked_crc32c(data):
            raise _loss(path, offset, "corrupted record data")
        yield data
        offset += 16 + length


def _loss(path: str, offset: int, what: str) -> errors.DataLossError:
    return errors.DataLossError(None, None, f"{what} at {offset} in {path}")


def open_local(path: str, env, compression: str = "", node=None) -> BinaryIO:
    """`path` opened for reading, if the device's file root allows it."""
    resolved = confine(path, env.device.file_root)
    try:
        raw = open(resolved, "rb")
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
    if compression == "GZIP":
        return gzip.GzipFile(fileobj=raw)
    if compression == "ZLIB":
        with raw:
            return io.BytesIO(zlib.decompress(raw.read()))
    if compression:
        raise errors.InvalidArgumentError(None, None, f"Unsupported compression_type: "
                                                      f"{compression!r}")
    return raw


def _filenames(value, node) -> list:
    names = np.asarray(value).reshape(-1)
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names]


def _compression(value) -> str:
    value = np.asarray(value).reshape(()).item()
    return (value.decode() if isinstance(value, bytes) else str(value)).upper()


@dataset_kernel("TFRecordDataset")
def _tf_records(node, device, filenames, compression_type, buffer_size):
    paths, compression = _filenames(filenames, node), _compression(compression_type)

    def passes(env):
        for path in paths:
            stream = open_local(path, env, compression, node)
            with stream:
                for record in read_records(stream, path):
                    yield (np.asarray(record, dtype=object),)
    return passes


@dataset_kernel("TextLineDataset")
def _text_lines(node, device, filenames, compression_type, buffer_size):
    paths, compression = _filenames(filenames, node), _compression(compression_type)

    def passes(env):
        for path in paths:
            stream = open_local(path, env, compression, node)
            with stream:
                for line in stream:
                    yield (np.asarray(line.rstrip(b"\n").rstrip(b"\r"), dtype=object),)
    return passes
