"""rpc/socket_transport/shm_blocks.py: large tensors between tasks of one host go through reused
memfd blocks whose descriptors travel beside the frames; nothing is left in /dev/shm,
even when the tasks die by SIGKILL."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from nbcluster.launch import free_ports
from nbcluster.rpc.socket_transport import frames as wire
from nbcluster.rpc.socket_transport import shm_blocks as shm

from process_checks import kill_pids, wait_gone

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT_S = 90

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd_create "
                                "(Linux)")


def _pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return a, b, wire.FrameReader(b)


def _send(sock, pool, pairs):
    wire.send_all(sock, wire.encode_batch(pairs, pool), pool.take_fds())


def test_large_arrays_go_through_blocks_with_their_values_and_small_ones_inline():
    a, b, reader = _pair()
    pool = shm.BlockPool().lender()
    try:
        big = np.arange(shm.MIN_BYTES // 4 * 3, dtype=np.float32).reshape(3, -1)
        small = np.arange(10, dtype=np.int64)
        _send(a, pool, [("big", big), ("small", small), ("f64", big.astype(np.float64))])
        got = dict(wire.read_reply(reader))
        np.testing.assert_array_equal(got["big"], big)
        np.testing.assert_array_equal(got["small"], small)
        np.testing.assert_array_equal(got["f64"], big.astype(np.float64))
        assert got["big"].dtype == np.float32 and got["f64"].dtype == np.float64
        assert got["big"].flags.writeable  # the consumer's own copy, not the block
        assert len(pool._lent) == 2 and not reader.shared.fds
    finally:
        pool.close()
        a.close()
        b.close()


def test_a_block_is_reused_only_after_the_reply_was_read_and_received_values_stay():
    a, b, reader = _pair()
    pool = shm.BlockPool().lender()
    try:
        first = np.full(shm.MIN_BYTES // 4, 1.0, np.float32)
        _send(a, pool, [("x", first)])
        (_, one), = wire.read_reply(reader)
        block = pool._lent[0]
        _send(a, pool, [("y", first * 2)])  # same reply: a second block, not the first
        second = pool._lent[1]
        assert second is not block
        (_, two), = wire.read_reply(reader)
        pool.reclaim()  # the next request came: both may be reused
        _send(a, pool, [("z", first * 3)])
        assert pool._lent == [block] or pool._lent == [second]  # no new block
        assert len(shm.MAPPED) <= shm._KEEP_MAPPED
        (_, three), = wire.read_reply(reader)
        assert set(np.unique(one)) == {1.0} and set(np.unique(two)) == {2.0}
        assert set(np.unique(three)) == {3.0}
    finally:
        pool.close()
        a.close()
        b.close()


def test_a_block_named_but_missing_is_data_loss():
    a, b, reader = _pair()
    try:
        pool = shm.BlockPool().lender()
        pieces = wire.encode_batch([("x", np.zeros(shm.MIN_BYTES // 4, np.float32))], pool)
        wire.send_all(a, pieces)  # the descriptor left out
        with pytest.raises(Exception) as e:
            wire.read_reply(reader)
        assert "descriptor" in str(e.value)
        pool.close()
    finally:
        a.close()
        b.close()


# A ps holding a 8 MiB variable, and a worker that pulls it through the data plane.
_PS = """
import json, sys
import nbcluster as tf
cluster = json.loads(sys.argv[1])
server = tf.distribute.Server(cluster, job_name="ps", task_index=0)
print("ready", flush=True)
server.join()
"""
_WORKER_HEAD = """
import json, sys
import numpy as np
import nbcluster as tf
cluster = json.loads(sys.argv[1])
server = tf.distribute.Server(cluster, job_name="worker", task_index=0)
n = 2 * 2 ** 20
"""
_WORKER = _WORKER_HEAD + """with tf.Graph().as_default():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.range(n, dtype=tf.float32) * 0.5, name="blob")
    with tf.device("/job:worker/task:0"):
        pulled = tf.identity(v) + 1.0
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        ok = [bool(np.array_equal(sess.run(pulled), np.arange(n, dtype=np.float32) * 0.5 + 1))
              for _ in range(3)]
maps = open("/proc/self/maps").read()
print(json.dumps({"ok": ok, "memfd": "memfd:nbcluster-tensor" in maps}), flush=True)
sys.stdin.read()
"""


def _shm_names() -> set:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


@contextlib.contextmanager
def _ps_and_worker(worker_script: str):
    """A ps process serving, then a worker process running `worker_script` (both
    with the data plane and its blocks on): yields (ps, worker); kills what is left."""
    ports = free_ports(2)
    cluster = json.dumps({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("NBCLUSTER_DATA_PLANE", None)
    env.pop("NBCLUSTER_DATA_PLANE_SHM", None)
    procs = []
    try:
        ps = subprocess.Popen([sys.executable, "-c", _PS, cluster], env=env,
                              stdout=subprocess.PIPE, text=True)
        procs.append(ps)
        assert ps.stdout.readline().strip() == "ready"
        worker = subprocess.Popen([sys.executable, "-c", worker_script, cluster], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(worker)
        yield ps, worker
    finally:
        kill_pids([p.pid for p in procs if p.poll() is None])
        for p in procs:
            p.wait()
            p.stdout.close()
            if p.stdin:
                p.stdin.close()


@pytest.mark.timeout(TIMEOUT_S * 2)
def test_tasks_killed_by_sigkill_leave_nothing_in_dev_shm():
    before = _shm_names()
    with _ps_and_worker(_WORKER) as (ps, worker):
        report = json.loads(worker.stdout.readline())
        assert report == {"ok": [True, True, True], "memfd": True}
        # Killed while the worker still maps the blocks and the ps keeps them for reuse.
        for p in (ps, worker):
            os.kill(p.pid, signal.SIGKILL)
        assert wait_gone([ps.pid, worker.pid]) == []
        assert _shm_names() - before == set()


def test_memory_kept_for_reuse_is_bounded_and_huge_tensors_keep_the_socket(monkeypatch):
    monkeypatch.setattr(shm, "MAX_BYTES", 4 * shm.MIN_BYTES)
    monkeypatch.setattr(shm, "_KEEP_FREE_BYTES", 3 * shm.MIN_BYTES)
    a, b, reader = _pair()
    pool = shm.BlockPool()
    lender = pool.lender()
    try:
        huge = np.ones(5 * shm.MIN_BYTES // 4, np.float32)
        parts = [(f"t{i}", np.full(shm.MIN_BYTES // 4, i, np.float32)) for i in range(4)]
        # The huge one fills the socket: read while it is sent.
        sender = threading.Thread(target=_send, args=(a, lender, [("huge", huge)] + parts))
        sender.start()
        got = dict(wire.read_reply(reader))
        sender.join(10)
        assert len(lender._lent) == 4  # the huge one went through the socket
        np.testing.assert_array_equal(got["huge"], huge)
        assert all(set(np.unique(got[k])) == {v[0]} for k, v in parts)
        lender.reclaim()
        assert sum(block.size for block in pool._free) <= 3 * shm.MIN_BYTES
    finally:
        pool.close()
        a.close()
        b.close()


def _big(value: float) -> np.ndarray:
    return np.full(shm.IN_PLACE_BYTES // 4 + 16, value, np.float32)


def test_a_large_tensor_is_read_in_place_and_held_until_its_last_view_is_freed():
    a, b, reader = _pair()
    lender = shm.BlockPool().lender()
    try:
        _send(a, lender, [("x", _big(1.0).reshape(2, -1))])
        (_, got), = wire.read_reply(reader)
        block = lender._lent[0]
        assert got.shape == (2, _big(1.0).size // 2) and set(np.unique(got)) == {1.0}
        assert not got.flags.writeable  # the producer's block, not a copy
        assert reader.shared.held() == (block.ino,)
        part = got[1, 3:]
        del got
        assert reader.shared.held() == (block.ino,)  # a view still reads the block
        del part
        assert reader.shared.held() == ()
    finally:
        lender.close()
        a.close()
        b.close()


def test_a_held_frame_keeps_its_blocks_from_reuse_and_the_rest_go_back():
    a, b, reader = _pair()
    pool = shm.BlockPool()
    lender = pool.lender()
    try:
        _send(a, lender, [("x", _big(1.0)), ("y", _big(2.0))])
        got = dict(wire.read_reply(reader))
        kept, freed = lender._lent
        del got["y"]
        # what the consumer's next request carries, as the producer reads it
        a.sendall(wire.encode_held(reader.shared.held()))
        kind, _, inodes, _ = wire.read_request(wire.FrameReader(b))
        assert kind == wire.HELD and inodes == (kept.ino,)
        lender.reclaim(frozenset(inodes))
        assert lender._lent == [kept] and pool._free == [freed]
        _send(a, lender, [("z", _big(3.0))])  # takes the freed block, never the held one
        (_, third), = wire.read_reply(reader)
        assert lender._lent == [kept, freed]
        assert set(np.unique(got["x"])) == {1.0} and set(np.unique(third)) == {3.0}
        assert wire.encode_held(()) == b""  # nothing held: no frame
    finally:
        lender.close()
        pool.close()
        a.close()
        b.close()


def test_a_block_whose_size_is_not_sealed_is_copied_out():
    a, b, reader = _pair()
    lender = shm.BlockPool().lender()
    value = _big(4.0)
    unsealed = os.memfd_create("nbcluster-test", os.MFD_CLOEXEC)
    try:
        os.write(unsealed, value.tobytes())
        pieces = wire.encode_batch([("x", value)], lender)
        lender.take_fds()
        wire.send_all(a, pieces, [unsealed])
        (_, got), = wire.read_reply(reader)
        assert got.flags.writeable and set(np.unique(got)) == {4.0}
        assert reader.shared.held() == ()
    finally:
        os.close(unsealed)
        lender.close()
        a.close()
        b.close()


def test_blocks_lent_on_a_connection_that_ends_are_never_reused():
    pool = shm.BlockPool()
    lender = pool.lender()
    assert lender.share(_big(1.0))
    block = lender._lent[0]
    lender.close()  # its consumer may still read the block in place
    assert pool._free == [] and block.map.closed
    pool.close()


def test_a_held_frame_naming_no_blocks_is_malformed():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        a.sendall(wire.encode_request_head(wire.HELD, 0, 0, None))
        with pytest.raises(Exception, match="HELD frame naming 0 blocks"):
            wire.read_request(wire.FrameReader(b))
    finally:
        a.close()
        b.close()


# A worker keeps a pulled 8 MiB tensor in a queue of its own (read in place, so its
# block stays held) while it pulls the ps's changed values again and again, and
# still reads it after the ps died by SIGKILL.
_KEEPING_WORKER = _WORKER_HEAD + """with tf.Graph().as_default():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([n]), name="blob")
        bump = v.assign_add(tf.ones([n]))
    with tf.device("/job:worker/task:0"):
        kept = tf.FIFOQueue(1, [tf.float32], shapes=[[n]])
        keep = kept.enqueue(tf.identity(v))  # the received array itself
        pulled = tf.reduce_sum(tf.identity(v))
        taken = tf.reduce_sum(kept.dequeue())
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        sess.run(bump)
        sess.run(keep)  # kept: all ones
        sums = []
        for _ in range(4):
            sess.run(bump)
            sums.append(float(sess.run(pulled)))
        print(json.dumps(sums), flush=True)
        sys.stdin.readline()  # the ps is killed meanwhile
        print(json.dumps(float(sess.run(taken))), flush=True)
"""


@pytest.mark.timeout(TIMEOUT_S * 2)
def test_a_tensor_a_worker_keeps_stays_its_own_while_pulls_go_on_and_after_the_ps_dies():
    n = 2 * 2 ** 20
    with _ps_and_worker(_KEEPING_WORKER) as (ps, worker):
        assert json.loads(worker.stdout.readline()) == [k * n for k in (2, 3, 4, 5)]
        os.kill(ps.pid, signal.SIGKILL)
        assert wait_gone([ps.pid]) == []
        worker.stdin.write("go\n")
        worker.stdin.flush()
        assert json.loads(worker.stdout.readline()) == n
