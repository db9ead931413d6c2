"""tf.io.TFRecordWriter (tf.python_io.TFRecordWriter) and tf_record_iterator: TFRecord
files in this process, in TensorFlow's framing (kernels/data_records.py)."""
from __future__ import annotations

import gzip
import zlib
from typing import Iterator

from nbcluster.kernels.data_records import encode_record, read_records


class TFRecordCompressionType:
    """tf.python_io.TFRecordCompressionType: TF1's enum of the compressions."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_BY_ENUM = {0: "", 1: "ZLIB", 2: "GZIP"}


class TFRecordOptions:
    """tf.io.TFRecordOptions: the compression of a TFRecord file ("", "GZIP", "ZLIB",
    or a TFRecordCompressionType)."""

    def __init__(self, compression_type=None) -> None:
        if isinstance(compression_type, int):
            compression_type = _BY_ENUM.get(compression_type, str(compression_type))
        self.compression_type = (compression_type or "").upper()

    @staticmethod
    def get_compression_type_string(options) -> str:
        if options is None:
            return ""
        return (options if isinstance(options, TFRecordOptions)
                else TFRecordOptions(options)).compression_type


class TFRecordWriter:
    """Writes records to a TFRecord file; a context manager.

    Example:
      >>> with TFRecordWriter("/tmp/x.tfrecord") as w:  # doctest: +SKIP
      ...     w.write(b"record")
    """

    def __init__(self, path: str, options=None) -> None:
        self._compression = TFRecordOptions.get_compression_type_string(options)
        if self._compression not in ("", "GZIP", "ZLIB"):
            raise ValueError(f"Unsupported compression_type {self._compression!r}")
        self._file = gzip.open(path, "wb") if self._compression == "GZIP" else open(path, "wb")
        self._zlib = zlib.compressobj() if self._compression == "ZLIB" else None

    def write(self, record) -> None:
        data = encode_record(record if isinstance(record, bytes) else bytes(record))
        self._file.write(self._zlib.compress(data) if self._zlib else data)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        if self._zlib is not None:
            self._file.write(self._zlib.flush())
        self._file.close()

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tf_record_iterator(path: str, options=None) -> Iterator[bytes]:
    """The records of a TFRecord file (tf.compat.v1.io.tf_record_iterator).

    Raises:
      DataLossError: a truncated or corrupted record.
    """
    compression = TFRecordOptions.get_compression_type_string(options)
    if compression == "ZLIB":
        import io
        with open(path, "rb") as f:
            stream = io.BytesIO(zlib.decompress(f.read()))
    else:
        stream = gzip.open(path, "rb") if compression == "GZIP" else open(path, "rb")
    with stream:
        yield from read_records(stream, path)
