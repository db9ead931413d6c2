"""Small graphs spread over the tasks of a test cluster, shared by the process tests."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import nbcluster as tf


def ps_matmul_step(target: str) -> np.ndarray:
    """A variable on ps:0 read by a matmul on worker:1, run from `target`; w @ w for
    w = [[0, 1], [2, 3]]."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.arange(4, dtype=np.float32).reshape(2, 2), name="w")
        with tf.device("/job:worker/task:1"):
            y = tf.matmul(w, w)
        init = tf.global_variables_initializer()
    with tf.Session(target, graph=graph) as sess:
        sess.run(init)
        return sess.run(y)


def spread_matmul(target: str) -> list:
    """w = 3 (2x2, on ps:0), a = 2w (worker:0), a @ w (worker:1), run from `target`:
    [[36, 36], [36, 36]] when the three tasks exchange tensors."""
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.full((2, 2), 3.0, np.float32))
        with tf.device("/job:worker/task:0"):
            a = w * 2.0
        with tf.device("/job:worker/task:1"):
            b = tf.matmul(a, w)
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(b).tolist()


def three_task_graph(w_value: np.ndarray) -> SimpleNamespace:
    """w (on ps:0) → y = x @ w (worker:0) → total = sum(2y) (worker:1).

    Returns:
      a namespace with graph, w, x, y, total, init.
    """
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(w_value, name="w")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None, w_value.shape[0]], name="x")
            y = tf.matmul(x, w, name="y")
        with tf.device("/job:worker/task:1"):
            total = tf.reduce_sum(y * 2.0, name="total")
        init = tf.global_variables_initializer()
    return SimpleNamespace(graph=graph, w=w, x=x, y=y, total=total, init=init)
