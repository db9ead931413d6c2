"""MonitoredSession: a Session with hooks, stop signalling, and recovery when a task restarts.

Rule: every session this object uses comes from its SessionCreator, so after
AbortedError or UnavailableError (a ps or worker restarted) the new session
is restored or initialized (chief) or waited for (worker) exactly like the
first; the failed run is then tried again with every hook around it.
"""
from __future__ import annotations

import logging
import time
from typing import Optional

from nbcluster import errors
from nbcluster.framework.graph import get_default_graph
from nbcluster.monitored.hooked_run import hooked_run
from nbcluster.monitored.session_creators import ChiefSessionCreator, SessionCreator, close_quietly
from nbcluster.training.queue_runner import start_queue_runners
from nbcluster.training.session_run_hook import check_hooks
from nbcluster.training.thread_coordinator import Coordinator

logger = logging.getLogger(__name__)

PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)
RETRY_SECS = 0.5  # between attempts to create a session while a task is down


class MonitoredSession:
    """A Session-like object that runs hooks around each run and recovers from restarts.

    Args:
      session_creator: makes (and remakes) the session; default a
        ChiefSessionCreator with a default Scaffold on target "".
      hooks: SessionRunHooks; begin() is called on each here.
      stop_grace_period_secs: accepted for TF's signature (nbcluster starts no
        queue-runner threads to wait for).
    Raises:
      TypeError: a hook is not a SessionRunHook, or session_creator is not a
        SessionCreator (named).
    Example:
      >>> with MonitoredSession(ChiefSessionCreator(master=target), hooks) as sess:
      ...     while not sess.should_stop():
      ...         sess.run(train_op)
    """

    _recover = True

    def __init__(self, session_creator: Optional[SessionCreator] = None, hooks=None,
                 stop_grace_period_secs: float = 120) -> None:
        if session_creator is None:
            session_creator = ChiefSessionCreator()
        if not hasattr(session_creator, "create_session"):
            raise TypeError(f"session_creator must have a create_session() method, got "
                            f"{session_creator!r}")
        self._hooks = check_hooks(hooks)
        self._creator = session_creator
        self._stop_grace_period_secs = stop_grace_period_secs
        self._coord = Coordinator()
        self._threads: list = []
        self._stop_requested = False
        self._graph = get_default_graph()
        self._graph_was_finalized = self._graph.finalized
        for hook in self._hooks:
            hook.begin()
        self._sess = None
        try:
            self._sess = self._create_session()
        except BaseException:
            self._unfinalize()
            raise

    # -- sessions --------------------------------------------------------------
    def _create_session(self):
        # A task still restarting fails the creation (or a hook's first run on
        # the new session) with a preemption error too: keep trying, as TF does.
        while True:
            sess = None
            try:
                sess = self._creator.create_session()
                self._coord.clear_stop()
                # the graph's input threads (tf.train.add_queue_runner), as TF starts them
                self._threads = start_queue_runners(sess, coord=self._coord)
                for hook in self._hooks:
                    hook.after_create_session(sess, self._coord)
                return sess
            except PREEMPTION_ERRORS as e:
                if not self._recover:
                    raise
                if sess is not None:
                    close_quietly(sess)
                logger.info("A task was unreachable while creating a session (%s); "
                            "trying again.", e.message)
                time.sleep(RETRY_SECS)

    def _drop_session(self) -> None:
        # Stop first, then close: closing cancels the steps the threads are
        # blocked in (a dequeue, a take), so they end at once, not after the grace.
        self._coord.request_stop()
        sess, self._sess = self._sess, None
        close_quietly(sess)
        threads, self._threads = self._threads, []
        try:
            self._coord.join(threads, self._stop_grace_period_secs, ignore_live_threads=True)
        except PREEMPTION_ERRORS as e:  # the reason the session is being remade
            logger.info("An input thread ended with %s", e.message)

    # -- running ---------------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs `fetches` like Session.run, with every hook's before_run / after_run.

        On AbortedError or UnavailableError the session is closed, a new one is
        made by the session creator (the chief restores the last checkpoint),
        and the run is tried again.

        Returns: the values of `fetches`.
        Raises:
          RuntimeError: the session is closed, or a stop was already requested.
          OpError: what the run raised (preemption errors are retried instead).
        """
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        while True:
            if self._sess is None:
                self._sess = self._create_session()
            try:
                results, stop = hooked_run(self._sess, self._hooks, fetches, feed_dict,
                                           options, run_metadata)
            except PREEMPTION_ERRORS as e:
                if not self._recover:
                    raise
                logger.info("An error was raised (%s: %s); a connected worker or ps may have "
                            "restarted. The session is closed and a new one created.",
                            type(e).__name__, e.message)
                self._drop_session()
                continue
            self._stop_requested = self._stop_requested or stop
            return results

    def should_stop(self) -> bool:
        """True once a hook requested a stop, the coordinator was told to stop, or
        the session was closed."""
        return self._sess is None or self._stop_requested or self._coord.should_stop()

    def raw_session(self):
        """The underlying Session (a new one after each recovery)."""
        return self._sess

    # -- closing ---------------------------------------------------------------
    def close(self) -> None:
        """Calls every hook's end(session), then closes the session."""
        self._close(None)

    def _close(self, exception_type) -> None:
        try:
            if exception_type is None and self._sess is not None:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            try:
                if self._sess is not None:
                    self._drop_session()
            finally:
                self._unfinalize()

    def _unfinalize(self) -> None:
        # The graph is the user's: give it back as editable as it came.
        if not self._graph_was_finalized:
            self._graph._unsafe_unfinalize()

    def __enter__(self) -> "MonitoredSession":
        return self

    def __exit__(self, exception_type, exception_value, traceback) -> bool:
        # Running out of input is how a loop over a dataset ends: close
        # normally (hooks' end runs) and swallow it.
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close(exception_type)
        return exception_type is None


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession for one process: a chief session, no recovery.

    Args:
      hooks: SessionRunHooks.
      scaffold: the Scaffold.
      master, config: the Session's target and ConfigProto.
      checkpoint_dir: restore the latest checkpoint here, if any.
      stop_grace_period_secs: accepted for TF's signature.
      checkpoint_filename_with_path: restore this checkpoint instead.
    Raises:
      TypeError: a hook is not a SessionRunHook.
    Example:
      >>> with SingularMonitoredSession(hooks=[StopAtStepHook(last_step=10)]) as sess:
      ...     while not sess.should_stop():
      ...         sess.run(train_op)
    """

    _recover = False

    def __init__(self, hooks=None, scaffold=None, master: str = "", config=None,
                 checkpoint_dir: Optional[str] = None, stop_grace_period_secs: float = 120,
                 checkpoint_filename_with_path: Optional[str] = None) -> None:
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)
