"""L4: tf.train's MonitoredSession family: hooks, scaffold, session creators, MTS."""
from nbcluster.monitored.checkpoint_hook import CheckpointSaverHook
from nbcluster.monitored.logging_hooks import LoggingTensorHook, StepCounterHook
from nbcluster.monitored.monitored_session import MonitoredSession, SingularMonitoredSession
from nbcluster.monitored.scaffold import Scaffold
from nbcluster.monitored.session_creators import (
                                                  ChiefSessionCreator,
                                                  SessionCreator,
                                                  WorkerSessionCreator,
)

# TF1's Supervisor and its SessionManager
from nbcluster.monitored.session_manager import SessionManager
from nbcluster.monitored.stop_hooks import NanLossDuringTrainingError, NanTensorHook, StopAtStepHook
from nbcluster.monitored.summary_hook import SummarySaverHook
from nbcluster.monitored.supervisor import Supervisor
from nbcluster.monitored.supervisor_threads import LooperThread
from nbcluster.monitored.timer import SecondOrStepTimer
from nbcluster.monitored.training_session import MonitoredTrainingSession
from nbcluster.training.session_run_hook import (
                                                  SessionRunArgs,
                                                  SessionRunContext,
                                                  SessionRunHook,
                                                  SessionRunValues,
)

__all__ = ["CheckpointSaverHook", "ChiefSessionCreator", "LoggingTensorHook",
           "MonitoredSession", "MonitoredTrainingSession", "NanLossDuringTrainingError",
           "NanTensorHook", "Scaffold", "SecondOrStepTimer", "SessionCreator",
           "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues",
           "SingularMonitoredSession", "StepCounterHook", "StopAtStepHook",
           "WorkerSessionCreator",
           "LooperThread", "SessionManager", "Supervisor", "SummarySaverHook"]
