"""tf.train.Saver in one process: round trips, step suffixes, max_to_keep, bad checkpoints."""
import json
import os

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.training import saver as saver_module
from nbcluster.training.checkpoint_management import get_checkpoint_state, latest_checkpoint
from nbcluster.training.saver import Saver

pytestmark = pytest.mark.timeout(120)

RNG = np.random.default_rng(3)


def _values():
    return {"f32": RNG.standard_normal((4, 5)).astype(np.float32),
            "f64": RNG.standard_normal(7), "i32": np.int32(-12),
            "i64": RNG.integers(-2**62, 2**62, (2, 2)),
            "flag": np.array([True, False, True]),
            "names": np.array([b"ab", b"\x00c"], dtype=object)}


def _variables(values, zeros=False):
    out = {}
    for key, value in values.items():
        if zeros:
            value = np.zeros_like(value) if value.dtype != object else \
                np.array([b""] * value.size, dtype=object).reshape(value.shape)
        out[key] = tf.Variable(value, name=key)
    return out


def _assert_same(actual: dict, expected: dict):
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        got = np.asarray(actual[key], dtype=object if value.dtype == object else None)
        assert got.dtype == value.dtype, key
        assert np.array_equal(got, value), key


def test_round_trip_in_process(tmp_path, fresh_graph):
    values = _values()
    variables = _variables(values)
    saver = Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        assert path == str(tmp_path / "model.ckpt")
        for v in variables.values():  # clobber, then restore
            sess.run(v.initializer, {v.initializer.inputs[1]: np.zeros_like(
                sess.run(v)) if v.dtype != tf.string else np.array([b"", b""], object)})
        saver.restore(sess, path)
        _assert_same(sess.run(variables), values)
    index = json.loads((tmp_path / "model.ckpt.index").read_text())
    assert sorted(index["tensors"]) == sorted(values)


def test_restore_into_a_new_graph_and_session(tmp_path):
    values = _values()
    with tf.Graph().as_default():
        _variables(values)
        saver = Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "m"))
    with tf.Graph().as_default():
        variables = _variables(values, zeros=True)
        saver = Saver()
        with tf.Session() as sess:
            saver.restore(sess, path)  # no initializer: restore initializes
            _assert_same(sess.run(variables), values)


def test_dict_var_list_uses_its_keys(tmp_path):
    a = tf.Variable([1.0, 2.0], name="a")
    b = tf.Variable(3, name="scope_b")
    saver = Saver({"layer/weights": a, "count": b})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"))
        index = json.loads((tmp_path / "m.index").read_text())
        assert sorted(index["tensors"]) == ["count", "layer/weights"]
        sess.run(a.assign([0.0, 0.0]))
        only_a = Saver({"layer/weights": a})
        only_a.restore(sess, str(tmp_path / "m"))
        assert sess.run(a).tolist() == [1.0, 2.0]


def test_global_step_suffixes(tmp_path):
    v = tf.Variable(1.0, name="v")
    step = tf.Variable(42, dtype=tf.int64, name="global_step")
    saver = Saver([v])
    padded = Saver([v], pad_step_number=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, str(tmp_path / "m"), global_step=np.int64(7)) == \
            str(tmp_path / "m-7")
        assert saver.save(sess, str(tmp_path / "m"), global_step=step) == str(tmp_path / "m-42")
        assert padded.save(sess, str(tmp_path / "p"), global_step=step) == \
            str(tmp_path / "p-00000042")
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "p-00000042")
    assert os.path.exists(tmp_path / "m-7.index") and os.path.exists(tmp_path / "m-42.index")


def test_max_to_keep_deletes_old_files_and_updates_state(tmp_path):
    tf.Variable(1.0, name="v")
    saver = Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [saver.save(sess, str(tmp_path / "m"), global_step=i) for i in range(4)]
    assert saver.last_checkpoints == paths[2:]
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["checkpoint", "m-2.index", "m-2-00000-of-00001.npz", "m-3.index",
         "m-3-00000-of-00001.npz"])
    state = get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[3]
    assert state.all_model_checkpoint_paths == paths[2:]
    assert latest_checkpoint(str(tmp_path)) == paths[3]


def test_max_to_keep_none_keeps_everything(tmp_path):
    tf.Variable(1.0, name="v")
    saver = Saver(max_to_keep=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            saver.save(sess, str(tmp_path / "m"), global_step=i)
    assert all(os.path.exists(tmp_path / f"m-{i}.index") for i in range(3))
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-2")


def test_keep_checkpoint_every_n_hours(tmp_path, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(saver_module.time, "time", lambda: now[0])
    tf.Variable(1.0, name="v")
    saver = Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1.0)  # keeps one per hour
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i, minutes in enumerate([0, 30, 70, 80, 200]):
            now[0] = 1000.0 + minutes * 60
            saver.save(sess, str(tmp_path / "m"), global_step=i)
    kept = sorted(int(n[2:-6]) for n in os.listdir(tmp_path) if n.endswith(".index"))
    # m-0 (minute 0) and m-1 (30) fall in the first hour, m-2 (70) is the first
    # of the second hour, m-3 (80) is dropped again, m-4 is the newest.
    assert kept == [2, 4]


def test_sharded_false_and_relative_paths(tmp_path):
    with tf.device("/device:CPU:0"):
        tf.Variable(1.0, name="a")
    tf.Variable(2.0, name="b")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        Saver(save_relative_paths=True).save(sess, str(tmp_path / "s"))
        Saver(sharded=False, save_relative_paths=True).save(sess, str(tmp_path / "u"))
    names = sorted(os.listdir(tmp_path))
    assert "s-00000-of-00002.npz" in names and "s-00001-of-00002.npz" in names
    assert "u-00000-of-00001.npz" in names and not any(n.startswith("u-0000") and
                                                       n != "u-00000-of-00001.npz"
                                                       for n in names)
    assert 'model_checkpoint_path: "u"' in (tmp_path / "checkpoint").read_text()
    assert latest_checkpoint(str(tmp_path)) == str(tmp_path / "u")
    variables = tf.global_variables()
    zero = [v.assign(0.0) for v in variables]
    with tf.Session() as sess:  # restore reads the index, however the save was sharded
        for path, saver in [("u", Saver()), ("s", Saver(sharded=False))]:
            sess.run(zero)
            saver.restore(sess, str(tmp_path / path))
            assert sess.run(variables) == [1.0, 2.0]


def test_restore_sequentially(tmp_path):
    values = _values()
    variables = _variables(values)
    saver = Saver(restore_sequentially=True)
    restores = [op for op in tf.get_default_graph().get_operations() if op.type == "RestoreV2"]
    assert len(restores) == len(values)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"))
        saver.restore(sess, str(tmp_path / "m"))
        _assert_same(sess.run(variables), values)


def _saved(tmp_path, **variables):
    with tf.Graph().as_default():
        for name, value in variables.items():
            tf.Variable(value, name=name)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return Saver().save(sess, str(tmp_path / "m"))


def test_missing_variable_is_not_found_naming_it(tmp_path):
    path = _saved(tmp_path, v1=np.float32(1))
    tf.Variable(np.float32(0), name="v1")
    tf.Variable(np.float32(0), name="extra_var")
    with tf.Session() as sess, \
            pytest.raises(tf.errors.NotFoundError, match="Key extra_var not found"):
        Saver().restore(sess, path)


def test_shape_mismatch_is_invalid_argument_naming_it(tmp_path):
    path = _saved(tmp_path, w=np.zeros((2, 3), np.float32), b=np.zeros(3, np.float32))
    tf.Variable(np.zeros((3, 2), np.float32), name="w")
    tf.Variable(np.zeros(3, np.float32), name="b")
    with tf.Session() as sess, pytest.raises(
            tf.errors.InvalidArgumentError, match=r"Restoring variable 'w' .* shape"):
        Saver().restore(sess, path)


def test_dtype_mismatch_names_the_variable(tmp_path):
    path = _saved(tmp_path, w=np.zeros(2, np.float32))
    tf.Variable(np.zeros(2, np.float64), name="w")
    with tf.Session() as sess, pytest.raises(
            tf.errors.InvalidArgumentError, match="tensor w is float32"):
        Saver().restore(sess, path)


def test_missing_and_corrupt_files(tmp_path):
    path = _saved(tmp_path, w=np.arange(100, dtype=np.float32))
    tf.Variable(np.zeros(100, np.float32), name="w")
    saver = Saver()
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="not a valid checkpoint: .*nothing_here"):
            saver.restore(sess, str(tmp_path / "nothing_here"))
        with pytest.raises(ValueError, match="save_path when it is None"):
            saver.restore(sess, None)
        data = tmp_path / "m-00000-of-00001.npz"
        data.write_bytes(data.read_bytes()[:50])
        with pytest.raises(tf.errors.DataLossError, match="m-00000-of-00001.npz"):
            saver.restore(sess, path)
        data.unlink()
        with pytest.raises(tf.errors.NotFoundError, match="m-00000-of-00001.npz is missing"):
            saver.restore(sess, path)


def test_bad_arguments(tmp_path):
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="No variables to save"):
        Saver([])
    with pytest.raises(ValueError, match="same name: v"):
        Saver([v, v])
    with pytest.raises(TypeError, match="not a Variable: 3"):
        Saver([3])
    with pytest.raises(TypeError, match="keys must be non-empty strings"):
        Saver({1: v})
    saver = Saver([v])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(ValueError, match="Parent directory of .*no_dir"):
            saver.save(sess, str(tmp_path / "no_dir" / "m"))
        with pytest.raises(ValueError, match="latest_filename"):
            saver.save(sess, str(tmp_path / "m"), latest_filename="a/b")
        with pytest.raises(TypeError, match="must be a Session"):
            saver.save(object(), str(tmp_path / "m"))
    assert not os.listdir(tmp_path)


def test_allow_empty_does_nothing(tmp_path):
    saver = Saver([], allow_empty=True)
    with tf.Session() as sess:
        assert saver.save(sess, str(tmp_path / "m")) is None
        saver.restore(sess, str(tmp_path / "m"))
    assert not os.listdir(tmp_path)


def test_default_var_list_is_global_variables_built_under_save_scope():
    tf.Variable(1.0, name="a")
    tf.Variable(2.0, name="b", trainable=False)
    Saver()
    Saver(name="other")
    graph = tf.get_default_graph()
    save_ops = [op for op in graph.get_operations() if op.type == "SaveV2"]
    assert [op.name for op in save_ops] == ["save/SaveV2", "other/SaveV2"]
    names = save_ops[0].inputs[1].op.get_attr("value").tolist()
    assert names == [b"a", b"b"]


def test_recover_last_checkpoints_after_a_restart(tmp_path):
    tf.Variable(1.0, name="v")
    first = Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [first.save(sess, str(tmp_path / "m"), global_step=i) for i in range(2)]
        second = Saver(max_to_keep=2)  # e.g. a restarted training script
        second.recover_last_checkpoints(paths + [str(tmp_path / "never-saved")])
        assert second.last_checkpoints == paths
        second.save(sess, str(tmp_path / "m"), global_step=2)
    assert not os.path.exists(tmp_path / "m-0.index")  # the recovered oldest went
    assert os.path.exists(tmp_path / "m-1.index") and os.path.exists(tmp_path / "m-2.index")


def test_unsupported_tf_options_say_so(tmp_path):
    v = tf.Variable(1.0, name="v")
    with pytest.raises(NotImplementedError, match="reshape"):
        Saver([v], reshape=True)
    with pytest.raises(ValueError, match="write_version 2"):
        Saver([v], write_version=1)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(NotImplementedError, match="write_meta_graph"):
            Saver([v]).save(sess, str(tmp_path / "m"), write_meta_graph=True)
