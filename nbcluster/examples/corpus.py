"""The corpus table: each program of `examples/tf1/`, its cluster, how its tasks are
started (flags or TF_CONFIG, as its docstring's run lines say), which tasks train and
must exit by themselves, and the loss they must reach.

Rule: data only; `run.py` launches what this table says.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent / "tf1"


@dataclass(frozen=True)
class Program:
    """One corpus program.

    Attributes:
      name: the script's stem in examples/tf1/.
      jobs: tasks per job of its cluster, e.g. {"ps": 1, "worker": 2}.
      launch: "flags" (--ps_hosts/--worker_hosts/--job_name/--task_index) or
        "tf_config" (the TF_CONFIG environment variable).
      trainers: the jobs whose tasks train, print "final loss: X" and exit 0; the
        other tasks serve until they are sent SIGTERM.
      client: the extra process outside the cluster that trains ("client" job name),
        for in-graph programs.
      max_loss: the final loss each trainer must reach.
      args: flags every task gets.
      tensorflow: how TensorFlow runs it: "v1" (tf.compat.v1, v2 behaviour off), or
        None where the program needs what only nbcluster offers it.
      file: the script's stem when it is not `name` (one script, other flags).
    """

    name: str
    jobs: dict
    launch: str
    trainers: tuple
    max_loss: float
    client: bool = False
    args: tuple = field(default_factory=tuple)
    tensorflow: str | None = "v1"
    file: str = ""

    @property
    def script(self) -> Path:
        return HERE / f"{self.file or self.name}.py"


PROGRAMS = {p.name: p for p in (
    Program("howto_trainer", {"ps": 1, "worker": 2}, "flags", ("worker",), 0.5),
    Program("mnist_replica", {"ps": 1, "worker": 2}, "flags", ("worker",), 0.5,
            args=("--train_dir=mnist_train",)),
    Program("mnist_replica_sync", {"ps": 1, "worker": 2}, "flags", ("worker",), 0.5,
            args=("--train_dir=mnist_train", "--sync_replicas=true"), file="mnist_replica"),
    Program("monitored_summaries", {"ps": 1, "worker": 2}, "flags", ("worker",), 0.5,
            args=("--log_dir=logs",)),
    Program("queue_input", {"ps": 1, "worker": 2}, "flags", ("worker",), 0.6),
    Program("sync_replicas", {"ps": 1, "worker": 2}, "flags", ("worker",), 0.6),
    Program("tf_config_trainer", {"ps": 1, "worker": 2}, "tf_config", ("worker",), 0.6),
    Program("partitioned_embedding", {"ps": 2, "worker": 2}, "flags", ("worker",), 0.3),
    Program("in_graph_towers", {"ps": 1, "worker": 2}, "flags", (), 0.6, client=True),
    Program("tf2_coordinator", {"chief": 1, "ps": 1, "worker": 2}, "tf_config", ("chief",),
            0.6, tensorflow=None),
)}

