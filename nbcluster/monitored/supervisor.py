"""`tf.train.Supervisor`: TF1's training-loop helper (init or restore, wait, background services).

Rule: the constructor builds every default op (init, readiness, summary,
saver) and finalizes the graph, as TF's does; sessions come from a
SessionManager, so the chief restores or initializes and the other workers
wait for it; every thread it starts (services, queue runners) is registered
with its Coordinator and joined by stop(), which re-raises the first error
any of them (or the training loop) reported.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Optional

from nbcluster.framework.graph import get_default_graph
from nbcluster.framework.graph_keys import GraphKeys
from nbcluster.monitored.scaffold import SUMMARY_OP
from nbcluster.monitored.session_creators import close_quietly
from nbcluster.monitored.session_manager import SessionManager
from nbcluster.monitored.supervisor_threads import (
    LooperThread,
    SVStepCounterThread,
    SVSummaryThread,
    SVTimerCheckpointThread,
)
from nbcluster.ops.control import group
from nbcluster.ops.readiness import report_uninitialized_variables
from nbcluster.ops.state import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
)
from nbcluster.training.queue_runner import QUEUE_RUNNERS
from nbcluster.training.saver import Saver
from nbcluster.training.thread_coordinator import Coordinator

logger = logging.getLogger(__name__)



class _UseDefault:
    def __repr__(self) -> str:
        return "Supervisor.USE_DEFAULT"


def _first_in_collection(graph, key: str):
    found = graph.get_collection(key)
    return found[0] if found else None


class Supervisor:
    """Initializes or restores a model, waits for the chief, and runs checkpoint/summary threads.

    Args (TF's; each op given as USE_DEFAULT is built here, None disables it):
      graph: the model's graph (default: the default graph); finalized here.
      ready_op: reports uninitialized variables (default
        report_uninitialized_variables()).
      ready_for_local_init_op: what local_init_op needs ready (default: the
        global variables' report).
      is_chief: whether this task initializes, restores, saves and summarizes.
      init_op: the chief's initializer (default global_variables_initializer()).
      init_feed_dict: feeds for init_op.
      local_init_op: run by every task once ready (default: the local variables').
      logdir: where checkpoints and summaries go, and restores come from.
      summary_op: run every save_summaries_secs (default merge_all()).
      saver: the Saver (default: a Saver of the global variables, if any).
      global_step: the global step tensor (default: the GLOBAL_STEP collection
        or the tensor named "global_step:0").
      save_summaries_secs, save_model_secs: the service intervals (None or 0: off).
      recovery_wait_secs: seconds between a waiting worker's readiness checks.
      stop_grace_secs: how long stop() waits for the threads.
      checkpoint_basename: file prefix of the checkpoints in logdir.
      session_manager: a SessionManager to use instead of the default one.
      summary_writer: a FileWriter (default: one on logdir for the chief).
      init_fn: `init_fn(sess)`, called after init_op.
      local_init_run_options: RunOptions for local_init_op.
    Example:
      >>> sv = tf.train.Supervisor(is_chief=(task == 0), logdir="/tmp/train",
      ...                          global_step=global_step)
      >>> with sv.managed_session(server.target) as sess:
      ...     while not sv.should_stop() and step < 1000:
      ...         _, step = sess.run([train_op, global_step])
    """

    USE_DEFAULT = _UseDefault()

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief: bool = True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir: Optional[str] = None,
                 summary_op=USE_DEFAULT, saver=USE_DEFAULT, global_step=USE_DEFAULT,
                 save_summaries_secs: Optional[float] = 120,
                 save_model_secs: Optional[float] = 600, recovery_wait_secs: float = 30,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 session_manager: Optional[SessionManager] = None,
                 summary_writer=USE_DEFAULT, init_fn=None,
                 local_init_run_options=None) -> None:
        self._graph = graph if graph is not None else get_default_graph()
        with self._graph.as_default():
            self._init_ready_ops(ready_op, ready_for_local_init_op, local_init_op)
            self._init_init_op(init_op, init_feed_dict)
            self._init_saver(saver)
            self._init_summary_op(summary_op)
            self._init_global_step(global_step)
        self._graph.finalize()
        self._is_chief, self._logdir = bool(is_chief), logdir
        self._save_summaries_secs, self._save_model_secs = save_summaries_secs, save_model_secs
        self._recovery_wait_secs, self._stop_grace_secs = recovery_wait_secs, stop_grace_secs
        self._init_fn = init_fn
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator()
        self._started_threads: list = []
        self._sessions: list = []  # those prepare_or_wait_for_session made, until stop()
        self._cancelling_threads: list = []  # each queue runner's cancel-on-stop thread
        self._graph_written = False
        if summary_writer is Supervisor.USE_DEFAULT:
            summary_writer = None
            if self._is_chief and logdir:
                from nbcluster.summary import FileWriter
                summary_writer = FileWriter(logdir)
        self._summary_writer = summary_writer
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs,
            local_init_run_options=local_init_run_options)

    # -- default ops (TF's rules) ------------------------------------------------
    def _init_ready_ops(self, ready_op, ready_for_local_init_op, local_init_op) -> None:
        graph = self._graph
        if ready_op is Supervisor.USE_DEFAULT:
            ready_op = _first_in_collection(graph, GraphKeys.READY_OP)
            if ready_op is None:
                ready_op = report_uninitialized_variables()
                graph.add_to_collection(GraphKeys.READY_OP, ready_op)
        if ready_for_local_init_op is Supervisor.USE_DEFAULT:
            ready_for_local_init_op = _first_in_collection(graph,
                                                           GraphKeys.READY_FOR_LOCAL_INIT_OP)
            if ready_for_local_init_op is None:
                ready_for_local_init_op = report_uninitialized_variables(
                    global_variables(), name="report_uninitialized_global_variables")
                graph.add_to_collection(GraphKeys.READY_FOR_LOCAL_INIT_OP,
                                        ready_for_local_init_op)
        if local_init_op is Supervisor.USE_DEFAULT:
            local_init_op = _first_in_collection(graph, GraphKeys.LOCAL_INIT_OP)
            if local_init_op is None:
                local_init_op = group(local_variables_initializer())
                graph.add_to_collection(GraphKeys.LOCAL_INIT_OP, local_init_op)
        self._ready_op, self._local_init_op = ready_op, local_init_op
        self._ready_for_local_init_op = ready_for_local_init_op

    def _init_init_op(self, init_op, init_feed_dict) -> None:
        if init_op is Supervisor.USE_DEFAULT:
            init_op = _first_in_collection(self._graph, GraphKeys.INIT_OP)
            if init_op is None:
                init_op = global_variables_initializer()
                self._graph.add_to_collection(GraphKeys.INIT_OP, init_op)
        self._init_op, self._init_feed_dict = init_op, init_feed_dict

    def _init_saver(self, saver) -> None:
        if saver is Supervisor.USE_DEFAULT:
            saver = _first_in_collection(self._graph, GraphKeys.SAVERS)
            if saver is None and global_variables():
                saver = Saver()
                self._graph.add_to_collection(GraphKeys.SAVERS, saver)
        self._saver = saver

    def _init_summary_op(self, summary_op) -> None:
        if summary_op is Supervisor.USE_DEFAULT:
            summary_op = _first_in_collection(self._graph, SUMMARY_OP)
            if summary_op is None:
                from nbcluster.ops.summary import merge_all
                summary_op = merge_all()
                if summary_op is not None:
                    self._graph.add_to_collection(SUMMARY_OP, summary_op)
        self._summary_op = summary_op

    def _init_global_step(self, global_step) -> None:
        if global_step is Supervisor.USE_DEFAULT:
            global_step = _first_in_collection(self._graph, GraphKeys.GLOBAL_STEP)
            if global_step is None:
                try:
                    global_step = self._graph.get_tensor_by_name("global_step:0")
                except (KeyError, ValueError):
                    global_step = None
                if global_step is not None and global_step.dtype.base_dtype.name not in (
                        "int32", "int64"):
                    global_step = None
        self._global_step = global_step

    # -- properties --------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    session_manager = property(lambda self: self._session_manager)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_writer = property(lambda self: self._summary_writer)
    summary_op = property(lambda self: self._summary_op)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)
    global_step = property(lambda self: self._global_step)
    saver = property(lambda self: self._saver)
    save_model_secs = property(lambda self: self._save_model_secs)
    save_path = property(lambda self: self._save_path)
    logdir = property(lambda self: self._logdir)

    # -- sessions ----------------------------------------------------------------
    def prepare_or_wait_for_session(self, master: str = "", config=None,
                                    wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200,
                                    start_standard_services: bool = True):
        """The chief's restored-or-initialized session, or a worker's once the chief is done.

        With start_standard_services the chief also writes the graph and starts
        the summary, steps/sec and checkpoint threads, and every task starts the
        graph's queue runners.

        Raises:
          DeadlineExceededError: a worker waited max_wait_secs in vain.
          NotFoundError / DataLossError / ValueError: the checkpoint named in
            logdir is missing or corrupt (the path is named).
        """
        self._coord.clear_stop()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self.init_op, saver=self.saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph()
            if start_standard_services:
                logger.info("Starting standard services.")
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        self._sessions.append(sess)
        if start_standard_services:
            logger.info("Starting queue runners.")
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config=None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True):
        """A context manager around prepare_or_wait_for_session: on exit it stops the
        threads, closes the session and re-raises what stopped training (an
        OutOfRangeError ends it cleanly instead).

        Example:
          >>> with sv.managed_session(server.target) as sess:
          ...     while not sv.should_stop():
          ...         sess.run(train_op)
        """
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 - handed to the coordinator, re-raised by stop
            self.request_stop(e)
        finally:
            try:
                self._stop(close_summary_writer)
            finally:
                if sess is not None:
                    close_quietly(sess)

    # -- services ----------------------------------------------------------------
    def _write_graph(self) -> None:
        if self._graph_written or self._summary_writer is None:
            return
        if self._logdir:
            from google.protobuf import text_format
            with open(os.path.join(self._logdir, "graph.pbtxt"), "w") as f:
                f.write(text_format.MessageToString(self._graph.as_graph_def(add_shapes=True)))
        self._summary_writer.add_graph(self._graph)
        self._graph_written = True

    def start_standard_services(self, sess) -> list:
        """Starts the chief's summary, steps/sec and checkpoint threads; returns them.

        Raises:
          RuntimeError: called on a non-chief.
        """
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because "
                               "only chief supervisors can write events.")
        if self._summary_writer is not None:
            self._summary_writer.reopen()  # closed by a previous stop()
        self._write_graph()
        threads = []
        if self._save_summaries_secs and self._summary_writer is not None:
            if self._summary_op is not None:
                threads.append(SVSummaryThread(self, sess))
            if self._global_step is not None:
                threads.append(SVStepCounterThread(self, sess))
        if self._saver is not None and self._save_model_secs and self._save_path:
            threads.append(SVTimerCheckpointThread(self, sess))
        for thread in threads:
            thread.start()
        self._started_threads.extend(threads)
        return threads

    def start_queue_runners(self, sess, queue_runners=None) -> list:
        """Starts the threads of `queue_runners` (default: the graph's); returns them."""
        if queue_runners is None:
            queue_runners = self._graph.get_collection(QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            made = qr.create_threads(sess, coord=self._coord, daemon=True, start=True)
            if getattr(qr, "cancel_op", None) is not None:
                self._cancelling_threads.append(made[-1])  # QueueRunner's contract
            threads.extend(made)
        self._started_threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None) -> LooperThread:
        """Starts a thread calling `target(*args, **kwargs)` every `timer_interval_secs`."""
        looper = LooperThread(self._coord, timer_interval_secs, target=target, args=args,
                              kwargs=kwargs)
        looper.start()
        self._started_threads.append(looper)
        return looper

    def summary_computed(self, sess, summary, global_step=None) -> None:
        """Writes a summary the caller computed, at `global_step` (default: the global step's).

        Raises:
          RuntimeError: this Supervisor has no summary writer (not the chief, or no logdir).
        """
        if self._summary_writer is None:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step is not None:
            global_step = int(sess.run(self._global_step))
        self._summary_writer.add_summary(summary, global_step)

    # -- stopping ----------------------------------------------------------------
    def request_stop(self, ex=None) -> None:
        """Asks every thread to stop; `ex` is re-raised by stop()."""
        self._coord.request_stop(ex)

    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def stop_on_exception(self):
        """A block whose exception requests the stop (see Coordinator.stop_on_exception)."""
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def stop(self, threads=None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stops and joins the threads (`threads` too), then closes the summary writer.

        The session stays open, as in TF, unless a queue runner is still in a
        step once its queue was cancelled (or just leaving it): then the
        sessions this Supervisor made are closed, which ends that step (a
        blocked take would otherwise hold the join for stop_grace_secs).

        Raises:
          the exception given to request_stop (by the loop or a thread), if any;
          RuntimeError: threads still alive after stop_grace_secs (unless ignore_live_threads).
        """
        self._stop(close_summary_writer, threads=threads,
                   ignore_live_threads=ignore_live_threads)

    def _stop(self, close_summary_writer: bool, threads=None,
              ignore_live_threads: bool = False) -> None:
        self._coord.request_stop()
        started, self._started_threads = self._started_threads, []
        sessions, self._sessions = self._sessions, []
        cancelling, self._cancelling_threads = self._cancelling_threads, []
        try:
            # The services end at once on the stop (after the step they may be
            # in); each queue runner then cancels its queue's pending enqueues.
            for thread in started:
                if (isinstance(thread, LooperThread) or thread in cancelling) and \
                        thread.ident is not None:
                    thread.join(self._stop_grace_secs)
            if any(t.is_alive() for t in started if t not in cancelling
                   and not isinstance(t, LooperThread)):
                # A runner still in its step is blocked on something its queue's
                # cancel does not free (the sync-replicas chief's take): only
                # closing the session ends that step. In TF it waits out
                # stop_grace_secs and fails the join.
                for sess in sessions:
                    close_quietly(sess)
            self._coord.join(list(threads or []) + started,
                             stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            if close_summary_writer and self._summary_writer is not None:
                from nbcluster.summary import SessionLog
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_written = False

