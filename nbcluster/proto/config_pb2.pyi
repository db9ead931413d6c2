from nbcluster.proto import graph_pb2 as _graph_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Code(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OK: _ClassVar[Code]
    CANCELLED: _ClassVar[Code]
    UNKNOWN: _ClassVar[Code]
    INVALID_ARGUMENT: _ClassVar[Code]
    DEADLINE_EXCEEDED: _ClassVar[Code]
    NOT_FOUND: _ClassVar[Code]
    ALREADY_EXISTS: _ClassVar[Code]
    PERMISSION_DENIED: _ClassVar[Code]
    RESOURCE_EXHAUSTED: _ClassVar[Code]
    FAILED_PRECONDITION: _ClassVar[Code]
    ABORTED: _ClassVar[Code]
    OUT_OF_RANGE: _ClassVar[Code]
    UNIMPLEMENTED: _ClassVar[Code]
    INTERNAL: _ClassVar[Code]
    UNAVAILABLE: _ClassVar[Code]
    DATA_LOSS: _ClassVar[Code]
    UNAUTHENTICATED: _ClassVar[Code]
OK: Code
CANCELLED: Code
UNKNOWN: Code
INVALID_ARGUMENT: Code
DEADLINE_EXCEEDED: Code
NOT_FOUND: Code
ALREADY_EXISTS: Code
PERMISSION_DENIED: Code
RESOURCE_EXHAUSTED: Code
FAILED_PRECONDITION: Code
ABORTED: Code
OUT_OF_RANGE: Code
UNIMPLEMENTED: Code
INTERNAL: Code
UNAVAILABLE: Code
DATA_LOSS: Code
UNAUTHENTICATED: Code

class JobDef(_message.Message):
    __slots__ = ("name", "tasks")
    class TasksEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: str
        def __init__(self, key: _Optional[int] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    name: str
    tasks: _containers.ScalarMap[int, str]
    def __init__(self, name: _Optional[str] = ..., tasks: _Optional[_Mapping[int, str]] = ...) -> None: ...

class ClusterDef(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: _containers.RepeatedCompositeFieldContainer[JobDef]
    def __init__(self, job: _Optional[_Iterable[_Union[JobDef, _Mapping]]] = ...) -> None: ...

class GPUOptions(_message.Message):
    __slots__ = ("per_process_gpu_memory_fraction", "allocator_type", "deferred_deletion_bytes", "allow_growth", "visible_device_list", "polling_active_delay_usecs", "polling_inactive_delay_msecs", "force_gpu_compatible")
    PER_PROCESS_GPU_MEMORY_FRACTION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_DELETION_BYTES_FIELD_NUMBER: _ClassVar[int]
    ALLOW_GROWTH_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_DEVICE_LIST_FIELD_NUMBER: _ClassVar[int]
    POLLING_ACTIVE_DELAY_USECS_FIELD_NUMBER: _ClassVar[int]
    POLLING_INACTIVE_DELAY_MSECS_FIELD_NUMBER: _ClassVar[int]
    FORCE_GPU_COMPATIBLE_FIELD_NUMBER: _ClassVar[int]
    per_process_gpu_memory_fraction: float
    allocator_type: str
    deferred_deletion_bytes: int
    allow_growth: bool
    visible_device_list: str
    polling_active_delay_usecs: int
    polling_inactive_delay_msecs: int
    force_gpu_compatible: bool
    def __init__(self, per_process_gpu_memory_fraction: _Optional[float] = ..., allocator_type: _Optional[str] = ..., deferred_deletion_bytes: _Optional[int] = ..., allow_growth: _Optional[bool] = ..., visible_device_list: _Optional[str] = ..., polling_active_delay_usecs: _Optional[int] = ..., polling_inactive_delay_msecs: _Optional[int] = ..., force_gpu_compatible: _Optional[bool] = ...) -> None: ...

class OptimizerOptions(_message.Message):
    __slots__ = ("do_common_subexpression_elimination", "do_constant_folding", "opt_level", "do_function_inlining", "global_jit_level", "max_folded_constant_in_bytes", "cpu_global_jit")
    class Level(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        L1: _ClassVar[OptimizerOptions.Level]
        L0: _ClassVar[OptimizerOptions.Level]
    L1: OptimizerOptions.Level
    L0: OptimizerOptions.Level
    class GlobalJitLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DEFAULT: _ClassVar[OptimizerOptions.GlobalJitLevel]
        OFF: _ClassVar[OptimizerOptions.GlobalJitLevel]
        ON_1: _ClassVar[OptimizerOptions.GlobalJitLevel]
        ON_2: _ClassVar[OptimizerOptions.GlobalJitLevel]
    DEFAULT: OptimizerOptions.GlobalJitLevel
    OFF: OptimizerOptions.GlobalJitLevel
    ON_1: OptimizerOptions.GlobalJitLevel
    ON_2: OptimizerOptions.GlobalJitLevel
    DO_COMMON_SUBEXPRESSION_ELIMINATION_FIELD_NUMBER: _ClassVar[int]
    DO_CONSTANT_FOLDING_FIELD_NUMBER: _ClassVar[int]
    OPT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    DO_FUNCTION_INLINING_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_JIT_LEVEL_FIELD_NUMBER: _ClassVar[int]
    MAX_FOLDED_CONSTANT_IN_BYTES_FIELD_NUMBER: _ClassVar[int]
    CPU_GLOBAL_JIT_FIELD_NUMBER: _ClassVar[int]
    do_common_subexpression_elimination: bool
    do_constant_folding: bool
    opt_level: OptimizerOptions.Level
    do_function_inlining: bool
    global_jit_level: OptimizerOptions.GlobalJitLevel
    max_folded_constant_in_bytes: int
    cpu_global_jit: bool
    def __init__(self, do_common_subexpression_elimination: _Optional[bool] = ..., do_constant_folding: _Optional[bool] = ..., opt_level: _Optional[_Union[OptimizerOptions.Level, str]] = ..., do_function_inlining: _Optional[bool] = ..., global_jit_level: _Optional[_Union[OptimizerOptions.GlobalJitLevel, str]] = ..., max_folded_constant_in_bytes: _Optional[int] = ..., cpu_global_jit: _Optional[bool] = ...) -> None: ...

class GraphOptions(_message.Message):
    __slots__ = ("enable_recv_scheduling", "optimizer_options", "build_cost_model", "infer_shapes", "place_pruned_graph", "enable_bfloat16_sendrecv", "timeline_step", "build_cost_model_after")
    ENABLE_RECV_SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    BUILD_COST_MODEL_FIELD_NUMBER: _ClassVar[int]
    INFER_SHAPES_FIELD_NUMBER: _ClassVar[int]
    PLACE_PRUNED_GRAPH_FIELD_NUMBER: _ClassVar[int]
    ENABLE_BFLOAT16_SENDRECV_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_STEP_FIELD_NUMBER: _ClassVar[int]
    BUILD_COST_MODEL_AFTER_FIELD_NUMBER: _ClassVar[int]
    enable_recv_scheduling: bool
    optimizer_options: OptimizerOptions
    build_cost_model: int
    infer_shapes: bool
    place_pruned_graph: bool
    enable_bfloat16_sendrecv: bool
    timeline_step: int
    build_cost_model_after: int
    def __init__(self, enable_recv_scheduling: _Optional[bool] = ..., optimizer_options: _Optional[_Union[OptimizerOptions, _Mapping]] = ..., build_cost_model: _Optional[int] = ..., infer_shapes: _Optional[bool] = ..., place_pruned_graph: _Optional[bool] = ..., enable_bfloat16_sendrecv: _Optional[bool] = ..., timeline_step: _Optional[int] = ..., build_cost_model_after: _Optional[int] = ...) -> None: ...

class ThreadPoolOptionProto(_message.Message):
    __slots__ = ("num_threads", "global_name")
    NUM_THREADS_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_NAME_FIELD_NUMBER: _ClassVar[int]
    num_threads: int
    global_name: str
    def __init__(self, num_threads: _Optional[int] = ..., global_name: _Optional[str] = ...) -> None: ...

class RPCOptions(_message.Message):
    __slots__ = ("use_rpc_for_inprocess_master", "compression_algorithm", "compression_level", "cache_rpc_response", "disable_session_connection_sharing", "num_channels_per_target")
    USE_RPC_FOR_INPROCESS_MASTER_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    COMPRESSION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    CACHE_RPC_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    DISABLE_SESSION_CONNECTION_SHARING_FIELD_NUMBER: _ClassVar[int]
    NUM_CHANNELS_PER_TARGET_FIELD_NUMBER: _ClassVar[int]
    use_rpc_for_inprocess_master: bool
    compression_algorithm: str
    compression_level: int
    cache_rpc_response: bool
    disable_session_connection_sharing: bool
    num_channels_per_target: int
    def __init__(self, use_rpc_for_inprocess_master: _Optional[bool] = ..., compression_algorithm: _Optional[str] = ..., compression_level: _Optional[int] = ..., cache_rpc_response: _Optional[bool] = ..., disable_session_connection_sharing: _Optional[bool] = ..., num_channels_per_target: _Optional[int] = ...) -> None: ...

class SessionMetadata(_message.Message):
    __slots__ = ("name", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: int
    def __init__(self, name: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class ConfigProto(_message.Message):
    __slots__ = ("device_count", "intra_op_parallelism_threads", "placement_period", "device_filters", "inter_op_parallelism_threads", "gpu_options", "allow_soft_placement", "log_device_placement", "use_per_session_threads", "graph_options", "operation_timeout_in_ms", "session_inter_op_thread_pool", "rpc_options", "cluster_def", "isolate_session_state", "share_cluster_devices_in_session", "experimental")
    class DeviceCountEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class Experimental(_message.Message):
        __slots__ = ("collective_group_leader", "executor_type", "recv_buf_max_chunk", "share_session_state_in_clusterspec_propagation", "disable_thread_spinning", "session_metadata", "optimize_for_static_graph", "disable_output_partition_graphs")
        COLLECTIVE_GROUP_LEADER_FIELD_NUMBER: _ClassVar[int]
        EXECUTOR_TYPE_FIELD_NUMBER: _ClassVar[int]
        RECV_BUF_MAX_CHUNK_FIELD_NUMBER: _ClassVar[int]
        SHARE_SESSION_STATE_IN_CLUSTERSPEC_PROPAGATION_FIELD_NUMBER: _ClassVar[int]
        DISABLE_THREAD_SPINNING_FIELD_NUMBER: _ClassVar[int]
        SESSION_METADATA_FIELD_NUMBER: _ClassVar[int]
        OPTIMIZE_FOR_STATIC_GRAPH_FIELD_NUMBER: _ClassVar[int]
        DISABLE_OUTPUT_PARTITION_GRAPHS_FIELD_NUMBER: _ClassVar[int]
        collective_group_leader: str
        executor_type: str
        recv_buf_max_chunk: int
        share_session_state_in_clusterspec_propagation: bool
        disable_thread_spinning: bool
        session_metadata: SessionMetadata
        optimize_for_static_graph: bool
        disable_output_partition_graphs: bool
        def __init__(self, collective_group_leader: _Optional[str] = ..., executor_type: _Optional[str] = ..., recv_buf_max_chunk: _Optional[int] = ..., share_session_state_in_clusterspec_propagation: _Optional[bool] = ..., disable_thread_spinning: _Optional[bool] = ..., session_metadata: _Optional[_Union[SessionMetadata, _Mapping]] = ..., optimize_for_static_graph: _Optional[bool] = ..., disable_output_partition_graphs: _Optional[bool] = ...) -> None: ...
    DEVICE_COUNT_FIELD_NUMBER: _ClassVar[int]
    INTRA_OP_PARALLELISM_THREADS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_PERIOD_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    INTER_OP_PARALLELISM_THREADS_FIELD_NUMBER: _ClassVar[int]
    GPU_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_SOFT_PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    LOG_DEVICE_PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    USE_PER_SESSION_THREADS_FIELD_NUMBER: _ClassVar[int]
    GRAPH_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_TIMEOUT_IN_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_INTER_OP_THREAD_POOL_FIELD_NUMBER: _ClassVar[int]
    RPC_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_DEF_FIELD_NUMBER: _ClassVar[int]
    ISOLATE_SESSION_STATE_FIELD_NUMBER: _ClassVar[int]
    SHARE_CLUSTER_DEVICES_IN_SESSION_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_FIELD_NUMBER: _ClassVar[int]
    device_count: _containers.ScalarMap[str, int]
    intra_op_parallelism_threads: int
    placement_period: int
    device_filters: _containers.RepeatedScalarFieldContainer[str]
    inter_op_parallelism_threads: int
    gpu_options: GPUOptions
    allow_soft_placement: bool
    log_device_placement: bool
    use_per_session_threads: bool
    graph_options: GraphOptions
    operation_timeout_in_ms: int
    session_inter_op_thread_pool: _containers.RepeatedCompositeFieldContainer[ThreadPoolOptionProto]
    rpc_options: RPCOptions
    cluster_def: ClusterDef
    isolate_session_state: bool
    share_cluster_devices_in_session: bool
    experimental: ConfigProto.Experimental
    def __init__(self, device_count: _Optional[_Mapping[str, int]] = ..., intra_op_parallelism_threads: _Optional[int] = ..., placement_period: _Optional[int] = ..., device_filters: _Optional[_Iterable[str]] = ..., inter_op_parallelism_threads: _Optional[int] = ..., gpu_options: _Optional[_Union[GPUOptions, _Mapping]] = ..., allow_soft_placement: _Optional[bool] = ..., log_device_placement: _Optional[bool] = ..., use_per_session_threads: _Optional[bool] = ..., graph_options: _Optional[_Union[GraphOptions, _Mapping]] = ..., operation_timeout_in_ms: _Optional[int] = ..., session_inter_op_thread_pool: _Optional[_Iterable[_Union[ThreadPoolOptionProto, _Mapping]]] = ..., rpc_options: _Optional[_Union[RPCOptions, _Mapping]] = ..., cluster_def: _Optional[_Union[ClusterDef, _Mapping]] = ..., isolate_session_state: _Optional[bool] = ..., share_cluster_devices_in_session: _Optional[bool] = ..., experimental: _Optional[_Union[ConfigProto.Experimental, _Mapping]] = ...) -> None: ...

class RunOptions(_message.Message):
    __slots__ = ("trace_level", "timeout_in_ms", "inter_op_thread_pool", "output_partition_graphs", "report_tensor_allocations_upon_oom", "experimental")
    class TraceLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        NO_TRACE: _ClassVar[RunOptions.TraceLevel]
        SOFTWARE_TRACE: _ClassVar[RunOptions.TraceLevel]
        HARDWARE_TRACE: _ClassVar[RunOptions.TraceLevel]
        FULL_TRACE: _ClassVar[RunOptions.TraceLevel]
    NO_TRACE: RunOptions.TraceLevel
    SOFTWARE_TRACE: RunOptions.TraceLevel
    HARDWARE_TRACE: RunOptions.TraceLevel
    FULL_TRACE: RunOptions.TraceLevel
    class Experimental(_message.Message):
        __slots__ = ("collective_graph_key",)
        COLLECTIVE_GRAPH_KEY_FIELD_NUMBER: _ClassVar[int]
        collective_graph_key: int
        def __init__(self, collective_graph_key: _Optional[int] = ...) -> None: ...
    TRACE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_IN_MS_FIELD_NUMBER: _ClassVar[int]
    INTER_OP_THREAD_POOL_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_PARTITION_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    REPORT_TENSOR_ALLOCATIONS_UPON_OOM_FIELD_NUMBER: _ClassVar[int]
    EXPERIMENTAL_FIELD_NUMBER: _ClassVar[int]
    trace_level: RunOptions.TraceLevel
    timeout_in_ms: int
    inter_op_thread_pool: int
    output_partition_graphs: bool
    report_tensor_allocations_upon_oom: bool
    experimental: RunOptions.Experimental
    def __init__(self, trace_level: _Optional[_Union[RunOptions.TraceLevel, str]] = ..., timeout_in_ms: _Optional[int] = ..., inter_op_thread_pool: _Optional[int] = ..., output_partition_graphs: _Optional[bool] = ..., report_tensor_allocations_upon_oom: _Optional[bool] = ..., experimental: _Optional[_Union[RunOptions.Experimental, _Mapping]] = ...) -> None: ...

class AllocationDescription(_message.Message):
    __slots__ = ("requested_bytes", "allocated_bytes", "allocator_name", "allocation_id", "has_single_reference", "ptr")
    REQUESTED_BYTES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_BYTES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_NAME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_SINGLE_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    PTR_FIELD_NUMBER: _ClassVar[int]
    requested_bytes: int
    allocated_bytes: int
    allocator_name: str
    allocation_id: int
    has_single_reference: bool
    ptr: int
    def __init__(self, requested_bytes: _Optional[int] = ..., allocated_bytes: _Optional[int] = ..., allocator_name: _Optional[str] = ..., allocation_id: _Optional[int] = ..., has_single_reference: _Optional[bool] = ..., ptr: _Optional[int] = ...) -> None: ...

class TensorDescription(_message.Message):
    __slots__ = ("dtype", "shape", "allocation_description")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    dtype: _graph_pb2.DataType
    shape: _graph_pb2.TensorShapeProto
    allocation_description: AllocationDescription
    def __init__(self, dtype: _Optional[_Union[_graph_pb2.DataType, str]] = ..., shape: _Optional[_Union[_graph_pb2.TensorShapeProto, _Mapping]] = ..., allocation_description: _Optional[_Union[AllocationDescription, _Mapping]] = ...) -> None: ...

class NodeOutput(_message.Message):
    __slots__ = ("slot", "tensor_description")
    SLOT_FIELD_NUMBER: _ClassVar[int]
    TENSOR_DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    slot: int
    tensor_description: TensorDescription
    def __init__(self, slot: _Optional[int] = ..., tensor_description: _Optional[_Union[TensorDescription, _Mapping]] = ...) -> None: ...

class AllocationRecord(_message.Message):
    __slots__ = ("alloc_micros", "alloc_bytes")
    ALLOC_MICROS_FIELD_NUMBER: _ClassVar[int]
    ALLOC_BYTES_FIELD_NUMBER: _ClassVar[int]
    alloc_micros: int
    alloc_bytes: int
    def __init__(self, alloc_micros: _Optional[int] = ..., alloc_bytes: _Optional[int] = ...) -> None: ...

class AllocatorMemoryUsed(_message.Message):
    __slots__ = ("allocator_name", "total_bytes", "peak_bytes", "live_bytes", "allocator_bytes_in_use", "allocation_records")
    ALLOCATOR_NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    LIVE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ALLOCATOR_BYTES_IN_USE_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_RECORDS_FIELD_NUMBER: _ClassVar[int]
    allocator_name: str
    total_bytes: int
    peak_bytes: int
    live_bytes: int
    allocator_bytes_in_use: int
    allocation_records: _containers.RepeatedCompositeFieldContainer[AllocationRecord]
    def __init__(self, allocator_name: _Optional[str] = ..., total_bytes: _Optional[int] = ..., peak_bytes: _Optional[int] = ..., live_bytes: _Optional[int] = ..., allocator_bytes_in_use: _Optional[int] = ..., allocation_records: _Optional[_Iterable[_Union[AllocationRecord, _Mapping]]] = ...) -> None: ...

class MemoryStats(_message.Message):
    __slots__ = ("temp_memory_size", "persistent_memory_size", "persistent_tensor_alloc_ids")
    TEMP_MEMORY_SIZE_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_MEMORY_SIZE_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_TENSOR_ALLOC_IDS_FIELD_NUMBER: _ClassVar[int]
    temp_memory_size: int
    persistent_memory_size: int
    persistent_tensor_alloc_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, temp_memory_size: _Optional[int] = ..., persistent_memory_size: _Optional[int] = ..., persistent_tensor_alloc_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class NodeExecStats(_message.Message):
    __slots__ = ("node_name", "all_start_micros", "op_start_rel_micros", "op_end_rel_micros", "all_end_rel_micros", "memory", "output", "timeline_label", "scheduled_micros", "thread_id", "referenced_tensor", "memory_stats", "all_start_nanos", "op_start_rel_nanos", "op_end_rel_nanos", "all_end_rel_nanos", "scheduled_nanos")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    ALL_START_MICROS_FIELD_NUMBER: _ClassVar[int]
    OP_START_REL_MICROS_FIELD_NUMBER: _ClassVar[int]
    OP_END_REL_MICROS_FIELD_NUMBER: _ClassVar[int]
    ALL_END_REL_MICROS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_LABEL_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_MICROS_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    REFERENCED_TENSOR_FIELD_NUMBER: _ClassVar[int]
    MEMORY_STATS_FIELD_NUMBER: _ClassVar[int]
    ALL_START_NANOS_FIELD_NUMBER: _ClassVar[int]
    OP_START_REL_NANOS_FIELD_NUMBER: _ClassVar[int]
    OP_END_REL_NANOS_FIELD_NUMBER: _ClassVar[int]
    ALL_END_REL_NANOS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_NANOS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    all_start_micros: int
    op_start_rel_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    memory: _containers.RepeatedCompositeFieldContainer[AllocatorMemoryUsed]
    output: _containers.RepeatedCompositeFieldContainer[NodeOutput]
    timeline_label: str
    scheduled_micros: int
    thread_id: int
    referenced_tensor: _containers.RepeatedCompositeFieldContainer[AllocationDescription]
    memory_stats: MemoryStats
    all_start_nanos: int
    op_start_rel_nanos: int
    op_end_rel_nanos: int
    all_end_rel_nanos: int
    scheduled_nanos: int
    def __init__(self, node_name: _Optional[str] = ..., all_start_micros: _Optional[int] = ..., op_start_rel_micros: _Optional[int] = ..., op_end_rel_micros: _Optional[int] = ..., all_end_rel_micros: _Optional[int] = ..., memory: _Optional[_Iterable[_Union[AllocatorMemoryUsed, _Mapping]]] = ..., output: _Optional[_Iterable[_Union[NodeOutput, _Mapping]]] = ..., timeline_label: _Optional[str] = ..., scheduled_micros: _Optional[int] = ..., thread_id: _Optional[int] = ..., referenced_tensor: _Optional[_Iterable[_Union[AllocationDescription, _Mapping]]] = ..., memory_stats: _Optional[_Union[MemoryStats, _Mapping]] = ..., all_start_nanos: _Optional[int] = ..., op_start_rel_nanos: _Optional[int] = ..., op_end_rel_nanos: _Optional[int] = ..., all_end_rel_nanos: _Optional[int] = ..., scheduled_nanos: _Optional[int] = ...) -> None: ...

class DeviceStepStats(_message.Message):
    __slots__ = ("device", "node_stats", "thread_names")
    class ThreadNamesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: str
        def __init__(self, key: _Optional[int] = ..., value: _Optional[str] = ...) -> None: ...
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    NODE_STATS_FIELD_NUMBER: _ClassVar[int]
    THREAD_NAMES_FIELD_NUMBER: _ClassVar[int]
    device: str
    node_stats: _containers.RepeatedCompositeFieldContainer[NodeExecStats]
    thread_names: _containers.ScalarMap[int, str]
    def __init__(self, device: _Optional[str] = ..., node_stats: _Optional[_Iterable[_Union[NodeExecStats, _Mapping]]] = ..., thread_names: _Optional[_Mapping[int, str]] = ...) -> None: ...

class StepStats(_message.Message):
    __slots__ = ("dev_stats",)
    DEV_STATS_FIELD_NUMBER: _ClassVar[int]
    dev_stats: _containers.RepeatedCompositeFieldContainer[DeviceStepStats]
    def __init__(self, dev_stats: _Optional[_Iterable[_Union[DeviceStepStats, _Mapping]]] = ...) -> None: ...

class RunMetadata(_message.Message):
    __slots__ = ("step_stats", "partition_graphs", "session_metadata")
    STEP_STATS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    SESSION_METADATA_FIELD_NUMBER: _ClassVar[int]
    step_stats: StepStats
    partition_graphs: _containers.RepeatedCompositeFieldContainer[_graph_pb2.GraphDef]
    session_metadata: SessionMetadata
    def __init__(self, step_stats: _Optional[_Union[StepStats, _Mapping]] = ..., partition_graphs: _Optional[_Iterable[_Union[_graph_pb2.GraphDef, _Mapping]]] = ..., session_metadata: _Optional[_Union[SessionMetadata, _Mapping]] = ...) -> None: ...

class CallableOptions(_message.Message):
    __slots__ = ("feed", "fetch", "target", "run_options", "tensor_connection", "feed_devices", "fetch_devices", "fetch_skip_sync")
    class FeedDevicesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class FetchDevicesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FEED_FIELD_NUMBER: _ClassVar[int]
    FETCH_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    RUN_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    FEED_DEVICES_FIELD_NUMBER: _ClassVar[int]
    FETCH_DEVICES_FIELD_NUMBER: _ClassVar[int]
    FETCH_SKIP_SYNC_FIELD_NUMBER: _ClassVar[int]
    feed: _containers.RepeatedScalarFieldContainer[str]
    fetch: _containers.RepeatedScalarFieldContainer[str]
    target: _containers.RepeatedScalarFieldContainer[str]
    run_options: RunOptions
    tensor_connection: _containers.RepeatedCompositeFieldContainer[TensorConnection]
    feed_devices: _containers.ScalarMap[str, str]
    fetch_devices: _containers.ScalarMap[str, str]
    fetch_skip_sync: bool
    def __init__(self, feed: _Optional[_Iterable[str]] = ..., fetch: _Optional[_Iterable[str]] = ..., target: _Optional[_Iterable[str]] = ..., run_options: _Optional[_Union[RunOptions, _Mapping]] = ..., tensor_connection: _Optional[_Iterable[_Union[TensorConnection, _Mapping]]] = ..., feed_devices: _Optional[_Mapping[str, str]] = ..., fetch_devices: _Optional[_Mapping[str, str]] = ..., fetch_skip_sync: _Optional[bool] = ...) -> None: ...

class TensorConnection(_message.Message):
    __slots__ = ("from_tensor", "to_tensor")
    FROM_TENSOR_FIELD_NUMBER: _ClassVar[int]
    TO_TENSOR_FIELD_NUMBER: _ClassVar[int]
    from_tensor: str
    to_tensor: str
    def __init__(self, from_tensor: _Optional[str] = ..., to_tensor: _Optional[str] = ...) -> None: ...

class DeviceLocality(_message.Message):
    __slots__ = ("bus_id", "numa_node")
    BUS_ID_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODE_FIELD_NUMBER: _ClassVar[int]
    bus_id: int
    numa_node: int
    def __init__(self, bus_id: _Optional[int] = ..., numa_node: _Optional[int] = ...) -> None: ...

class DeviceAttributes(_message.Message):
    __slots__ = ("name", "device_type", "memory_limit", "locality", "incarnation", "physical_device_desc", "xla_global_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    PHYSICAL_DEVICE_DESC_FIELD_NUMBER: _ClassVar[int]
    XLA_GLOBAL_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    device_type: str
    memory_limit: int
    locality: DeviceLocality
    incarnation: int
    physical_device_desc: str
    xla_global_id: int
    def __init__(self, name: _Optional[str] = ..., device_type: _Optional[str] = ..., memory_limit: _Optional[int] = ..., locality: _Optional[_Union[DeviceLocality, _Mapping]] = ..., incarnation: _Optional[int] = ..., physical_device_desc: _Optional[str] = ..., xla_global_id: _Optional[int] = ...) -> None: ...

class ServerDef(_message.Message):
    __slots__ = ("cluster", "job_name", "task_index", "default_session_config", "protocol", "port", "replica")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_SESSION_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    cluster: ClusterDef
    job_name: str
    task_index: int
    default_session_config: ConfigProto
    protocol: str
    port: int
    replica: int
    def __init__(self, cluster: _Optional[_Union[ClusterDef, _Mapping]] = ..., job_name: _Optional[str] = ..., task_index: _Optional[int] = ..., default_session_config: _Optional[_Union[ConfigProto, _Mapping]] = ..., protocol: _Optional[str] = ..., port: _Optional[int] = ..., replica: _Optional[int] = ...) -> None: ...
