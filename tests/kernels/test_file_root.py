"""A served task's checkpoint ops touch files only inside its checkpoint
directory; the in-process Session("") writes where its user asks; tensor names
never reach an index file as text a shell would run."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import child_env
from nbcluster.ops import io as io_ops
from nbcluster.server import parse_ready_line
from nbcluster.server.checkpoint_dir import checkpoint_root

pytestmark = pytest.mark.timeout(90)


def _save(target: str, prefix: str, values: dict) -> None:
    with tf.Graph().as_default():
        names = list(values)
        op = io_ops.save_v2(prefix, names, [""] * len(names),
                            [tf.constant(values[n]) for n in names])
        with tf.Session(target) as sess:
            sess.run(op)


def _restore(target: str, prefix: str, name: str, dtype=tf.float32):
    with tf.Graph().as_default():
        (out,) = io_ops.restore_v2(prefix, [name], [""], [dtype])
        with tf.Session(target) as sess:
            return sess.run(out)


def _merge(target: str, sources: list, destination: str) -> None:
    with tf.Graph().as_default():
        op = io_ops.merge_v2_checkpoints(sources, destination)
        with tf.Session(target) as sess:
            sess.run(op)


@pytest.fixture
def dirs(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    return root, outside


@pytest.fixture
def server(dirs):
    with tf.distribute.Server({"worker": ["127.0.0.1:0"]}, checkpoint_dir=str(dirs[0])) as s:
        yield s


def test_save_and_restore_inside_the_root_work(server, dirs):
    root, _ = dirs
    _save(server.target, str(root / "sub" / "model"), {"w": np.arange(3, dtype=np.float32)})
    assert (root / "sub" / "model.index").is_file()
    np.testing.assert_array_equal(_restore(server.target, str(root / "sub" / "model"), "w"),
                                  [0, 1, 2])
    assert server.checkpoint_dir == os.path.realpath(root)


@pytest.mark.parametrize("where", ["outside", "dotdot", "symlink"])
def test_save_outside_the_root_is_permission_denied_and_writes_nothing(server, dirs, where):
    root, outside = dirs
    if where == "symlink":
        os.symlink(outside, root / "link")
    prefix = {"outside": str(outside / "new" / "model"),
              "dotdot": f"{root}/../outside/new/model",
              "symlink": str(root / "link" / "new" / "model")}[where]
    with pytest.raises(errors.PermissionDeniedError) as info:
        _save(server.target, prefix, {"w": np.float32(1)})
    assert prefix in info.value.message
    assert str(os.path.realpath(root)) in info.value.message
    assert list(outside.iterdir()) == []  # not even the directory was made
    # the server is still up and its root still works
    _save(server.target, str(root / "after"), {"w": np.float32(2)})
    assert _restore(server.target, str(root / "after"), "w") == 2


def test_restore_and_merge_outside_the_root_are_permission_denied(server, dirs):
    root, outside = dirs
    _save("", str(outside / "theirs"), {"secret": np.float32(42)})  # another user's file
    with pytest.raises(errors.PermissionDeniedError, match="theirs"):
        _restore(server.target, str(outside / "theirs"), "secret")
    # a symlinked index inside the root that points out is refused too
    os.symlink(outside / "theirs.index", root / "mine.index")
    with pytest.raises(errors.PermissionDeniedError, match="mine.index"):
        _restore(server.target, str(root / "mine"), "secret")
    _save(server.target, str(root / "part"), {"w": np.float32(1)})
    with pytest.raises(errors.PermissionDeniedError, match="moved"):
        _merge(server.target, [str(root / "part")], str(outside / "moved"))
    with pytest.raises(errors.PermissionDeniedError, match="theirs"):
        _merge(server.target, [str(outside / "theirs")], str(root / "stolen"))
    assert sorted(p.name for p in outside.iterdir()) == \
        ["theirs-00000-of-00001.npz", "theirs.index"]
    assert (root / "part.index").is_file()  # the refused merge moved nothing


def test_the_in_process_session_writes_where_its_user_asks(dirs):
    _, outside = dirs  # not under any server's root: the user's own process, as in TF
    _save("", str(outside / "mine"), {"w": np.float32(3)})
    assert _restore("", str(outside / "mine"), "w") == 3


def test_a_task_process_refuses_paths_outside_its_checkpoint_dir(dirs):
    root, outside = dirs
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbcluster.server", "--cluster",
         json.dumps({"worker": ["127.0.0.1:0"]}), "--checkpoint-dir", str(root)],
        env=child_env(), stdout=subprocess.PIPE, text=True)
    try:
        target = parse_ready_line(proc.stdout.readline())[2]
        with pytest.raises(errors.PermissionDeniedError, match="outside"):
            _save(target, str(outside / "model"), {"w": np.float32(1)})
        assert list(outside.iterdir()) == []
        _save(target, str(root / "model"), {"w": np.float32(5)})
        assert _restore(target, str(root / "model"), "w") == 5
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_the_root_comes_from_the_argument_then_the_environment_then_the_cwd(tmp_path,
                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert checkpoint_root(None, {}) == os.path.realpath(tmp_path)
    assert checkpoint_root(None, {"NBCLUSTER_CHECKPOINT_DIR": "sub"}) == \
        os.path.realpath(tmp_path / "sub")
    assert checkpoint_root("/x/../y", {"NBCLUSTER_CHECKPOINT_DIR": "sub"}) == "/y"
    (tmp_path / "file").write_text("")
    with pytest.raises(errors.InvalidArgumentError, match="not a directory"):
        checkpoint_root("file", {})


def test_tensor_names_are_escaped_in_the_index(tmp_path):
    names = {"$(touch pwned)": 1, "`id`; rm -rf ~ | x > y": 2, "caf\u00e9 \U0001F600": 3,
             'quote"back\\slash\nnewline': 4}
    prefix = str(tmp_path / "model")
    _save("", prefix, {n: np.float32(v) for n, v in names.items()})
    text = (tmp_path / "model.index").read_text(encoding="ascii")  # ASCII only
    for bad in ("$", "`", ";", "|", ">", "(", "'", "\\\\", '\\"'):
        assert bad not in text.replace('"format": "nbcluster.checkpoint"', "")
    index = json.loads(text)
    assert sorted(index["tensors"]) == sorted(names)  # json reads them back exactly
    for name, value in names.items():
        assert _restore("", prefix, name) == value
