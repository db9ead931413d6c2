"""A dataset's ops run on the device they are placed on: with two worker processes whose
file roots differ, a pipeline placed on /job:worker/task:1 reads (in its interleave
function too) the files only task 1 may read, and the same pipeline on task 0 may not."""
import json
import os
import socket
import subprocess
import sys

import pytest

import nbcluster as tf

from process_checks import kill_pids, wait_gone

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def two_workers(tmp_path):
    """Two `python -m nbcluster.server` worker tasks, each with its own file root."""
    roots = [tmp_path / "root0", tmp_path / "root1"]
    for root in roots:
        root.mkdir()
    spec = {"worker": [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    procs = [subprocess.Popen(
        [sys.executable, "-m", "nbcluster.server", "--cluster", json.dumps(spec),
         "--job", "worker", "--task", str(i), "--checkpoint-dir", str(roots[i]),
         "--exit-with-parent"], env=env, stdout=subprocess.DEVNULL) for i in range(2)]
    try:
        yield spec, roots
    finally:
        for p in procs:
            p.terminate()
        kill_pids(wait_gone([p.pid for p in procs], 10.0))
        for p in procs:
            p.wait()


def _pipeline(files, device: str):
    with tf.device(device):
        ds = tf.data.Dataset.from_tensor_slices(files).interleave(
            tf.data.TextLineDataset, cycle_length=2).map(lambda line: {"line": line})
        it = tf.compat.v1.data.make_initializable_iterator(ds)
    return it, it.get_next()["line"]  # get_next is built outside: it follows its iterator


def test_the_input_pipeline_runs_on_the_worker_it_is_placed_on(two_workers):
    spec, roots = two_workers
    files = []
    for name, lines in (("a.txt", "a1\na2\n"), ("b.txt", "b1\n")):
        (roots[1] / name).write_text(lines)
        files.append(str(roots[1] / name))
    target = "grpc://" + spec["worker"][0]
    with tf.Graph().as_default():
        it, line = _pipeline(files, "/job:worker/task:1")
        with tf.Session(target) as sess:
            sess.run(it.initializer)
            got = []
            while True:
                try:
                    got.append(sess.run(line))
                except tf.errors.OutOfRangeError:
                    break
        assert got == [b"a1", b"b1", b"a2"]
    with tf.Graph().as_default():
        it, line = _pipeline(files, "/job:worker/task:0")
        with tf.Session(target) as sess:
            sess.run(it.initializer)
            with pytest.raises(tf.errors.PermissionDeniedError, match="a.txt"):
                sess.run(line)


def test_a_generator_runs_only_in_the_process_that_built_it(two_workers):
    spec, _ = two_workers
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            ds = tf.data.Dataset.from_generator(lambda: iter([1, 2]), tf.int64)
            x = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
        with tf.Session("grpc://" + spec["worker"][0]) as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="not in this process"):
                sess.run(x)
    # The same graph in this process's own session: the generator is here.
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_generator(lambda: iter([1, 2]), tf.int64)
        x = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
        with tf.Session() as sess:
            assert [int(sess.run(x)), int(sess.run(x))] == [1, 2]
