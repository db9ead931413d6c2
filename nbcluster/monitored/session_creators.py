"""Session creators: the chief restores or initializes the model, other workers wait for it.

Rule: a creator returns a Session whose model is ready (its ready_op reports
nothing) or raises; it only runs the scaffold's ops, never adds any.
"""
from __future__ import annotations

import logging
import time
from typing import Optional

from nbcluster import errors
from nbcluster.client.session import Session
from nbcluster.monitored.scaffold import Scaffold
from nbcluster.training.checkpoint_management import get_checkpoint_state, latest_checkpoint

logger = logging.getLogger(__name__)

POLL_SECS = 0.5  # between readiness checks of a waiting worker (TF sleeps 30 s)


class SessionCreator:
    """Makes sessions for a MonitoredSession: subclass and implement create_session()."""

    def create_session(self) -> Session:
        raise NotImplementedError("create_session is not implemented for "
                                  f"{type(self).__name__}")


def _checked_scaffold(scaffold) -> Scaffold:
    if scaffold is None:
        return Scaffold()
    if not isinstance(scaffold, Scaffold):
        raise TypeError(f"scaffold must be a tf.train.Scaffold, got {scaffold!r}")
    return scaffold


def _new_session(scaffold: Scaffold, master: str, config) -> Session:
    scaffold.finalize()
    return Session(master, graph=scaffold.graph, config=config)


def _not_ready(sess: Session, scaffold: Scaffold, for_local_init: bool = False) -> list:
    op = scaffold.ready_for_local_init_op if for_local_init else scaffold.ready_op
    return scaffold.uninitialized(sess.run(op), for_local_init)


class ChiefSessionCreator(SessionCreator):
    """Creates the chief's session: restores the newest checkpoint, else initializes.

    Args:
      scaffold: the Scaffold (default: one with every default).
      master: the target, "" (in process) or "grpc://host:port".
      config: a ConfigProto for the Session.
      checkpoint_dir: restore the latest checkpoint recorded here, if any.
      checkpoint_filename_with_path: restore this checkpoint prefix instead.
    Raises:
      TypeError: scaffold is not a Scaffold.
      RuntimeError (from create_session): after init or restore the ready_op
        still names uninitialized variables (listed).
    Example:
      >>> creator = ChiefSessionCreator(master=server.target, checkpoint_dir="/tmp/train")
      >>> sess = creator.create_session()
    """

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 checkpoint_dir: Optional[str] = None,
                 checkpoint_filename_with_path: Optional[str] = None) -> None:
        self._scaffold = _checked_scaffold(scaffold)
        self._master, self._config = master, config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_path = checkpoint_filename_with_path

    def create_session(self) -> Session:
        scaffold = self._scaffold
        sess = _new_session(scaffold, self._master, self._config)
        try:
            path = self._checkpoint_path or (
                latest_checkpoint(self._checkpoint_dir) if self._checkpoint_dir else None)
            if path:
                logger.info("Restoring parameters from %s", path)
                scaffold.saver.restore(sess, path)
                if not self._checkpoint_path:
                    # The saver keeps counting max_to_keep from the kept checkpoints.
                    state = get_checkpoint_state(self._checkpoint_dir)
                    scaffold.saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
            else:
                sess.run(scaffold.init_op, scaffold.init_feed_dict)
                if scaffold.init_fn is not None:
                    scaffold.init_fn(sess)
            if scaffold.local_init_op is not None:
                sess.run(scaffold.local_init_op)
            missing = _not_ready(sess, scaffold)
            if missing:
                raise RuntimeError(f"Init operations did not make model ready: variables not "
                                   f"initialized: {', '.join(missing)} (init_op "
                                   f"{scaffold.init_op.name!r}, checkpoint {path!r})")
        except BaseException:
            close_quietly(sess)
            raise
        return sess


class WorkerSessionCreator(SessionCreator):
    """Creates a non-chief worker's session: waits until the chief made the model ready.

    Args:
      scaffold: the Scaffold (default: one with every default).
      master: the target, "" or "grpc://host:port".
      config: a ConfigProto for the Session.
      max_wait_secs: how long to wait for the chief.
    Raises:
      TypeError: scaffold is not a Scaffold.
      DeadlineExceededError (from create_session): still not ready after
        max_wait_secs; the message names the uninitialized variables.
    Example:
      >>> sess = WorkerSessionCreator(master=server.target, max_wait_secs=60).create_session()
    """

    def __init__(self, scaffold: Optional[Scaffold] = None, master: str = "", config=None,
                 max_wait_secs: float = 30 * 60) -> None:
        self._scaffold = _checked_scaffold(scaffold)
        self._master, self._config = master, config
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Session:
        scaffold = self._scaffold
        deadline = time.monotonic() + self._max_wait_secs
        sess, missing = None, ["(not checked yet)"]
        try:
            while True:
                if sess is None:
                    sess = _new_session(scaffold, self._master, self._config)
                try:
                    missing = self._try_ready(sess)
                except (errors.AbortedError, errors.UnavailableError) as e:
                    # A task is (re)starting: ask again with a fresh session.
                    missing = [f"(a task was unreachable: {e.message})"]
                    close_quietly(sess)
                    sess = None
                if not missing:
                    return sess
                if time.monotonic() + POLL_SECS > deadline:
                    raise errors.DeadlineExceededError(
                        None, None, f"Session was not ready after waiting "
                                    f"{self._max_wait_secs} secs; variables not initialized "
                                    f"by the chief: {', '.join(missing)}")
                logger.info("Waiting for the model to be ready; not initialized: %s",
                            ", ".join(missing))
                time.sleep(POLL_SECS)
        except BaseException:
            if sess is not None:
                close_quietly(sess)
            raise

    def _try_ready(self, sess: Session) -> list:
        scaffold = self._scaffold
        if scaffold.local_init_op is not None:
            missing = _not_ready(sess, scaffold, for_local_init=True)
            if missing:
                return missing
            sess.run(scaffold.local_init_op)
        return _not_ready(sess, scaffold)


def close_quietly(sess: Session) -> None:
    """Closes `sess`, logging instead of raising an OpError."""
    # Closing tells the master to drop the session; a master that is gone
    # (the reason we are closing, often) cannot be told.
    try:
        sess.close()
    except errors.OpError as e:
        logger.info("Closing a session failed (ignored): %s", e)
