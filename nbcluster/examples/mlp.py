"""The 784 -> 128 -> 10 MLP with softmax cross entropy that tutorials, tests and
benchmarks train (TF1's distributed MNIST example's model, on synthetic data).

Rule: only graph building; build it under `tf.device(tf.train.replica_device_setter(...))`
and its variables go to the ps tasks, everything else to the worker.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import nbcluster as tf
from nbcluster.examples.synthetic import IMAGE_PIXELS, NUM_CLASSES


@dataclass(frozen=True)
class MLP:
    """The tensors and ops of one built model."""

    x: object            # placeholder float32 [None, 784]
    labels: object       # placeholder float32 [None, 10], one-hot
    weights: list        # [hid_w, sm_w]
    biases: list         # [hid_b, sm_b]
    logits: object
    loss: object         # mean softmax cross entropy
    accuracy: object
    train_op: object     # None unless an optimizer was given
    global_step: object  # None unless one was given

    @property
    def variables(self) -> list:
        return [self.weights[0], self.biases[0], self.weights[1], self.biases[1]]


def build_mlp(optimizer=None, global_step=None, hidden: int = 128, seed: int = 0,
              inputs: int = IMAGE_PIXELS, classes: int = NUM_CLASSES) -> MLP:
    """Builds the MLP into the default graph.

    Args:
      optimizer: a tf.train optimizer; when given, `train_op` minimizes the loss.
      global_step: a Variable the train op increments (e.g.
        `tf.train.get_or_create_global_step()`).
      hidden: hidden units (relu).
      seed: the weights' initializer seed (truncated normal, stddev 1/sqrt(fan in)).
      inputs, classes: the input and output widths.
    Returns: an MLP of its tensors.
    Raises:
      ValueError: a width is not positive.
    Example:
      >>> with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
      ...     model = build_mlp(tf.train.GradientDescentOptimizer(0.1))
    """
    for what, n in (("hidden", hidden), ("inputs", inputs), ("classes", classes)):
        if n < 1:
            raise ValueError(f"{what} must be positive, got {n}")
    x = tf.placeholder(tf.float32, [None, inputs], name="x")
    labels = tf.placeholder(tf.float32, [None, classes], name="labels")
    hid_w = tf.Variable(tf.truncated_normal([inputs, hidden], stddev=1.0 / math.sqrt(inputs),
                                            seed=seed), name="hid_w")
    hid_b = tf.Variable(tf.zeros([hidden]), name="hid_b")
    sm_w = tf.Variable(tf.truncated_normal([hidden, classes], stddev=1.0 / math.sqrt(hidden),
                                           seed=seed + 1), name="sm_w")
    sm_b = tf.Variable(tf.zeros([classes]), name="sm_b")
    hid = tf.nn.relu(tf.matmul(x, hid_w) + hid_b)
    logits = tf.matmul(hid, sm_w) + sm_b
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                     logits=logits),
                          name="loss")
    correct = tf.equal(tf.argmax(logits, 1), tf.argmax(labels, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32), name="accuracy")
    train_op: Optional[object] = None
    if optimizer is not None:
        train_op = optimizer.minimize(loss, global_step=global_step)
    return MLP(x, labels, [hid_w, sm_w], [hid_b, sm_b], logits, loss, accuracy, train_op,
               global_step)
