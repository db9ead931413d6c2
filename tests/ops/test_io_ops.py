"""Checkpoint ops: SaveV2 / RestoreV2 round trips, the files they write, merging, bad files."""
import json
import os
import zipfile

import numpy as np
import pytest
from op_checks import run

import nbcluster as tf
from nbcluster.ops import io as io_ops

pytestmark = pytest.mark.timeout(60)

RNG = np.random.default_rng(7)

VALUES = {
    "f16": RNG.standard_normal((3, 2)).astype(np.float16),
    "f32": np.array([np.nan, -0.0, np.inf, 1.5], np.float32),
    "f64": RNG.standard_normal((2, 3, 4)),
    "i8": np.array([-128, 127], np.int8), "u8": np.array([0, 255], np.uint8),
    "i16": np.int16(-7), "u16": np.array([65535], np.uint16),
    "i32": RNG.integers(-2**31, 2**31 - 1, 5).astype(np.int32),
    "i64": np.array([-2**63, 2**63 - 1], np.int64),
    "u32": np.array([2**32 - 1], np.uint32), "u64": np.array([2**64 - 1], np.uint64),
    "bool": np.array([[True, False], [False, True]]),
    "c64": np.array([1 + 2j], np.complex64), "c128": np.array([3 - 4j], np.complex128),
    "empty": np.zeros((0, 3), np.float32),
    "dir/str": np.array([b"a\x00", b"", "h\u00e9".encode()], dtype=object),
    "str0": np.array(b"scalar", dtype=object),
}


def _save(prefix, values):
    names = list(values)
    tensors = [tf.constant(values[n], dtype=tf.string if np.asarray(values[n]).dtype == object
                           else None) for n in names]
    run(io_ops.save_v2(prefix, names, [""] * len(names), tensors))


def _restore(prefix, names, dtypes):
    return run(io_ops.restore_v2(prefix, names, [""] * len(names), dtypes))


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if b.dtype == object:  # a fetched string scalar comes back as bytes
        a = np.asarray(a, dtype=object)
        return a.shape == b.shape and list(a.flat) == list(b.flat)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_round_trip_every_dtype_bit_for_bit(tmp_path):
    prefix = str(tmp_path / "sub" / "ck")  # the missing directory is created
    _save(prefix, VALUES)
    names = sorted(VALUES, reverse=True)  # any order, any subset
    dtypes = [tf.string if np.asarray(VALUES[n]).dtype == object
              else tf.as_dtype(np.asarray(VALUES[n]).dtype) for n in names]
    for name, value in zip(names, _restore(prefix, names, dtypes)):
        assert _same(value, VALUES[name]), name


def test_files_are_an_index_and_a_plain_npz(tmp_path):
    prefix = str(tmp_path / "ck")
    _save(prefix, {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "s": np.array(
        [b"xy", b"z"], dtype=object)})
    assert sorted(os.listdir(tmp_path)) == ["ck-00000-of-00001.npz", "ck.index"]
    index = json.loads((tmp_path / "ck.index").read_text())
    assert index["format"] == "nbcluster.checkpoint" and index["version"] == 1
    assert index["shards"] == [{"file": "ck-00000-of-00001.npz",
                                "device": "/job:localhost/replica:0/task:0/device:CPU:0"}]
    assert index["tensors"]["w"] == {"shard": 0, "dtype": "float32", "shape": [2, 3]}
    assert index["tensors"]["s"] == {"shard": 0, "dtype": "string", "shape": [2],
                                     "lengths": [2, 1]}
    with np.load(tmp_path / "ck-00000-of-00001.npz", allow_pickle=False) as npz:
        assert sorted(npz.files) == ["s", "w"]
        np.testing.assert_array_equal(npz["w"], np.arange(6).reshape(2, 3))
        assert npz["s"].tobytes() == b"xyz"


def test_missing_key_and_wrong_dtype_name_the_tensor(tmp_path):
    prefix = str(tmp_path / "ck")
    _save(prefix, {"w": np.float32(1)})
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found in checkpoint"):
        _restore(prefix, ["w", "nope"], [tf.float32, tf.float32])
    with pytest.raises(tf.errors.InvalidArgumentError, match="tensor w is float32"):
        _restore(prefix, ["w"], [tf.int32])


def test_no_checkpoint_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="ck.index"):
        _restore(str(tmp_path / "ck"), ["w"], [tf.float32])


@pytest.mark.parametrize("damage", ["garbage", "wrong_format", "escaping_file"])
def test_corrupt_index_is_data_loss(tmp_path, damage):
    prefix = str(tmp_path / "ck")
    _save(prefix, {"w": np.float32(1)})
    index_path = tmp_path / "ck.index"
    index = json.loads(index_path.read_text())
    if damage == "garbage":
        index_path.write_bytes(b"\x80not json")
    elif damage == "wrong_format":
        index["format"] = "something else"
        index_path.write_text(json.dumps(index))
    else:
        index["shards"][0]["file"] = "../elsewhere.npz"
        index_path.write_text(json.dumps(index))
    with pytest.raises(tf.errors.DataLossError, match="ck.index"):
        _restore(prefix, ["w"], [tf.float32])


def test_corrupt_or_missing_data_file(tmp_path):
    prefix = str(tmp_path / "ck")
    _save(prefix, {"w": np.arange(1000, dtype=np.float64)})
    data = tmp_path / "ck-00000-of-00001.npz"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # inside the array: the zip's CRC catches it
    data.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match="ck-00000-of-00001.npz is corrupt"):
        _restore(prefix, ["w"], [tf.float64])
    data.write_bytes(b"")
    with pytest.raises(tf.errors.DataLossError, match="ck-00000-of-00001.npz"):
        _restore(prefix, ["w"], [tf.float64])
    data.unlink()
    with pytest.raises(tf.errors.NotFoundError, match="ck-00000-of-00001.npz is missing"):
        _restore(prefix, ["w"], [tf.float64])


def test_pickled_member_is_refused(tmp_path):
    prefix = str(tmp_path / "ck")
    _save(prefix, {"w": np.float32(1)})
    with zipfile.ZipFile(tmp_path / "ck-00000-of-00001.npz", "w") as zf:
        with zf.open("w.npy", "w") as member:
            np.lib.format.write_array(member, np.array([{"a": 1}], dtype=object),
                                      allow_pickle=True)
    with pytest.raises(tf.errors.DataLossError, match="allow_pickle"):
        _restore(prefix, ["w"], [tf.float32])


def test_member_disagreeing_with_index(tmp_path):
    prefix = str(tmp_path / "ck")
    _save(prefix, {"w": np.zeros(3, np.float32)})
    with zipfile.ZipFile(tmp_path / "ck-00000-of-00001.npz", "w") as zf:
        with zf.open("w.npy", "w") as member:
            np.lib.format.write_array(member, np.zeros(4, np.float32))
    with pytest.raises(tf.errors.DataLossError, match=r"w in .* is float32\[4\]"):
        _restore(prefix, ["w"], [tf.float32])


def test_bad_save_inputs():
    with pytest.raises(ValueError, match="tensor_names has 2 entries for 1 tensors"):
        io_ops.save_v2("p", ["a", "b"], ["", ""], [tf.constant(1.0)])
    with pytest.raises(TypeError, match="prefix must be a string"):
        io_ops.save_v2(tf.constant(1.0), ["a"], [""], [tf.constant(1.0)])
    with pytest.raises(ValueError, match="prefix must have rank 0"):
        io_ops.save_v2(["p", "q"], ["a"], [""], [tf.constant(1.0)])


def test_bad_save_values(tmp_path):
    prefix = str(tmp_path / "ck")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Duplicate tensor names \['a'\]"):
        run(io_ops.save_v2(prefix, ["a", "a"], ["", ""], [tf.constant(1.0), tf.constant(2.0)]))
    with pytest.raises(tf.errors.UnimplementedError, match="'4 0,2' for tensor a"):
        run(io_ops.save_v2(prefix, ["a"], ["4 0,2"], [tf.constant([1.0, 2.0])]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="prefix is empty"):
        run(io_ops.save_v2("", ["a"], [""], [tf.constant(1.0)]))
    assert not os.listdir(tmp_path)


def test_merge_moves_data_files_and_writes_one_index(tmp_path):
    parts = [str(tmp_path / "tmp" / f"part-{i}") for i in range(2)]
    _save(parts[0], {"a": np.float32(1), "b": np.int64(2)})
    _save(parts[1], {"c": np.array([True])})
    run(io_ops.merge_v2_checkpoints(parts, str(tmp_path / "final")))
    assert sorted(os.listdir(tmp_path)) == ["final-00000-of-00002.npz",
                                            "final-00001-of-00002.npz", "final.index"]
    index = json.loads((tmp_path / "final.index").read_text())
    assert {n: e["shard"] for n, e in index["tensors"].items()} == {"a": 0, "b": 0, "c": 1}
    a, c = _restore(str(tmp_path / "final"), ["a", "c"], [tf.float32, tf.bool])
    assert a == np.float32(1) and c.tolist() == [True]


def test_merge_keeps_old_dirs_on_request_and_refuses_duplicates(tmp_path):
    parts = [str(tmp_path / "tmp" / f"part-{i}") for i in range(2)]
    _save(parts[0], {"a": np.float32(1)})
    _save(parts[1], {"a": np.float32(2)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tensor a is in more than one"):
        run(io_ops.merge_v2_checkpoints(parts, str(tmp_path / "final")))
    assert sorted(os.listdir(tmp_path / "tmp")) == sorted(
        ["part-0.index", "part-0-00000-of-00001.npz", "part-1.index",
         "part-1-00000-of-00001.npz"])  # nothing moved
    run(io_ops.merge_v2_checkpoints(parts[:1], str(tmp_path / "final"),
                                    delete_old_dirs=False))
    assert sorted(os.listdir(tmp_path / "tmp")) == ["part-1-00000-of-00001.npz",
                                                    "part-1.index"]
    with pytest.raises(tf.errors.NotFoundError, match="part-0.index"):
        run(io_ops.merge_v2_checkpoints(parts[:1], str(tmp_path / "again")))


def test_sharded_filename():
    name = io_ops.sharded_filename(tf.constant("dir/model"), 3, 12)
    assert name.dtype == tf.string and name.shape.rank == 0
    assert run(name) == b"dir/model-00003-of-00012"
    with pytest.raises(TypeError, match="shard must be int32"):
        io_ops.sharded_filename("m", tf.constant(1, tf.int64), 2)
