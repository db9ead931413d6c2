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


def _indexing_ops():
    params = tf.constant(np.arange(24, dtype=np.float32).reshape(6, 4))
    idx = tf.constant([4, 0, 4, 2])
    mask = tf.constant([True, False, True, False, False, True])
    return [tf.gather(params, idx), tf.gather(params, [1, 3], axis=1),
            tf.one_hot(idx, 5), tf.unsorted_segment_sum(params, [0, 1, 0, 2, 2, 1], 3),
            tf.boolean_mask(params, mask), tf.where(params > 10.0),
            tf.where(params > 10.0, params, -params)]


def _shape_and_logic_ops():
    x = tf.constant(np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6))
    a, b = x > 0.0, x < 1.0
    return [tf.tile(x, [2, 1]), *tf.split(x, 3, axis=1), *tf.split(x, [1, 5], axis=1),
            a & b, a | b, a ^ b, ~a, tf.reduce_all(a, axis=1), tf.reduce_any(b),
            tf.count_nonzero(a), tf.is_nan(x / x), tf.clip_by_value(x, -1.0, 1.0),
            tf.clip_by_norm(x, 2.0), *tf.clip_by_global_norm([x, 2 * x], 1.0)[0]]


def _training_ops():
    rng = np.random.default_rng(3)
    logits = tf.constant(rng.standard_normal((5, 7)).astype(np.float32))
    labels = tf.constant([0, 6, 3, 3, 1])
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                          logits=logits))
    params = tf.constant(rng.standard_normal((6, 3)).astype(np.float32))
    picked = tf.reduce_sum(tf.square(tf.gather(params, [5, 1, 5])))
    return [loss, *tf.gradients(loss, [logits]), *tf.gradients(picked, [params]),
            *tf.gradients(tf.reduce_sum(tf.tile(params, [2, 2])), [params])]


@needs_gpu
@pytest.mark.parametrize("build", [_indexing_ops, _shape_and_logic_ops, _training_ops])
def test_the_newer_kernels_give_the_same_values_on_the_gpu(build):
    results = {}
    for device in ("/device:CPU:0", "/device:GPU:0"):
        with tf.Graph().as_default(), tf.device(device):
            fetches = build()
            meta = tf.RunMetadata()
            with tf.Session() as sess:
                results[device] = sess.run(fetches, options=tf.RunOptions(
                    trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
            if device.endswith("GPU:0"):
                placed = _placement(meta)
                on_gpu = [f.op.name for f in fetches if placed.get(f.op.name, "").endswith(
                    "GPU:0")]
                assert on_gpu, placed  # the kernels really ran on the device
    for cpu, gpu in zip(*results.values()):
        np.testing.assert_allclose(np.asarray(gpu), np.asarray(cpu), rtol=1e-5, atol=1e-5)


@needs_gpu
def test_scatter_updates_on_a_gpu_variable():
    with tf.Graph().as_default(), tf.device("/device:GPU:0"):
        v = tf.Variable(np.zeros((5, 2), np.float32))
        add = tf.scatter_add(v, [0, 3, 0], np.ones((3, 2), np.float32))
        upd = tf.scatter_update(v, [4], [[7.0, 8.0]])
        with tf.Session() as sess:
            sess.run(v.initializer)
            sess.run(add)
            out = sess.run(upd)
    np.testing.assert_array_equal(out, [[2, 2], [0, 0], [0, 0], [1, 1], [7, 8]])
