from nbcluster.proto import config_pb2 as _config_pb2
from nbcluster.proto import frames_pb2 as _frames_pb2
from nbcluster.proto import graph_pb2 as _graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("device_attributes", "incarnation_start_unix_micros", "pid", "host", "steps_run", "bytes_sent", "bytes_received", "active_sessions", "last_error", "job_name", "task_index", "cpu_percent", "rss_bytes", "gpu_memory")
    DEVICE_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_START_UNIX_MICROS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    STEPS_RUN_FIELD_NUMBER: _ClassVar[int]
    BYTES_SENT_FIELD_NUMBER: _ClassVar[int]
    BYTES_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    CPU_PERCENT_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_FIELD_NUMBER: _ClassVar[int]
    device_attributes: _containers.RepeatedCompositeFieldContainer[_config_pb2.DeviceAttributes]
    incarnation_start_unix_micros: int
    pid: int
    host: str
    steps_run: int
    bytes_sent: int
    bytes_received: int
    active_sessions: int
    last_error: str
    job_name: str
    task_index: int
    cpu_percent: float
    rss_bytes: int
    gpu_memory: _containers.RepeatedCompositeFieldContainer[GpuMemoryUsage]
    def __init__(self, device_attributes: _Optional[_Iterable[_Union[_config_pb2.DeviceAttributes, _Mapping]]] = ..., incarnation_start_unix_micros: _Optional[int] = ..., pid: _Optional[int] = ..., host: _Optional[str] = ..., steps_run: _Optional[int] = ..., bytes_sent: _Optional[int] = ..., bytes_received: _Optional[int] = ..., active_sessions: _Optional[int] = ..., last_error: _Optional[str] = ..., job_name: _Optional[str] = ..., task_index: _Optional[int] = ..., cpu_percent: _Optional[float] = ..., rss_bytes: _Optional[int] = ..., gpu_memory: _Optional[_Iterable[_Union[GpuMemoryUsage, _Mapping]]] = ...) -> None: ...

class GpuMemoryUsage(_message.Message):
    __slots__ = ("device", "bytes_in_use", "bytes_reserved", "device_bytes_used", "device_bytes_total")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    BYTES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    BYTES_RESERVED_FIELD_NUMBER: _ClassVar[int]
    DEVICE_BYTES_USED_FIELD_NUMBER: _ClassVar[int]
    DEVICE_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    device: str
    bytes_in_use: int
    bytes_reserved: int
    device_bytes_used: int
    device_bytes_total: int
    def __init__(self, device: _Optional[str] = ..., bytes_in_use: _Optional[int] = ..., bytes_reserved: _Optional[int] = ..., device_bytes_used: _Optional[int] = ..., device_bytes_total: _Optional[int] = ...) -> None: ...

class CreateWorkerSessionRequest(_message.Message):
    __slots__ = ("session_handle", "server_def", "isolate_session_state", "cluster_device_attributes", "master_task", "master_incarnation")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    SERVER_DEF_FIELD_NUMBER: _ClassVar[int]
    ISOLATE_SESSION_STATE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_DEVICE_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MASTER_TASK_FIELD_NUMBER: _ClassVar[int]
    MASTER_INCARNATION_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    server_def: _config_pb2.ServerDef
    isolate_session_state: bool
    cluster_device_attributes: _containers.RepeatedCompositeFieldContainer[_config_pb2.DeviceAttributes]
    master_task: str
    master_incarnation: int
    def __init__(self, session_handle: _Optional[str] = ..., server_def: _Optional[_Union[_config_pb2.ServerDef, _Mapping]] = ..., isolate_session_state: _Optional[bool] = ..., cluster_device_attributes: _Optional[_Iterable[_Union[_config_pb2.DeviceAttributes, _Mapping]]] = ..., master_task: _Optional[str] = ..., master_incarnation: _Optional[int] = ...) -> None: ...

class CreateWorkerSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteWorkerSessionRequest(_message.Message):
    __slots__ = ("session_handle",)
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    def __init__(self, session_handle: _Optional[str] = ...) -> None: ...

class DeleteWorkerSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RegisterGraphRequest(_message.Message):
    __slots__ = ("session_handle", "graph_def", "graph_options", "create_worker_session_called", "collective_graph_key", "config_proto")
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    GRAPH_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CREATE_WORKER_SESSION_CALLED_FIELD_NUMBER: _ClassVar[int]
    COLLECTIVE_GRAPH_KEY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_PROTO_FIELD_NUMBER: _ClassVar[int]
    session_handle: str
    graph_def: _graph_pb2.GraphDef
    graph_options: _config_pb2.GraphOptions
    create_worker_session_called: bool
    collective_graph_key: int
    config_proto: _config_pb2.ConfigProto
    def __init__(self, session_handle: _Optional[str] = ..., graph_def: _Optional[_Union[_graph_pb2.GraphDef, _Mapping]] = ..., graph_options: _Optional[_Union[_config_pb2.GraphOptions, _Mapping]] = ..., create_worker_session_called: _Optional[bool] = ..., collective_graph_key: _Optional[int] = ..., config_proto: _Optional[_Union[_config_pb2.ConfigProto, _Mapping]] = ...) -> None: ...

class RegisterGraphResponse(_message.Message):
    __slots__ = ("graph_handle",)
    GRAPH_HANDLE_FIELD_NUMBER: _ClassVar[int]
    graph_handle: str
    def __init__(self, graph_handle: _Optional[str] = ...) -> None: ...

class DeregisterGraphRequest(_message.Message):
    __slots__ = ("graph_handle", "session_handle", "create_worker_session_called")
    GRAPH_HANDLE_FIELD_NUMBER: _ClassVar[int]
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    CREATE_WORKER_SESSION_CALLED_FIELD_NUMBER: _ClassVar[int]
    graph_handle: str
    session_handle: str
    create_worker_session_called: bool
    def __init__(self, graph_handle: _Optional[str] = ..., session_handle: _Optional[str] = ..., create_worker_session_called: _Optional[bool] = ...) -> None: ...

class DeregisterGraphResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecutorOpts(_message.Message):
    __slots__ = ("record_costs", "record_timeline", "record_partition_graphs", "report_tensor_allocations_upon_oom")
    RECORD_COSTS_FIELD_NUMBER: _ClassVar[int]
    RECORD_TIMELINE_FIELD_NUMBER: _ClassVar[int]
    RECORD_PARTITION_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    REPORT_TENSOR_ALLOCATIONS_UPON_OOM_FIELD_NUMBER: _ClassVar[int]
    record_costs: bool
    record_timeline: bool
    record_partition_graphs: bool
    report_tensor_allocations_upon_oom: bool
    def __init__(self, record_costs: _Optional[bool] = ..., record_timeline: _Optional[bool] = ..., record_partition_graphs: _Optional[bool] = ..., report_tensor_allocations_upon_oom: _Optional[bool] = ...) -> None: ...

class RunGraphRequest(_message.Message):
    __slots__ = ("graph_handle", "step_id", "send", "recv_key", "exec_opts", "is_partial", "is_last_partial_run", "session_handle", "store_errors_in_response_body", "create_worker_session_called", "request_id")
    GRAPH_HANDLE_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    SEND_FIELD_NUMBER: _ClassVar[int]
    RECV_KEY_FIELD_NUMBER: _ClassVar[int]
    EXEC_OPTS_FIELD_NUMBER: _ClassVar[int]
    IS_PARTIAL_FIELD_NUMBER: _ClassVar[int]
    IS_LAST_PARTIAL_RUN_FIELD_NUMBER: _ClassVar[int]
    SESSION_HANDLE_FIELD_NUMBER: _ClassVar[int]
    STORE_ERRORS_IN_RESPONSE_BODY_FIELD_NUMBER: _ClassVar[int]
    CREATE_WORKER_SESSION_CALLED_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    graph_handle: str
    step_id: int
    send: _containers.RepeatedCompositeFieldContainer[_graph_pb2.NamedTensorProto]
    recv_key: _containers.RepeatedScalarFieldContainer[str]
    exec_opts: ExecutorOpts
    is_partial: bool
    is_last_partial_run: bool
    session_handle: str
    store_errors_in_response_body: bool
    create_worker_session_called: bool
    request_id: int
    def __init__(self, graph_handle: _Optional[str] = ..., step_id: _Optional[int] = ..., send: _Optional[_Iterable[_Union[_graph_pb2.NamedTensorProto, _Mapping]]] = ..., recv_key: _Optional[_Iterable[str]] = ..., exec_opts: _Optional[_Union[ExecutorOpts, _Mapping]] = ..., is_partial: _Optional[bool] = ..., is_last_partial_run: _Optional[bool] = ..., session_handle: _Optional[str] = ..., store_errors_in_response_body: _Optional[bool] = ..., create_worker_session_called: _Optional[bool] = ..., request_id: _Optional[int] = ...) -> None: ...

class RunGraphResponse(_message.Message):
    __slots__ = ("recv", "step_stats", "partition_graph", "status_code", "status_error_message")
    RECV_FIELD_NUMBER: _ClassVar[int]
    STEP_STATS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_GRAPH_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    recv: _containers.RepeatedCompositeFieldContainer[_graph_pb2.NamedTensorProto]
    step_stats: _config_pb2.StepStats
    partition_graph: _containers.RepeatedCompositeFieldContainer[_graph_pb2.GraphDef]
    status_code: _config_pb2.Code
    status_error_message: str
    def __init__(self, recv: _Optional[_Iterable[_Union[_graph_pb2.NamedTensorProto, _Mapping]]] = ..., step_stats: _Optional[_Union[_config_pb2.StepStats, _Mapping]] = ..., partition_graph: _Optional[_Iterable[_Union[_graph_pb2.GraphDef, _Mapping]]] = ..., status_code: _Optional[_Union[_config_pb2.Code, str]] = ..., status_error_message: _Optional[str] = ...) -> None: ...

class CleanupGraphRequest(_message.Message):
    __slots__ = ("step_id",)
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    def __init__(self, step_id: _Optional[int] = ...) -> None: ...

class CleanupGraphResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CleanupAllRequest(_message.Message):
    __slots__ = ("container",)
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    container: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, container: _Optional[_Iterable[str]] = ...) -> None: ...

class CleanupAllResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RecvTensorRequest(_message.Message):
    __slots__ = ("step_id", "rendezvous_key", "dma_ok", "client_locality", "server_locality", "request_id")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    RENDEZVOUS_KEY_FIELD_NUMBER: _ClassVar[int]
    DMA_OK_FIELD_NUMBER: _ClassVar[int]
    CLIENT_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    SERVER_LOCALITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    rendezvous_key: str
    dma_ok: bool
    client_locality: _config_pb2.DeviceLocality
    server_locality: _config_pb2.DeviceLocality
    request_id: int
    def __init__(self, step_id: _Optional[int] = ..., rendezvous_key: _Optional[str] = ..., dma_ok: _Optional[bool] = ..., client_locality: _Optional[_Union[_config_pb2.DeviceLocality, _Mapping]] = ..., server_locality: _Optional[_Union[_config_pb2.DeviceLocality, _Mapping]] = ..., request_id: _Optional[int] = ...) -> None: ...

class RecvTensorResponse(_message.Message):
    __slots__ = ("tensor", "is_dead", "send_start_micros", "require_ack")
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    IS_DEAD_FIELD_NUMBER: _ClassVar[int]
    SEND_START_MICROS_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_ACK_FIELD_NUMBER: _ClassVar[int]
    tensor: _graph_pb2.TensorProto
    is_dead: bool
    send_start_micros: int
    require_ack: bool
    def __init__(self, tensor: _Optional[_Union[_graph_pb2.TensorProto, _Mapping]] = ..., is_dead: _Optional[bool] = ..., send_start_micros: _Optional[int] = ..., require_ack: _Optional[bool] = ...) -> None: ...
