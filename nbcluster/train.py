"""Facade: tf.train, re-exported from where each lives (defines nothing).

Cluster description, the server, optimizers, the global step and device setters,
savers, the MonitoredSession family and queue-based input.
"""
from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.monitored import (
                                 CheckpointSaverHook,
                                 ChiefSessionCreator,
                                 LoggingTensorHook,
                                 LooperThread,
                                 MonitoredSession,
                                 MonitoredTrainingSession,
                                 NanLossDuringTrainingError,
                                 NanTensorHook,
                                 Scaffold,
                                 SecondOrStepTimer,
                                 SessionCreator,
                                 SessionManager,
                                 SessionRunArgs,
                                 SessionRunContext,
                                 SessionRunHook,
                                 SessionRunValues,
                                 SingularMonitoredSession,
                                 StepCounterHook,
                                 StopAtStepHook,
                                 SummarySaverHook,
                                 Supervisor,
                                 WorkerSessionCreator,
)
from nbcluster.proto.config_pb2 import ClusterDef, JobDef, ServerDef
from nbcluster.server import Server
from nbcluster.summary.reader import summary_iterator
from nbcluster.training.adagrad import AdagradOptimizer
from nbcluster.training.adam import AdamOptimizer
from nbcluster.training.device_setter import (
                                 GreedyLoadBalancingStrategy,
                                 byte_size_load_fn,
                                 replica_device_setter,
)
from nbcluster.training.gradient_descent import GradientDescentOptimizer

# queue-based input (issue 13)
from nbcluster.training.input import (
                                 batch,
                                 input_producer,
                                 limit_epochs,
                                 range_input_producer,
                                 shuffle_batch,
                                 slice_input_producer,
                                 string_input_producer,
)
from nbcluster.training.momentum import MomentumOptimizer
from nbcluster.training.moving_averages import ExponentialMovingAverage
from nbcluster.training.optimizer import Optimizer
from nbcluster.training.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from nbcluster.training.saver import (
                                 Saver,
                                 checkpoint_exists,
                                 get_checkpoint_state,
                                 latest_checkpoint,
                                 update_checkpoint_state,
)
from nbcluster.training.sync_replicas_optimizer import SyncReplicasOptimizer
from nbcluster.training.thread_coordinator import Coordinator
from nbcluster.training.training_util import (
                                 create_global_step,
                                 get_global_step,
                                 get_or_create_global_step,
                                 global_step,
)

__all__ = ["AdagradOptimizer", "AdamOptimizer", "ClusterDef", "ClusterSpec",
           "Coordinator", "ExponentialMovingAverage", "QueueRunner", "add_queue_runner",
           "start_queue_runners",
           "GradientDescentOptimizer", "GreedyLoadBalancingStrategy", "JobDef",
           "MomentumOptimizer", "Optimizer", "Saver", "Server", "ServerDef",
           "SyncReplicasOptimizer", "byte_size_load_fn", "checkpoint_exists",
           "create_global_step", "get_global_step", "get_or_create_global_step",
           "get_checkpoint_state", "global_step", "latest_checkpoint", "replica_device_setter",
           "update_checkpoint_state",
           # the MonitoredSession family (nbcluster/monitored/)
           "CheckpointSaverHook", "ChiefSessionCreator", "LoggingTensorHook", "MonitoredSession",
           "MonitoredTrainingSession", "NanLossDuringTrainingError", "NanTensorHook", "Scaffold",
           "SecondOrStepTimer", "SessionCreator", "SessionRunArgs", "SessionRunContext",
           "SessionRunHook", "SessionRunValues", "SingularMonitoredSession", "StepCounterHook",
           "StopAtStepHook", "WorkerSessionCreator",
           # queue-based input (nbcluster/training/input.py)
           "batch", "input_producer", "limit_epochs", "range_input_producer", "shuffle_batch",
           "slice_input_producer", "string_input_producer",
           # TF1's Supervisor (nbcluster/monitored/supervisor.py)
           "LooperThread", "SessionManager", "Supervisor", "SummarySaverHook",
           "summary_iterator"]
