"""`tf.train.SessionManager`: restore-or-initialize for the chief, wait-until-ready for the rest.

Rule: like the session creators, it only runs ops the caller built (the
graph may be finalized); a session it fails to make ready is closed before
the error leaves. A worker polls every `recovery_wait_secs` with a fresh
session, as TF does, and a task that is not up yet (UnavailableError,
AbortedError) counts as "not ready", not as a failure.
"""
from __future__ import annotations

import logging
import time
from typing import Optional

from nbcluster import errors
from nbcluster.client.session import Session
from nbcluster.framework.graph import get_default_graph
from nbcluster.monitored.scaffold import reported_names
from nbcluster.monitored.session_creators import close_quietly
from nbcluster.training.checkpoint_management import get_checkpoint_state

logger = logging.getLogger(__name__)

_TASK_NOT_UP = (errors.UnavailableError, errors.AbortedError)


class SessionManager:
    """Makes sessions whose model is ready (TF's tf.train.SessionManager).

    Args:
      local_init_op: run in every new session once ready_for_local_init_op
        reports nothing.
      ready_op: a tensor naming what is not initialized (a string vector, as
        tf.report_uninitialized_variables makes, or a bool vector); None: no check.
      ready_for_local_init_op: the same report for what local_init_op needs.
      graph: the graph (default: the default graph).
      recovery_wait_secs: seconds between readiness checks of a waiting worker.
      local_init_run_options: RunOptions for local_init_op.
    Example:
      >>> sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
      >>> sess = sm.prepare_session(server.target, init_op=init_op, saver=saver,
      ...                           checkpoint_dir=logdir)
    """

    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs: float = 30,
                 local_init_run_options=None) -> None:
        self._local_init_op, self._ready_op = local_init_op, ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a "
                             "local_init_op, ready_for_local_init_op "
                             f"[{ready_for_local_init_op}]")

    # -- the chief -------------------------------------------------------------
    def _restore_checkpoint(self, master, saver, checkpoint_dir, checkpoint_filename_with_path,
                            wait_for_checkpoint, max_wait_secs, config) -> tuple:
        sess = Session(master, graph=self._graph, config=config)
        try:
            if checkpoint_dir and checkpoint_filename_with_path:
                raise ValueError("Can not provide both checkpoint_dir and "
                                 "checkpoint_filename_with_path.")
            if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
                return sess, False
            if checkpoint_filename_with_path:
                saver.restore(sess, checkpoint_filename_with_path)
                return sess, True
            waited, state = 0.0, get_checkpoint_state(checkpoint_dir)
            while not state or not state.model_checkpoint_path:
                if not wait_for_checkpoint or waited >= max_wait_secs:
                    return sess, False
                logger.info("Waiting for checkpoint to be available.")
                time.sleep(self._recovery_wait_secs)
                waited += self._recovery_wait_secs
                state = get_checkpoint_state(checkpoint_dir)
            logger.info("Restoring parameters from %s", state.model_checkpoint_path)
            saver.restore(sess, state.model_checkpoint_path)
            saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
            return sess, True
        except BaseException:
            close_quietly(sess)
            raise

    def prepare_session(self, master: str, init_op=None, saver=None,
                        checkpoint_dir: Optional[str] = None,
                        checkpoint_filename_with_path: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config=None, init_feed_dict=None, init_fn=None) -> Session:
        """A session restored from the latest checkpoint in `checkpoint_dir`, else initialized.

        Raises:
          RuntimeError: nothing to initialize with, or the model is still not
            ready afterwards (the uninitialized variables are named).
          NotFoundError / DataLossError / ValueError: the checkpoint the
            directory names is missing or corrupt (Saver.restore's errors, the
            path named).
        """
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config)
        try:
            if not restored:
                if init_op is None and not init_fn and self._local_init_op is None:
                    raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                       "local_init_op was given")
                if init_op is not None:
                    sess.run(init_op, feed_dict=init_feed_dict)
                if init_fn:
                    init_fn(sess)
            ok, message = self._try_run_local_init_op(sess)
            if not ok:
                raise RuntimeError(f"Init operations did not make model ready for local_init. "
                                   f"Init op: {_name(init_op)}, init fn: {init_fn}, error: "
                                   f"{message}")
            ready, message = self._model_ready(sess)
            if not ready:
                raise RuntimeError(f"Init operations did not make model ready. Init op: "
                                   f"{_name(init_op)}, init fn: {init_fn}, local_init_op: "
                                   f"{_name(self._local_init_op)}, error: {message}")
        except BaseException:
            close_quietly(sess)
            raise
        return sess

    def recover_session(self, master: str, saver=None, checkpoint_dir: Optional[str] = None,
                        checkpoint_filename_with_path: Optional[str] = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config=None) -> tuple:
        """(session, initialized): a session restored from a checkpoint if there is one."""
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config)
        try:
            ok, message = self._try_run_local_init_op(sess)
            if not restored or not ok:
                return sess, False
            ready, message = self._model_ready(sess)
            if not ready:
                logger.info("Restoring model from %s did not make model ready for local "
                            "init: %s", checkpoint_dir or checkpoint_filename_with_path, message)
            return sess, ready
        except BaseException:
            close_quietly(sess)
            raise

    # -- the other workers -----------------------------------------------------
    def wait_for_session(self, master: str, config=None,
                         max_wait_secs: float = float("inf")) -> Session:
        """A session once the chief has made the model ready (then local_init_op is run).

        Raises:
          DeadlineExceededError: still not ready after `max_wait_secs` (what
            is missing is named).
        """
        deadline = time.monotonic() + max_wait_secs
        while True:
            sess = Session(master, graph=self._graph, config=config)
            try:
                ok, message = self._try_run_local_init_op(sess)
                if ok:
                    ready, message = self._model_ready(sess)
                    if ready:
                        return sess
            except _TASK_NOT_UP as e:
                message = f"a task is not reachable yet ({type(e).__name__}: {e.message})"
            except BaseException:
                close_quietly(sess)
                raise
            close_quietly(sess)
            if time.monotonic() + self._recovery_wait_secs > deadline:
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait_secs} secs: "
                                f"{message}")
            logger.info("Waiting for model to be ready. Ready: %s", message)
            time.sleep(self._recovery_wait_secs)

    # -- readiness -------------------------------------------------------------
    def _report(self, sess, op) -> Optional[str]:
        if op is None:
            return None
        missing = reported_names(sess.run(op))
        return f"Variables not initialized: {', '.join(missing)}" if missing else None

    def _model_ready(self, sess) -> tuple:
        message = self._report(sess, self._ready_op)
        return message is None, message

    def _try_run_local_init_op(self, sess) -> tuple:
        if self._local_init_op is None:
            return True, None
        message = self._report(sess, self._ready_for_local_init_op)
        if message is not None:
            return False, message
        sess.run(self._local_init_op, options=self._local_init_run_options)
        return True, None


def _name(op) -> Optional[str]:
    return getattr(op, "name", None) if op is not None else None
