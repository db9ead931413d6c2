"""QueueRunner: threads that run ops in a loop until a coordinator stops them.

Rule: a runner thread never outlives its session quietly failing: it stops
without a word when the coordinator asked to stop, the session was closed
(the master cancels its blocked step) or the queue was closed; any other
error is handed to the coordinator, which stops everyone. As TF's: when the
last thread of a runner ends on OutOfRangeError (its input ran out, e.g.
num_epochs), the runner closes its queue, so readers get OutOfRangeError once
the queue is drained; when the coordinator stops, it cancels the queue's
pending enqueues, so a thread blocked on a full queue ends.
"""
from __future__ import annotations

import logging
import threading
from typing import Optional

from nbcluster import errors
from nbcluster.framework.graph import get_default_graph

logger = logging.getLogger(__name__)

# What a loop ends on when its session or queue goes away: a normal end.
_CLOSED_ERRORS = (errors.CancelledError, errors.OutOfRangeError)
QUEUE_RUNNERS = "queue_runners"  # TF's GraphKeys.QUEUE_RUNNERS


class QueueRunner:
    """Runs each of `enqueue_ops` in its own thread, again and again (tf.train.QueueRunner).

    Args:
      queue: the queue the ops feed.
      enqueue_ops: ops (or tensors) to run repeatedly, one thread each.
      close_op: run when every thread ended on OutOfRangeError (default: the
        queue's close()).
      cancel_op: run when the coordinator stops (default: the queue's
        close(cancel_pending_enqueues=True)).
    Raises:
      ValueError: no enqueue_ops.
    Example:
      >>> qr = QueueRunner(queue, [sync_op])
      >>> threads = qr.create_threads(sess, coord=coord, daemon=True, start=True)
    """

    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None) -> None:
        if not enqueue_ops:
            raise ValueError(f"QueueRunner needs at least one enqueue op, got {enqueue_ops!r}")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        if queue is not None and hasattr(queue, "close"):
            close_op = close_op if close_op is not None else queue.close()
            cancel_op = cancel_op if cancel_op is not None else \
                queue.close(cancel_pending_enqueues=True)
        self._close_op, self._cancel_op = close_op, cancel_op
        self._lock = threading.Lock()
        self._exceptions: list = []  # errors that ended a loop, newest last
        self._running: dict = {}  # id(session) -> its loops still running

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)

    @property
    def name(self) -> str:
        return getattr(self._queue, "name", "queue_runner")

    @property
    def exceptions_raised(self) -> list:
        """The errors that ended a thread's loop (not the normal ends)."""
        with self._lock:
            return list(self._exceptions)

    def create_threads(self, sess, coord=None, daemon: bool = False,
                       start: bool = False) -> list:
        """One thread per enqueue op, each running it until told to stop.

        Args:
          sess: the Session the ops run in.
          coord: a Coordinator; its stop ends the loops, an error of a loop is
            handed to its request_stop, and its join waits for these threads.
          daemon: make the threads daemons.
          start: start them now.
        Returns: the threads; with a coordinator, the last one waits for its
          stop and then cancels the queue's pending enqueues (as TF's).
        """
        with self._lock:
            self._running[id(sess)] = self._running.get(id(sess), 0) + len(self._enqueue_ops)
        threads = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"{self.name}-runner-{i}")
                   for i, op in enumerate(self._enqueue_ops)]
        if coord is not None and self._cancel_op is not None:
            threads.append(threading.Thread(target=self._cancel_on_stop, args=(sess, coord),
                                            daemon=daemon, name=f"{self.name}-cancel"))
        if coord is not None:  # coord.join() then waits for them too
            for thread in threads:
                coord.register_thread(thread)
        if start:
            for thread in threads:
                thread.start()
        return threads

    def _run(self, sess, op, coord) -> None:
        ran_out = False
        try:
            ran_out = self._loop(sess, op, coord)
        finally:
            with self._lock:
                self._running[id(sess)] -= 1
                last = self._running[id(sess)] == 0
                if last:
                    del self._running[id(sess)]
            if last and ran_out and self._close_op is not None:
                self._run_quietly(sess, self._close_op)

    def _cancel_on_stop(self, sess, coord) -> None:
        coord.wait_for_stop()
        self._run_quietly(sess, self._cancel_op)

    def _run_quietly(self, sess, op) -> None:
        try:
            sess.run(op)
        except (errors.OpError, RuntimeError) as e:  # the session is going away
            logger.debug("Queue runner %s: %s ignored: %s", self.name, op.name, e)

    def _loop(self, sess, op, coord) -> bool:
        """Runs `op` until a stop; True when it ended on OutOfRangeError."""
        while coord is None or not coord.should_stop():
            try:
                sess.run(op)
            except _CLOSED_ERRORS as e:
                logger.debug("Queue runner %s ends: %s", self.name, e.message)
                return isinstance(e, errors.OutOfRangeError)
            except RuntimeError as e:  # the Session itself was closed
                logger.debug("Queue runner %s ends: %s", self.name, e)
                return False
            except Exception as e:  # noqa: BLE001 - handed to the coordinator
                if coord is not None and coord.should_stop():
                    return False
                self._record(e)
                logger.error("Queue runner %s failed: %s", self.name, e)
                if coord is None:
                    raise
                coord.request_stop(e)
                return False
        return False

    def _record(self, error: Optional[BaseException]) -> None:
        with self._lock:
            self._exceptions.append(error)


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Puts `qr` in the graph's `collection`, where start_queue_runners finds it.

    Raises:
      TypeError: `qr` is not a QueueRunner.
    """
    if not isinstance(qr, QueueRunner):
        raise TypeError(f"add_queue_runner takes a QueueRunner, not {qr!r}")
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon: bool = True, start: bool = True,
                        collection: str = QUEUE_RUNNERS) -> list:
    """Starts the threads of every QueueRunner in the graph's `collection`.

    Args:
      sess: the Session (default: the default session).
      coord: a Coordinator the threads stop on (and report errors to).
    Returns:
      The threads (all of them, to `coord.join`).
    Raises:
      ValueError: no session given and none is the default.
    """
    if sess is None:
        from nbcluster.framework.default_session import get_default_session
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: no default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
