"""Fuzzing the master and worker services over real gRPC (hypothesis).

Random bytes and random-but-well-formed protos (graphs with odd tensors and
attrs, feeds of any dtype and shape) go to a task process; every call must end
with a status of TF's taxonomy that is not INTERNAL or UNKNOWN, and the task
must answer a good request after every example. Short here (NBCLUSTER_FUZZ_EXAMPLES,
default 30 per property); `NBCLUSTER_FUZZ_EXAMPLES=10000 pytest
tests/rpc/test_fuzz_services.py -s` is the long run, and prints cases, crashes,
hangs and the task's RSS before and after.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="pip install hypothesis (the dev extra)")
import grpc  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

from nbcluster.launch import child_env  # noqa: E402
from nbcluster.proto import graph_pb2, master_pb2, worker_pb2  # noqa: E402
from nbcluster.server import parse_ready_line  # noqa: E402

EXAMPLES = int(os.environ.get("NBCLUSTER_FUZZ_EXAMPLES", "30"))
pytestmark = pytest.mark.timeout(max(300, EXAMPLES // 5))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])
BAD = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
MASTER = ["CreateSession", "ExtendSession", "RunStep", "CloseSession", "ListDevices"]
WORKER = ["GetStatus", "CreateWorkerSession", "RegisterGraph", "RunGraph", "CleanupGraph",
          "DeregisterGraph", "DeleteWorkerSession"]
OPS = ["Const", "Placeholder", "Identity", "Add", "MatMul", "VariableV2", "Assign", "NoOp",
       "Fill", "Reshape", "SaveV2", "Nope"]
stats = {"cases": 0, "internal": 0, "hangs": 0}


@pytest.fixture(scope="module")
def task():
    proc = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                             json.dumps({"worker": ["127.0.0.1:0"]})],
                            env=child_env(), stdout=subprocess.PIPE, text=True)
    target = parse_ready_line(proc.stdout.readline())[2]
    channel = grpc.insecure_channel(target[len("grpc://"):])
    before = _rss(proc.pid)
    yield {"proc": proc, "channel": channel}
    crashed = proc.poll() is not None
    after = "-" if crashed else _rss(proc.pid)
    print(f"\nfuzz: {stats['cases']} cases, {int(crashed)} crashes, {stats['hangs']} hangs, "
          f"{stats['internal']} INTERNAL/UNKNOWN; task RSS {before} -> {after} KiB")
    channel.close()
    proc.kill()
    proc.wait()
    proc.stdout.close()


def _kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _rss(pid: int) -> int:
    return _kib(pid, "VmRSS")


def _call(task, service: str, method: str, data: bytes) -> None:
    stats["cases"] += 1
    stub = task["channel"].unary_unary(f"/nbcluster.{service}/{method}")
    try:
        stub(data, timeout=10)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            stats["hangs"] += 1
        if e.code() in BAD:
            stats["internal"] += 1
        assert e.code() not in BAD, f"{method}: {e.code().name}: {e.details()}"
        assert e.code() != grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} hung"
    _answers(task)


def _answers(task) -> None:
    assert task["proc"].poll() is None, "the task died"
    stub = task["channel"].unary_unary("/nbcluster.WorkerService/GetStatus")
    reply = worker_pb2.GetStatusResponse.FromString(
        stub(worker_pb2.GetStatusRequest().SerializeToString(), timeout=30))
    assert reply.job_name == "worker"


dims = st.lists(st.one_of(st.integers(0, 4), st.integers(-3, 2 ** 63 - 1)), max_size=4)


@st.composite
def tensors(draw):
    proto = graph_pb2.TensorProto(dtype=draw(st.one_of(st.sampled_from([1, 2, 3, 7, 9, 10]),
                                                       st.integers(0, 2000))))
    for d in draw(dims):
        proto.tensor_shape.dim.add(size=d)
    proto.float_val.extend(draw(st.lists(st.floats(width=32), max_size=5)))
    proto.int_val.extend(draw(st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), max_size=5)))
    proto.string_val.extend(draw(st.lists(st.binary(max_size=8), max_size=3)))
    if draw(st.booleans()):
        proto.tensor_content = draw(st.binary(max_size=64))
    return proto


@st.composite
def nodes(draw, names):
    node = graph_pb2.NodeDef(name=draw(names), op=draw(st.sampled_from(OPS)),
                             device=draw(st.sampled_from(["", "/cpu:0", "/job:x/task:9", "?"])))
    node.input.extend(draw(st.lists(st.one_of(names, st.just("^c"), st.text(max_size=6)),
                                    max_size=3)))
    for key in draw(st.lists(st.sampled_from(["dtype", "value", "shape", "T", "f", "x"]),
                             max_size=3, unique=True)):
        kind = draw(st.sampled_from(["type", "tensor", "i", "s", "shape", "func", "list"]))
        attr = node.attr[key]
        if kind == "type":
            attr.type = draw(st.integers(0, 300))
        elif kind == "tensor":
            attr.tensor.CopyFrom(draw(tensors()))
        elif kind == "i":
            attr.i = draw(st.integers(-2 ** 63, 2 ** 63 - 1))
        elif kind == "s":
            attr.s = draw(st.binary(max_size=8))
        elif kind == "shape":
            for d in draw(dims):
                attr.shape.dim.add(size=d)
        elif kind == "func":
            attr.func.name = draw(st.text(max_size=5))
        else:
            attr.list.type.extend(draw(st.lists(st.integers(0, 300), max_size=3)))
    return node


graphs = st.lists(nodes(st.sampled_from(["a", "b", "c", "a/b", ""])), max_size=5).map(
    lambda ns: graph_pb2.GraphDef(node=ns))


@FUZZ
@given(method=st.sampled_from([("MasterService", m) for m in MASTER] +
                              [("WorkerService", m) for m in WORKER]),
       data=st.binary(max_size=200))
def test_random_bytes(task, method, data):
    _call(task, *method, data)


@FUZZ
@given(graph=graphs)
def test_random_graphs_to_create_session(task, graph):
    _call(task, "MasterService", "CreateSession",
          master_pb2.CreateSessionRequest(graph_def=graph).SerializeToString())


@FUZZ
@given(graph=graphs, handle=st.sampled_from(["", "s", "worker:0:s1-0"]))
def test_random_graphs_to_register_graph(task, graph, handle):
    _call(task, "WorkerService", "RegisterGraph",
          worker_pb2.RegisterGraphRequest(session_handle=handle, graph_def=graph)
          .SerializeToString())


@pytest.fixture(scope="module")
def identity_session(task):
    x = graph_pb2.NodeDef(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    x.attr["_output_types"].list.type.append(1)
    y = graph_pb2.NodeDef(name="y", op="Identity", input=["x"])
    y.attr["T"].type = 1
    y.attr["_output_types"].list.type.append(1)
    create = task["channel"].unary_unary("/nbcluster.MasterService/CreateSession")
    reply = master_pb2.CreateSessionResponse.FromString(create(
        master_pb2.CreateSessionRequest(graph_def=graph_pb2.GraphDef(node=[x, y]))
        .SerializeToString(), timeout=30))
    return reply.session_handle


@FUZZ
@given(feed=tensors(), name=st.sampled_from(["x:0", "y:0", "x:1", "zz:0", ""]),
       fetch=st.sampled_from(["y:0", "x:0", "q:0"]))
def test_random_feeds_to_run_step(task, identity_session, feed, name, fetch):
    request = master_pb2.RunStepRequest(session_handle=identity_session, fetch=[fetch])
    request.feed.add(name=name).tensor.CopyFrom(feed)
    _call(task, "MasterService", "RunStep", request.SerializeToString())
