"""Scaffold defaults and the session creators: the chief initializes or restores, a worker waits."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors

pytestmark = pytest.mark.timeout(60)


def test_scaffold_finalize_fills_the_defaults(quadratic, fresh_graph):
    scaffold = tf.train.Scaffold()
    assert scaffold.finalize() is scaffold and fresh_graph.finalized
    assert scaffold.init_op is not None and isinstance(scaffold.saver, tf.train.Saver)
    assert scaffold.ready_op.dtype == tf.bool
    with tf.Session() as sess:
        assert scaffold.uninitialized(sess.run(scaffold.ready_op)) == ["global_step", "w"]
        sess.run(quadratic.w.initializer)
        assert scaffold.uninitialized(sess.run(scaffold.ready_op)) == ["global_step"]
        sess.run(scaffold.init_op)
        assert scaffold.uninitialized(sess.run(scaffold.ready_op)) == []


def test_scaffold_refuses_a_bad_saver_and_init_fn():
    with pytest.raises(TypeError, match="'saver'"):
        tf.train.Scaffold(saver="saver")
    with pytest.raises(TypeError, match="init_fn.*3"):
        tf.train.Scaffold(init_fn=3)
    with pytest.raises(TypeError, match="scaffold.*'x'"):
        tf.train.ChiefSessionCreator(scaffold="x")


def test_chief_runs_init_op_then_init_fn(quadratic):
    seen = []
    set_two = quadratic.w.assign(2.0)

    def init_fn(scaffold, session):
        assert isinstance(scaffold, tf.train.Scaffold)
        seen.append(float(session.run(quadratic.w)))
        session.run(set_two)
    creator = tf.train.ChiefSessionCreator(scaffold=tf.train.Scaffold(init_fn=init_fn))
    sess = creator.create_session()
    try:
        assert seen == [5.0] and sess.run(quadratic.w) == 2.0
    finally:
        sess.close()


def test_chief_restores_a_named_checkpoint(quadratic, tmp_path):
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([quadratic.w.assign(3.5), tf.assign(quadratic.step, 9)])
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=9)
    creator = tf.train.ChiefSessionCreator(scaffold=tf.train.Scaffold(saver=saver),
                                           checkpoint_filename_with_path=path)
    sess = creator.create_session()
    try:
        assert sess.run(quadratic.w) == 3.5 and sess.run(quadratic.step) == 9
    finally:
        sess.close()


def test_chief_says_which_variables_init_left_out(quadratic):
    scaffold = tf.train.Scaffold(init_op=quadratic.w.initializer)
    with pytest.raises(RuntimeError, match="not initialized: global_step"):
        tf.train.ChiefSessionCreator(scaffold=scaffold).create_session()


def test_a_worker_gives_up_naming_what_the_chief_never_initialized(quadratic):
    # An in-process session has its own variables: no chief will ever come.
    creator = tf.train.WorkerSessionCreator(max_wait_secs=1.2)
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError,
                       match=r"not ready after waiting 1.2 secs.*global_step, w"):
        creator.create_session()
    assert 0.5 < time.monotonic() - start < 5


def test_a_worker_starts_once_the_variables_are_initialized(quadratic, server_target):
    # Both sessions reach one server, so they share its variables.
    chief = tf.Session(server_target)
    worker_scaffold = tf.train.Scaffold()
    try:
        init = tf.global_variables_initializer()  # built before the scaffold finalizes
        timer = threading.Timer(1.0, lambda: chief.run(init))
        timer.start()
        start = time.monotonic()
        sess = tf.train.WorkerSessionCreator(scaffold=worker_scaffold, master=server_target,
                                             max_wait_secs=30).create_session()
        waited = time.monotonic() - start
        timer.join()
        try:
            assert waited >= 0.9
            np.testing.assert_allclose(sess.run(quadratic.w), 5.0)
        finally:
            sess.close()
    finally:
        chief.close()


def test_copy_from_scaffold_keeps_what_is_not_given(quadratic):
    def init_fn(scaffold, session):
        pass
    base = tf.train.Scaffold(init_op=quadratic.w.initializer, init_fn=init_fn)
    copy = tf.train.Scaffold(init_feed_dict={}, copy_from_scaffold=base)
    assert copy.init_op is quadratic.w.initializer and copy.init_feed_dict == {}
    assert copy._user_init_fn is init_fn and copy.saver is None
    with pytest.raises(TypeError, match="copy_from_scaffold.*'base'"):
        tf.train.Scaffold(copy_from_scaffold="base")
