"""`tf.summary.FileWriter`: Summary protos, graphs and run metadata into TensorBoard event files.

Rule: the event file is written by the tensorboard package's own
EventFileWriter (a queue and a flushing thread per writer), with its Event
protos, so TensorBoard reads exactly what it writes. tensorboard is imported
here only, when a FileWriter is made.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Optional

from nbcluster import errors

logger = logging.getLogger(__name__)


def _proto_bytes(value, what: str) -> bytes:
    """Serialized bytes of a proto (ours, TF's or tensorboard's) or of bytes as given."""
    if getattr(value, "shape", None) == ():  # a fetched string scalar as a numpy array
        value = value.item()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if hasattr(value, "SerializeToString"):
        return value.SerializeToString()
    raise TypeError(f"{what} must be a protocol buffer or its serialized bytes, got "
                    f"{value!r}")


def make_log_dir(logdir: str) -> str:
    """Creates `logdir`; raises TF's error class for a directory that cannot be made."""
    logdir = os.fspath(logdir)
    if not logdir:
        raise errors.InvalidArgumentError(None, None, "FileWriter needs a logdir, got ''")
    try:
        os.makedirs(logdir, exist_ok=True)
    except PermissionError as e:
        raise errors.PermissionDeniedError(
            None, None, f"Cannot create summary directory {logdir}: {e.strerror}") from None
    except (FileExistsError, NotADirectoryError) as e:
        raise errors.FailedPreconditionError(
            None, None, f"Cannot create summary directory {logdir}: {e.strerror} (a path "
                        f"component is a file)") from None
    except OSError as e:
        raise errors.UnknownError(
            None, None, f"Cannot create summary directory {logdir}: {e}") from None
    return logdir


class FileWriter:
    """Writes events to a new `events.out.tfevents.*` file in `logdir`, asynchronously.

    Args:
      logdir: the directory (created if missing).
      graph: a Graph to write at once (add_graph).
      max_queue: events held before a write blocks.
      flush_secs: seconds between flushes to disk.
      graph_def: a GraphDef to write instead of `graph` (deprecated in TF).
      filename_suffix: appended to the event file's name.
      session: accepted for TF's signature (TF2 summary writers only).
    Raises:
      PermissionDeniedError / FailedPreconditionError: `logdir` cannot be
        created (the path is named).
    Example:
      >>> writer = tf.summary.FileWriter("/tmp/logs", sess.graph)
      >>> writer.add_summary(sess.run(merged), global_step=step)
      >>> writer.close()
    """

    def __init__(self, logdir: str, graph=None, max_queue: int = 10, flush_secs: float = 120,
                 graph_def=None, filename_suffix: Optional[str] = None, session=None) -> None:
        from nbcluster.summary.tensorboard_stub import without_tensorflow
        without_tensorflow()
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._event_pb2, self._summary_pb2 = event_pb2, summary_pb2
        self._logdir = make_log_dir(logdir)
        self._options = (max_queue, flush_secs, filename_suffix or "")
        self._writer_class = EventFileWriter
        self._writer = self._open()
        self._closed = False
        self._seen_summary_tags: set = set()
        self._run_metadata_tags: set = set()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self):
        max_queue, flush_secs, suffix = self._options
        try:
            return self._writer_class(self._logdir, max_queue_size=max_queue,
                                      flush_secs=flush_secs, filename_suffix=suffix)
        except PermissionError as e:
            raise errors.PermissionDeniedError(
                None, None, f"Cannot write an event file in {self._logdir}: {e.strerror}") \
                from None
        except OSError as e:
            raise errors.UnknownError(
                None, None, f"Cannot write an event file in {self._logdir}: {e}") from None

    def get_logdir(self) -> str:
        return self._logdir

    # -- events ----------------------------------------------------------------
    def add_event(self, event) -> None:
        """Writes an Event proto as it is."""
        if self._closed:
            logger.warning("Attempting to use a closed FileWriter. The operation will be a "
                           "noop unless the FileWriter is explicitly reopened.")
            return
        self._writer.add_event(event)

    def _add(self, step, **fields) -> None:
        event = self._event_pb2.Event(wall_time=time.time(), **fields)
        if step is not None:
            event.step = int(step)
        self.add_event(event)

    def add_summary(self, summary, global_step=None) -> None:
        """Writes a Summary (a proto or the bytes a summary op returned) at `global_step`.

        A tag's plugin metadata is written with its first value only, as TF does.
        """
        parsed = self._summary_pb2.Summary()
        parsed.ParseFromString(_proto_bytes(summary, "summary"))
        for value in parsed.value:
            if not value.HasField("metadata"):
                continue
            if value.tag in self._seen_summary_tags:
                value.ClearField("metadata")
            else:
                self._seen_summary_tags.add(value.tag)
        self._add(global_step, summary=parsed)

    def add_session_log(self, session_log, global_step=None) -> None:
        log = self._event_pb2.SessionLog()
        log.ParseFromString(_proto_bytes(session_log, "session_log"))
        self._add(global_step, session_log=log)

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Writes `graph` (a Graph) or `graph_def` (a GraphDef) for TensorBoard's graph tab.

        Raises:
          ValueError: both or neither given.
        """
        if (graph is None) == (graph_def is None):
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both."
                             if graph is not None else "Pass a graph or a graph_def, got none.")
        if graph is not None:
            graph_def = graph.as_graph_def(add_shapes=True)
        self._add(global_step, graph_def=_proto_bytes(graph_def, "graph_def"))

    def add_run_metadata(self, run_metadata, tag: str, global_step=None) -> None:
        """Writes a RunMetadata (a step's stats) under `tag`.

        Raises:
          ValueError: `tag` was already used for run metadata in this writer.
        """
        if tag in self._run_metadata_tags:
            raise ValueError(f"The provided tag was already used for this event type: {tag!r}")
        self._run_metadata_tags.add(tag)
        tagged = self._event_pb2.TaggedRunMetadata(
            tag=tag, run_metadata=_proto_bytes(run_metadata, "run_metadata"))
        self._add(global_step, tagged_run_metadata=tagged)

    # -- lifetime --------------------------------------------------------------
    def flush(self) -> None:
        """Writes every pending event to disk."""
        if not self._closed:
            self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file (and stops its writing thread)."""
        if not self._closed:
            self._closed = True
            self._writer.close()

    def reopen(self) -> None:
        """After close(): writes on to a new event file in the same logdir."""
        if self._closed:
            self._writer = self._open()
            self._closed = False

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
