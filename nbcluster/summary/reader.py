"""`tf.train.summary_iterator`: the Event protos of one event file, in the order written."""
from __future__ import annotations

import os

from nbcluster import errors


def summary_iterator(path: str):
    """Yields each Event (tensorboard's proto) stored in the event file at `path`.

    Raises:
      NotFoundError: there is no file at `path`.
    Example:
      >>> for event in tf.train.summary_iterator(path):
      ...     for value in event.summary.value:
      ...         print(event.step, value.tag, value.simple_value)
    """
    from nbcluster.summary.tensorboard_stub import without_tensorflow
    without_tensorflow()
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise errors.NotFoundError(None, None, f"No event file at {path}")
    for record in RawEventFileLoader(path).Load():
        yield Event.FromString(record)
