"""Optional kernels: a value that may be absent (TF2's cond gradients keep a branch's
intermediates in them)."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors


def _op(op_type: str, inputs: list, attrs: dict, outputs: int = 1):
    op = tf.get_default_graph().create_op(op_type, inputs, attrs)
    return op.outputs if outputs > 1 else op.outputs[0]


def test_an_optional_has_its_components_or_says_it_has_none():
    with tf.Graph().as_default(), tf.Session() as sess:
        some = _op("OptionalFromValue", [tf.constant(1.5), tf.constant(np.int32([1, 2]))],
                   {"Toutput_types": [tf.float32, tf.int32]})
        none = _op("OptionalNone", [], {})
        got = _op("OptionalGetValue", [some], {"output_types": [tf.float32, tf.int32]},
                  outputs=2)
        zeros = _op("OptionalGetValue", [_op("ZerosLike", [some], {"T": tf.variant})],
                    {"output_types": [tf.float32, tf.int32]}, outputs=2)
        has = [_op("OptionalHasValue", [o], {}) for o in (some, none)]
        value, ints = sess.run(list(got))
        assert (value, ints.tolist()) == (1.5, [1, 2])
        assert sess.run(has) == [True, False]
        assert [z.tolist() for z in sess.run(list(zeros))] == [0.0, [0, 0]]
        empty = _op("OptionalGetValue", [none], {"output_types": [tf.float32]})
        with pytest.raises(errors.InvalidArgumentError, match="does not have a value"):
            sess.run(empty)
