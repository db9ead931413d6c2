"""`tf.summary.FileWriterCache`: one shared FileWriter per log directory in this process."""
from __future__ import annotations

import os
import threading

from nbcluster.summary.writer import FileWriter


class FileWriterCache:
    """The FileWriter of a logdir, made on first `get` and shared afterwards (TF's cache).

    Example:
      >>> writer = tf.summary.FileWriterCache.get("/tmp/logs")
      >>> writer is tf.summary.FileWriterCache.get("/tmp/logs")
      True
    """

    _cache: dict = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        """The cached FileWriter for `logdir` (made now if there is none)."""
        key = os.fspath(logdir)
        with FileWriterCache._lock:
            if key not in FileWriterCache._cache:
                FileWriterCache._cache[key] = FileWriter(key)
            return FileWriterCache._cache[key]

    @staticmethod
    def clear() -> None:
        """Closes and forgets every cached writer."""
        with FileWriterCache._lock:
            writers, FileWriterCache._cache = list(FileWriterCache._cache.values()), {}
        for writer in writers:
            writer.close()
