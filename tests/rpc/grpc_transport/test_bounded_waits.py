"""Tensor waits cannot take a task's threads: 64 RecvTensors for a step that
never runs, then their caller dies, and the task still answers GetStatus; a
wait ends when its caller goes away, and on the server's own deadline while
no RunGraph began its step; parked large responses are capped and expire."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import grpc
import numpy as np
import pytest

from nbcluster import errors
from nbcluster.master_worker.rendezvous import make_key
from nbcluster.master_worker.worker import Worker
from nbcluster.proto import worker_pb2
from nbcluster.rpc.grpc_transport.streaming import PendingResponses
from nbcluster.rpc.grpc_transport.wait_slots import WaitSlots, peer_host
from nbcluster.runtime.devices import local_devices

pytestmark = pytest.mark.timeout(120)

_CALLER = textwrap.dedent("""
    import sys, threading, grpc
    from nbcluster.proto import worker_pb2
    address, key = sys.argv[1], sys.argv[2]
    channel = grpc.insecure_channel(address)
    recv = channel.unary_unary("/nbcluster.WorkerService/RecvTensor")
    request = worker_pb2.RecvTensorRequest(step_id=987654321, rendezvous_key=key)
    done = threading.Semaphore(0)
    calls = [recv.future(request.SerializeToString()) for _ in range(64)]  # no deadline
    for call in calls:
        call.add_done_callback(lambda _: done.release())
    for _ in range(32):  # the refused ones end at once; the rest wait
        if not done.acquire(timeout=60):
            break
    print(sum(c.done() and c.code() == grpc.StatusCode.RESOURCE_EXHAUSTED for c in calls),
          sum(not c.done() for c in calls), flush=True)
    sys.stdin.read()  # until killed
""")


def _worker_stub(target: str, method: str):
    channel = grpc.insecure_channel(target[len("grpc://"):])
    return channel, channel.unary_unary(f"/nbcluster.WorkerService/{method}")


def _key(target: str) -> str:
    channel, get_status = _worker_stub(target, "GetStatus")
    with channel:
        status = worker_pb2.GetStatusResponse.FromString(
            get_status(worker_pb2.GetStatusRequest().SerializeToString(), timeout=30))
    device = status.device_attributes[0]
    return make_key(device.name, device.incarnation, "/job:worker/replica:0/task:9/device:CPU:0",
                    "never:0")


def _get_status(target: str) -> worker_pb2.GetStatusResponse:
    channel, get_status = _worker_stub(target, "GetStatus")
    with channel:
        return worker_pb2.GetStatusResponse.FromString(
            get_status(worker_pb2.GetStatusRequest().SerializeToString(), timeout=10))


def _codes(target: str, key: str, count: int, timeout: float) -> list:
    channel, recv = _worker_stub(target, "RecvTensor")
    request = worker_pb2.RecvTensorRequest(step_id=987654321, rendezvous_key=key)
    with channel:
        calls = [recv.future(request.SerializeToString(), timeout=timeout) for _ in range(count)]
        return [c.exception().code() for c in calls]


def test_64_stuck_recv_tensors_leave_the_task_answering(server_factory):
    target = server_factory()
    key = _key(target)
    caller = subprocess.Popen([sys.executable, "-c", _CALLER, target[len("grpc://"):], key],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        refused, waiting = map(int, caller.stdout.readline().split())
        assert (refused, waiting) == (32, 32)  # past 32 waits from one host, refused at once
        assert _get_status(target).job_name == "worker"  # while 32 still wait
    finally:
        caller.kill()
        caller.wait()
        caller.stdin.close()
        caller.stdout.close()
    # The dead caller's waits end: this host gets its 32 slots back (the
    # server hears of the hang-up a moment after the kill, so ask a few times).
    for _ in range(20):
        codes = _codes(target, key, 32, timeout=1.0)
        if grpc.StatusCode.RESOURCE_EXHAUSTED not in codes:
            break
    assert codes == [grpc.StatusCode.DEADLINE_EXCEEDED] * 32
    assert _get_status(target).job_name == "worker"


def test_a_wait_for_a_step_never_begun_ends_on_the_servers_deadline(server_factory,
                                                                   monkeypatch):
    monkeypatch.setenv("NBCLUSTER_UNBEGUN_STEP_WAIT_S", "1")
    target = server_factory()
    channel, recv = _worker_stub(target, "RecvTensor")
    request = worker_pb2.RecvTensorRequest(step_id=5, rendezvous_key=_key(target))
    with channel, pytest.raises(grpc.RpcError) as info:
        recv(request.SerializeToString(), timeout=60)  # the caller would wait a minute
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "No RunGraph began step 5" in info.value.details()


# -- the logic, in process ---------------------------------------------------------

@pytest.fixture
def worker():
    return Worker("worker", 0, local_devices("worker", 0))


def _local_key(worker) -> str:
    device = next(iter(worker.devices.values()))
    return make_key(device.name, device.incarnation, "/job:worker/replica:0/task:1/device:CPU:0",
                    "x:0")


def test_a_wait_ends_when_its_caller_goes_away_and_leaves_no_step(worker):
    gone = threading.Event()
    box: list = []

    def wait():
        try:
            worker.recv_tensor(77, _local_key(worker), None, stopped=gone.is_set)
        except errors.OpError as e:
            box.append(e)
    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    while 77 not in worker._step_table.steps:  # the wait has begun
        thread.join(0.01)
    gone.set()
    worker.wake_step(77)  # what the RPC layer does when its call ends
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(box[0], errors.CancelledError)
    assert 77 not in worker._step_table.steps  # made-up step ids leave nothing behind


def test_the_unbegun_deadline_does_not_cut_a_step_that_began(worker):
    worker._server._unbegun_wait_s = 0.05
    step = worker._step_table.get(78)
    step.session = object()  # a RunGraph began it
    step.rendezvous.send(_local_key(worker), np.float32(3))
    assert worker.recv_tensor(78, _local_key(worker), None) == 3


def test_wait_slots_per_peer_and_in_all():
    slots = WaitSlots(total=3, per_peer=2)
    a1 = slots.acquire("ipv4:10.0.0.1:5000", "RecvTensor")
    slots.acquire("ipv4:10.0.0.1:5001", "RecvTensor")  # another port, the same host
    with pytest.raises(errors.ResourceExhaustedError, match="ipv4:10.0.0.1 already has 2"):
        slots.acquire("ipv4:10.0.0.1:5002", "RecvTensor")
    slots.acquire("ipv6:[::1]:5000", "RecvTensor")
    with pytest.raises(errors.ResourceExhaustedError, match="3 on this task"):
        slots.acquire("ipv4:10.0.0.2:1", "RecvTensor")
    slots.release(a1)
    slots.acquire("ipv4:10.0.0.2:1", "RecvTensor")
    assert len(slots) == 3
    assert peer_host("ipv6:[::1]:5000") == "ipv6:[::1]"


def test_parked_responses_are_capped_in_bytes_and_expire():
    pending = PendingResponses(ttl=60.0, max_bytes=100)
    first = pending.park(iter([b"a"]), 60)
    with pytest.raises(errors.ResourceExhaustedError, match="limit of 100 bytes"):
        pending.park(iter([b"b"]), 60)
    assert list(pending.take(first)) == [b"a"]
    alone = pending.park(iter([b"c"]), 500)  # one alone may be larger: big fetches still work
    assert pending.nbytes == 500
    assert list(pending.take(alone)) == [b"c"]
    expired = PendingResponses(ttl=-1.0, max_bytes=100)
    token = expired.park(iter([b"d"]), 60)
    with pytest.raises(errors.NotFoundError):
        expired.take(token)
    expired.park(iter([b"e"]), 60)  # the expired one no longer counts
