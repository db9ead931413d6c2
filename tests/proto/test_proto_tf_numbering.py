"""Our wire messages use TensorFlow's field numbers and enum values.

Bytes are encoded by hand here with TF's numbers (as a TF process would write
them) and parsed with nbcluster's classes, so a renumbered field fails even
if both sides of nbcluster agree with each other.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from google.protobuf.unknown_fields import UnknownFieldSet

from nbcluster.proto import config_pb2, graph_pb2, master_pb2, worker_pb2

pytestmark = pytest.mark.timeout(60)

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


# --- a minimal protobuf encoder --------------------------------------------

def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # negative int32/int64 go on the wire as 10-byte varints
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def f_varint(field: int, value: int) -> bytes:
    return tag(field, VARINT) + varint(value)


def f_len(field: int, payload: bytes) -> bytes:
    return tag(field, LEN) + varint(len(payload)) + payload


def f_str(field: int, text: str) -> bytes:
    return f_len(field, text.encode())


def f_float(field: int, value: float) -> bytes:
    return tag(field, FIXED32) + struct.pack("<f", value)


def f_fixed64(field: int, value: int) -> bytes:
    return tag(field, FIXED64) + struct.pack("<Q", value)


def map_entry(field: int, key: bytes, value: bytes) -> bytes:
    """A map<K, V> entry: a nested message with key = 1, value = 2."""
    return f_len(field, key + value)


def shape(*dims: int) -> bytes:
    # TensorShapeProto.dim = 2, Dim.size = 1
    return b"".join(f_len(2, f_varint(1, d)) for d in dims)


# --- messages written with TF's numbers ------------------------------------

def job(name: str, tasks: dict[int, str]) -> bytes:
    # JobDef.name = 1, JobDef.tasks = 2 (map<int32, string>)
    return f_str(1, name) + b"".join(
        map_entry(2, f_varint(1, i), f_str(2, addr)) for i, addr in tasks.items())


def test_server_def_parses_from_tf_bytes():
    cluster = (f_len(1, job("ps", {0: "localhost:2222"}))            # ClusterDef.job = 1
               + f_len(1, job("worker", {0: "localhost:2223", 1: "localhost:2224"})))
    config = (map_entry(1, f_str(1, "CPU"), f_varint(2, 2))           # device_count = 1
              + f_varint(7, 1)                                        # allow_soft_placement
              + f_varint(11, 5000)                                    # operation_timeout_in_ms
              + f_varint(15, 1))                                      # isolate_session_state
    wire = (f_len(1, cluster)                                         # ServerDef.cluster
            + f_str(2, "worker")                                      # job_name
            + f_varint(3, 1)                                          # task_index
            + f_len(4, config)                                        # default_session_config
            + f_str(5, "grpc")                                        # protocol
            + f_varint(6, 2224))                                      # port

    sd = config_pb2.ServerDef.FromString(wire)

    jobs = {j.name: dict(j.tasks) for j in sd.cluster.job}
    assert jobs == {"ps": {0: "localhost:2222"},
                    "worker": {0: "localhost:2223", 1: "localhost:2224"}}
    assert sd.job_name == "worker"
    assert sd.task_index == 1
    assert sd.protocol == "grpc"
    assert sd.port == 2224
    cfg = sd.default_session_config
    assert cfg.operation_timeout_in_ms == 5000
    assert dict(cfg.device_count) == {"CPU": 2}
    assert cfg.allow_soft_placement is True
    assert cfg.isolate_session_state is True
    assert len(UnknownFieldSet(sd)) == 0


def test_tensor_proto_with_tensor_content():
    values = np.arange(6, dtype="<f4").reshape(2, 3) * 1.5
    wire = (f_varint(1, 1)                        # dtype = DT_FLOAT
            + f_len(2, shape(2, 3))               # tensor_shape
            + f_len(4, values.tobytes()))         # tensor_content

    t = graph_pb2.TensorProto.FromString(wire)

    assert t.dtype == graph_pb2.DT_FLOAT
    assert [d.size for d in t.tensor_shape.dim] == [2, 3]
    assert len(t.tensor_content) == 24
    back = np.frombuffer(t.tensor_content, dtype="<f4").reshape(2, 3)
    np.testing.assert_array_equal(back, values)


def test_tensor_proto_with_float_val_packed_and_unpacked():
    floats = [1.5, -2.0, 3.25]
    packed = f_len(5, struct.pack("<3f", *floats))              # float_val = 5, packed
    unpacked = b"".join(f_float(5, v) for v in floats)          # same, one tag each
    for body in (packed, unpacked):
        t = graph_pb2.TensorProto.FromString(f_varint(1, 1) + f_len(2, shape(3)) + body)
        assert t.dtype == graph_pb2.DT_FLOAT
        assert [d.size for d in t.tensor_shape.dim] == [3]
        assert list(t.float_val) == floats
        assert t.tensor_content == b""


def test_tensor_proto_typed_lists():
    wire = (f_varint(1, 9)                                      # DT_INT64
            + f_len(10, varint(-3) + varint(1 << 40))           # int64_val = 10
            + f_len(8, b"") + f_len(8, b"ab")                   # string_val = 8
            + f_len(11, varint(1) + varint(0))                  # bool_val = 11
            + f_len(13, varint(0x3C00))                         # half_val = 13
            + f_len(16, varint(7))                              # uint32_val = 16
            + f_len(17, varint((1 << 64) - 1)))                 # uint64_val = 17
    t = graph_pb2.TensorProto.FromString(wire)
    assert list(t.int64_val) == [-3, 1 << 40]
    assert list(t.string_val) == [b"", b"ab"]
    assert list(t.bool_val) == [True, False]
    assert list(t.half_val) == [0x3C00]
    assert list(t.uint32_val) == [7]
    assert list(t.uint64_val) == [(1 << 64) - 1]


def test_graph_def_with_node_and_attrs():
    attr_t = map_entry(5, f_str(1, "T"), f_len(2, f_varint(6, 1)))           # AttrValue.type
    attr_ta = map_entry(5, f_str(1, "transpose_a"), f_len(2, f_varint(5, 1)))  # AttrValue.b
    attr_list = map_entry(5, f_str(1, "dims"),
                          f_len(2, f_len(1, f_len(3, varint(4) + varint(5)))))  # list.i
    node = (f_str(1, "mm") + f_str(2, "MatMul") + f_str(3, "x") + f_str(3, "w:0")
            + f_str(3, "^init") + f_str(4, "/job:worker/task:1/device:CPU:0")
            + attr_t + attr_ta + attr_list)
    versions = f_varint(1, 27) + f_varint(2, 0)
    g = graph_pb2.GraphDef.FromString(f_len(1, node) + f_len(4, versions))

    (n,) = g.node
    assert (n.name, n.op, list(n.input)) == ("mm", "MatMul", ["x", "w:0", "^init"])
    assert n.device == "/job:worker/task:1/device:CPU:0"
    assert n.attr["T"].type == graph_pb2.DT_FLOAT
    assert n.attr["transpose_a"].b is True
    assert list(n.attr["dims"].list.i) == [4, 5]
    assert g.versions.producer == 27


def test_step_stats_and_device_attributes():
    node_stats = (f_str(1, "mm") + f_varint(2, 1_700_000_000_000_000)
                  + f_varint(3, 5) + f_varint(4, 9) + f_varint(5, 10)
                  + f_str(8, "mm = MatMul(x, w)") + f_varint(10, 3)
                  + f_varint(13, 1_700_000_000_000_000_000) + f_varint(16, 10_000))
    dev = (f_str(1, "/job:worker/replica:0/task:1/device:CPU:0") + f_len(2, node_stats)
           + map_entry(3, f_varint(1, 3), f_str(2, "executor-3")))
    md = config_pb2.RunMetadata.FromString(f_len(1, f_len(1, dev)))
    (d,) = md.step_stats.dev_stats
    (s,) = d.node_stats
    assert s.node_name == "mm" and s.all_start_micros == 1_700_000_000_000_000
    assert (s.op_start_rel_micros, s.op_end_rel_micros, s.all_end_rel_micros) == (5, 9, 10)
    assert s.timeline_label == "mm = MatMul(x, w)" and s.thread_id == 3
    assert s.all_start_nanos == 1_700_000_000_000_000_000 and s.all_end_rel_nanos == 10_000
    assert dict(d.thread_names) == {3: "executor-3"}

    attrs = (f_str(1, "/job:ps/replica:0/task:0/device:CPU:0") + f_str(2, "CPU")
             + f_varint(4, 1 << 30) + f_len(5, f_varint(1, 1) + f_varint(2, 0))
             + f_fixed64(6, 0xDEADBEEF12345678) + f_str(7, "cpu") + f_varint(8, -1))
    da = config_pb2.DeviceAttributes.FromString(attrs)
    assert da.device_type == "CPU" and da.memory_limit == 1 << 30
    assert da.locality.bus_id == 1
    assert da.incarnation == 0xDEADBEEF12345678
    assert da.physical_device_desc == "cpu" and da.xla_global_id == -1


def test_run_step_response_status_in_body():
    named = f_str(1, "y:0") + f_len(2, f_varint(1, 3) + f_len(7, varint(42)))  # DT_INT32
    r = master_pb2.RunStepResponse.FromString(
        f_len(1, named) + f_varint(3, 3) + f_str(4, "bad feed"))
    assert r.tensor[0].name == "y:0" and list(r.tensor[0].tensor.int_val) == [42]
    assert r.status_code == config_pb2.INVALID_ARGUMENT
    assert r.status_error_message == "bad feed"


@pytest.mark.parametrize("name, value", [
    ("DT_INVALID", 0), ("DT_FLOAT", 1), ("DT_DOUBLE", 2), ("DT_INT32", 3),
    ("DT_UINT8", 4), ("DT_STRING", 7), ("DT_COMPLEX64", 8), ("DT_INT64", 9),
    ("DT_BOOL", 10), ("DT_BFLOAT16", 14), ("DT_COMPLEX128", 18), ("DT_HALF", 19),
    ("DT_RESOURCE", 20), ("DT_VARIANT", 21), ("DT_UINT32", 22), ("DT_UINT64", 23),
    ("DT_FLOAT_REF", 101), ("DT_RESOURCE_REF", 120), ("DT_UINT64_REF", 123),
])
def test_data_type_values(name, value):
    assert graph_pb2.DataType.Value(name) == value


def test_every_plain_dtype_has_its_ref():
    names = graph_pb2.DataType.keys()
    for name in names:
        value = graph_pb2.DataType.Value(name)
        if 0 < value < 100:
            assert graph_pb2.DataType.Value(name + "_REF") == value + 100


def test_other_enum_values():
    assert config_pb2.RunOptions.NO_TRACE == 0
    assert config_pb2.RunOptions.SOFTWARE_TRACE == 1
    assert config_pb2.RunOptions.HARDWARE_TRACE == 2
    assert config_pb2.RunOptions.FULL_TRACE == 3
    assert config_pb2.OptimizerOptions.L0 == -1
    codes = {"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3,
             "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5, "ALREADY_EXISTS": 6,
             "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
             "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13,
             "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16}
    assert {k: config_pb2.Code.Value(k) for k in codes} == codes


# TF's numbers for a sample of fields in every message family.
TF_FIELD_NUMBERS = {
    config_pb2.ConfigProto: {
        "device_count": 1, "intra_op_parallelism_threads": 2, "placement_period": 3,
        "device_filters": 4, "inter_op_parallelism_threads": 5, "gpu_options": 6,
        "allow_soft_placement": 7, "log_device_placement": 8, "use_per_session_threads": 9,
        "graph_options": 10, "operation_timeout_in_ms": 11,
        "session_inter_op_thread_pool": 12, "rpc_options": 13, "cluster_def": 14,
        "isolate_session_state": 15, "experimental": 16,
        "share_cluster_devices_in_session": 17},
    config_pb2.ConfigProto.Experimental: {
        "collective_group_leader": 1, "executor_type": 3, "recv_buf_max_chunk": 4,
        "share_session_state_in_clusterspec_propagation": 8, "disable_thread_spinning": 9,
        "session_metadata": 11, "optimize_for_static_graph": 12,
        "disable_output_partition_graphs": 14},
    config_pb2.GPUOptions: {
        "per_process_gpu_memory_fraction": 1, "allocator_type": 2,
        "deferred_deletion_bytes": 3, "allow_growth": 4, "visible_device_list": 5,
        "polling_active_delay_usecs": 6, "polling_inactive_delay_msecs": 7,
        "force_gpu_compatible": 8},
    config_pb2.RPCOptions: {
        "use_rpc_for_inprocess_master": 1, "compression_algorithm": 2,
        "compression_level": 3, "cache_rpc_response": 4,
        "disable_session_connection_sharing": 5, "num_channels_per_target": 6},
    config_pb2.RunOptions: {
        "trace_level": 1, "timeout_in_ms": 2, "inter_op_thread_pool": 3,
        "output_partition_graphs": 5, "report_tensor_allocations_upon_oom": 7,
        "experimental": 8},
    config_pb2.RunMetadata: {"step_stats": 1, "partition_graphs": 3, "session_metadata": 5},
    config_pb2.NodeExecStats: {
        "node_name": 1, "all_start_micros": 2, "op_start_rel_micros": 3,
        "op_end_rel_micros": 4, "all_end_rel_micros": 5, "memory": 6, "output": 7,
        "timeline_label": 8, "scheduled_micros": 9, "thread_id": 10,
        "referenced_tensor": 11, "memory_stats": 12, "all_start_nanos": 13,
        "op_start_rel_nanos": 14, "op_end_rel_nanos": 15, "all_end_rel_nanos": 16,
        "scheduled_nanos": 17},
    config_pb2.DeviceAttributes: {
        "name": 1, "device_type": 2, "memory_limit": 4, "locality": 5, "incarnation": 6,
        "physical_device_desc": 7, "xla_global_id": 8},
    config_pb2.ServerDef: {
        "cluster": 1, "job_name": 2, "task_index": 3, "default_session_config": 4,
        "protocol": 5, "port": 6},
    graph_pb2.TensorProto: {
        "dtype": 1, "tensor_shape": 2, "version_number": 3, "tensor_content": 4,
        "float_val": 5, "double_val": 6, "int_val": 7, "string_val": 8, "scomplex_val": 9,
        "int64_val": 10, "bool_val": 11, "dcomplex_val": 12, "half_val": 13,
        "uint32_val": 16, "uint64_val": 17},
    graph_pb2.AttrValue: {
        "list": 1, "s": 2, "i": 3, "f": 4, "b": 5, "type": 6, "shape": 7, "tensor": 8,
        "placeholder": 9, "func": 10},
    graph_pb2.GraphDef: {"node": 1, "versions": 4},
    master_pb2.RunStepRequest: {
        "session_handle": 1, "feed": 2, "fetch": 3, "target": 4, "options": 5,
        "store_errors_in_response_body": 7, "request_id": 8},
    master_pb2.ExtendSessionResponse: {"new_graph_version": 4},
    master_pb2.PartialRunSetupRequest: {
        "session_handle": 1, "feed": 2, "fetch": 3, "target": 4, "request_id": 5},
    master_pb2.PartialRunSetupResponse: {"partial_run_handle": 1},
    master_pb2.MakeCallableRequest: {"session_handle": 1, "options": 2, "request_id": 3},
    master_pb2.MakeCallableResponse: {"handle": 1},
    master_pb2.RunCallableRequest: {"session_handle": 1, "handle": 2, "feed": 3,
                                    "request_id": 4},
    master_pb2.RunCallableResponse: {"fetch": 1, "metadata": 2},
    master_pb2.ReleaseCallableRequest: {"session_handle": 1, "handle": 2},
    config_pb2.CallableOptions: {
        "feed": 1, "fetch": 2, "target": 3, "run_options": 4, "tensor_connection": 5,
        "feed_devices": 6, "fetch_devices": 7, "fetch_skip_sync": 8},
    config_pb2.TensorConnection: {"from_tensor": 1, "to_tensor": 2},
    worker_pb2.RunGraphRequest: {
        "graph_handle": 1, "step_id": 2, "send": 3, "recv_key": 4, "exec_opts": 5,
        "session_handle": 8, "store_errors_in_response_body": 9,
        "create_worker_session_called": 10, "request_id": 11},
    worker_pb2.RecvTensorRequest: {
        "step_id": 1, "rendezvous_key": 2, "dma_ok": 3, "client_locality": 4,
        "server_locality": 5, "request_id": 7},
    worker_pb2.RecvTensorResponse: {
        "tensor": 1, "is_dead": 2, "send_start_micros": 3, "require_ack": 5},
}


@pytest.mark.parametrize("message", list(TF_FIELD_NUMBERS), ids=lambda m: m.DESCRIPTOR.name)
def test_field_numbers(message):
    fields = message.DESCRIPTOR.fields_by_name
    expected = TF_FIELD_NUMBERS[message]
    assert {name: fields[name].number for name in expected} == expected


def test_incarnation_is_fixed64():
    from google.protobuf.descriptor import FieldDescriptor

    field = config_pb2.DeviceAttributes.DESCRIPTOR.fields_by_name["incarnation"]
    assert field.type == FieldDescriptor.TYPE_FIXED64


def test_nbcluster_extensions_stay_clear_of_tf_numbers():
    ours = {"incarnation_start_unix_micros": 100, "pid": 101, "host": 102, "steps_run": 103,
            "bytes_sent": 104, "bytes_received": 105, "active_sessions": 106,
            "last_error": 107, "job_name": 108, "task_index": 109, "cpu_percent": 110,
            "rss_bytes": 111, "gpu_memory": 112}
    fields = worker_pb2.GetStatusResponse.DESCRIPTOR.fields_by_name
    assert {name: fields[name].number for name in ours} == ours
    gpu = worker_pb2.GpuMemoryUsage.DESCRIPTOR.fields_by_name
    assert {name: f.number for name, f in gpu.items()} == {
        "device": 1, "bytes_in_use": 2, "bytes_reserved": 3, "device_bytes_used": 4,
        "device_bytes_total": 5}
    assert fields["device_attributes"].number == 1


def test_services_use_tf_method_names():
    """TF's methods first, under TF's names; then nbcluster's own framed ones."""
    master = master_pb2.DESCRIPTOR.services_by_name["MasterService"]
    assert [m.name for m in master.methods] == [
        "CreateSession", "ExtendSession", "RunStep", "CloseSession", "ListDevices", "Reset",
        "RunStepStreamed", "PullResponse"]
    worker = worker_pb2.DESCRIPTOR.services_by_name["WorkerService"]
    assert [m.name for m in worker.methods] == [
        "GetStatus", "CreateWorkerSession", "DeleteWorkerSession", "RegisterGraph",
        "DeregisterGraph", "RunGraph", "CleanupGraph", "CleanupAll", "RecvTensor",
        "RunGraphStreamed", "RecvTensorStreamed", "PullResponse", "RecvTensors"]


def test_package_is_not_tensorflow():
    for module in (graph_pb2, config_pb2, master_pb2, worker_pb2):
        assert module.DESCRIPTOR.package == "nbcluster"
