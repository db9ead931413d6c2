"""GPU devices through CuPy. The GPU tests skip only where no GPU is visible to
CuPy; scripts/gpu_check.sh runs them on a machine that has one."""
import numpy as np
import pytest

import nbcluster as tf
from nbcluster.runtime.devices import local_devices

pytestmark = pytest.mark.timeout(120)

GPUS = [d for d in local_devices("localhost", 0) if d.device_type == "GPU"]
needs_gpu = pytest.mark.skipif(not GPUS, reason="no GPU visible to CuPy on this machine")


def _placement(meta) -> dict:
    return {n.node_name: d.device for d in meta.step_stats.dev_stats for n in d.node_stats}


@needs_gpu
def test_gpu_device_is_listed_with_memory():
    with tf.Session() as sess:
        gpus = [d for d in sess.list_devices() if d.device_type == "GPU"]
    assert gpus and gpus[0].name.endswith("/device:GPU:0")
    assert gpus[0].memory_limit_bytes > 0


@needs_gpu
def test_matmul_pinned_to_gpu_runs_there_and_matches_numpy():
    a = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((32, 16)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 32])
        with tf.device("/device:GPU:0"):
            y = tf.nn.relu(tf.matmul(x, tf.constant(b)))
            total = tf.reduce_sum(y, axis=1)
        meta = tf.RunMetadata()
        with tf.Session() as sess:
            out = sess.run(total, {x: a}, options=tf.RunOptions(
                trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    np.testing.assert_allclose(out, np.maximum(a @ b, 0).sum(axis=1), rtol=1e-4, atol=1e-4)
    assert _placement(meta)[y.op.name].endswith("/device:GPU:0")


@needs_gpu
def test_unpinned_ops_prefer_the_gpu_and_variables_live_there():
    with tf.Graph().as_default():
        v = tf.Variable(np.ones((4, 4), np.float32))
        y = tf.matmul(v, v)
        meta = tf.RunMetadata()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                           run_metadata=meta)
    np.testing.assert_allclose(out, np.full((4, 4), 4.0))
    assert _placement(meta)[y.op.name].endswith("GPU:0")


@pytest.mark.skipif(bool(GPUS), reason="checks the CPU-only behaviour")
def test_gpu_pin_without_gpu_fails_clearly_or_soft_places():
    with tf.Graph().as_default():
        with tf.device("/device:GPU:0"):
            y = tf.constant(2.0) * 3.0
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="GPU:0"):
                sess.run(y)
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            assert sess.run(y) == 6.0
