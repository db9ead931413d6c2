"""tf.train.Saver across task processes: each ps task writes its own shard, and a
fresh cluster on new ports restores every value bit for bit."""
import json
import os

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.training.checkpoint_management import latest_checkpoint
from nbcluster.training.device_setter import replica_device_setter
from nbcluster.training.saver import Saver

pytestmark = pytest.mark.timeout(180)

JOBS = {"ps": 2, "worker": 1}


def _values():
    rng = np.random.default_rng(11)
    return {
        "big": rng.standard_normal((1024, 1536)).astype(np.float32),  # 6 MiB
        "f64": np.concatenate([rng.standard_normal(30), [np.nan, -0.0, -np.inf]]),
        "count": np.int32(-5),
        "ids": rng.integers(-2**62, 2**62, (3, 4)),
        "mask": rng.integers(0, 2, (5, 2)).astype(bool),
        "scalar": np.float32(2.5),
        "labels": np.array([b"ps", b"\x00bytes\x00"], dtype=object),
    }


def _build(values, saved: bool) -> dict:
    """The same graph both times; the second time with other initial values, so
    only the restore can bring the saved ones back."""
    variables = {}
    with tf.device(replica_device_setter(ps_tasks=2)):
        for key, value in values.items():
            if not saved:
                value = np.array([b"?"] * value.size, dtype=object).reshape(value.shape) \
                    if value.dtype == object else np.ones_like(value)
            variables[key] = tf.Variable(value, name=key)
    return variables


def _by_task(variables: dict) -> dict:
    tasks: dict = {}
    for key, var in variables.items():
        tasks.setdefault(tf.DeviceSpec.from_string(var.device).task, set()).add(key)
    return tasks


def test_each_ps_writes_its_shard_and_a_fresh_cluster_restores(cluster_factory, tmp_path):
    values = _values()
    first = cluster_factory(JOBS)
    with tf.Graph().as_default():
        variables = _build(values, saved=True)
        placed = _by_task(variables)
        assert sorted(placed) == [0, 1]  # variables on both ps tasks
        saver = Saver()
        with tf.Session(first.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=3)
    assert path == str(tmp_path / "model.ckpt-3")
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-3-00000-of-00002.npz",
                                            "model.ckpt-3-00001-of-00002.npz",
                                            "model.ckpt-3.index"]
    index = json.loads((tmp_path / "model.ckpt-3.index").read_text())
    for shard, entry in enumerate(index["shards"]):
        # the kernel records the device it ran on: ps task i wrote shard i ...
        assert entry["device"] == f"/job:ps/replica:0/task:{shard}/device:CPU:0"
        # ... holding exactly the variables of that task
        held = {k for k, e in index["tensors"].items() if e["shard"] == shard}
        assert held == placed[shard]
        with np.load(tmp_path / entry["file"], allow_pickle=False) as npz:
            assert set(npz.files) == held
    old_ports = set(first.targets.values())
    first.stop()

    second = cluster_factory(JOBS)
    assert not old_ports & set(second.targets.values())
    with tf.Graph().as_default():
        variables = _build(values, saved=False)
        saver = Saver()
        with tf.Session(second.target("worker", 0)) as sess:
            assert not any(sess.run([tf.is_variable_initialized(v)
                                     for v in variables.values()]))
            saver.restore(sess, latest_checkpoint(str(tmp_path)))
            restored = sess.run(variables)
    for key, value in values.items():
        got = np.asarray(restored[key], dtype=object if value.dtype == object else None)
        assert got.dtype == value.dtype and got.shape == value.shape, key
        if value.dtype == object:
            assert got.tolist() == value.tolist(), key
        else:  # bit for bit: NaN payloads and the sign of zero included
            assert np.array_equal(got, value, equal_nan=value.dtype.kind == "f"), key
            assert got.tobytes() == value.tobytes(), key


def test_restore_errors_leave_the_servers_up(cluster_factory, tmp_path):
    cluster = cluster_factory(JOBS)
    target = cluster.target("worker", 0)
    with tf.Graph().as_default():
        with tf.device(replica_device_setter(ps_tasks=2)):
            tf.Variable(np.arange(4, dtype=np.float32), name="w")
            tf.Variable(np.float64(1), name="b")
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            path = Saver().save(sess, str(tmp_path / "m"))

    attempts = iter(range(100))

    def restore_into(**shapes):
        # a fresh container each time: variables outlive sessions on a server
        with tf.Graph().as_default(), tf.container(f"attempt{next(attempts)}"):
            with tf.device(replica_device_setter(ps_tasks=2)):
                variables = [tf.Variable(np.zeros(s, np.float32 if n != "b" else np.float64),
                                         name=n) for n, s in shapes.items()]
            with tf.Session(target) as sess:
                Saver().restore(sess, path)
                return sess.run(variables)

    with pytest.raises(tf.errors.NotFoundError, match="Key other not found"):
        restore_into(w=[4], b=[], other=[2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Restoring variable 'w'"):
        restore_into(w=[5], b=[])
    shard = tmp_path / "m-00001-of-00002.npz"
    good = shard.read_bytes()
    shard.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(tf.errors.DataLossError, match="m-00001-of-00002.npz"):
        restore_into(w=[4], b=[])
    shard.write_bytes(good)
    # the same task processes (w on ps 0, b on ps 1) still serve, state intact
    w, b = restore_into(w=[4], b=[])
    assert w.tolist() == [0.0, 1.0, 2.0, 3.0] and b == 1.0
