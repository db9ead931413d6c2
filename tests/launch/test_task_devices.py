"""Per-task devices: `Cluster.local(devices=...)`, each task's config and environment."""
from __future__ import annotations

import json

import pytest

import nbcluster as tf
from nbcluster.launch import Cluster
from nbcluster.launch.launcher import LocalLauncher
from nbcluster.launch.ssh import SSHLauncher
from nbcluster.launch.startup import Task, start_task
from nbcluster.launch.status import StatusClient
from nbcluster.launch.task_devices import TaskDevices, task_devices

from process_checks import wait_gone

pytestmark = pytest.mark.timeout(120)


def test_task_devices_expands_per_job_settings_to_tasks():
    got = task_devices({"worker": {"cpus": [2, None, 4], "gpus": "0, 1"},
                        "ps": {"gpus": "none"}}, {"ps": [0], "worker": [0, 1, 2]})
    assert got == {("worker", 0): TaskDevices(2, "0,1"), ("worker", 1): TaskDevices(None, "0,1"),
                   ("worker", 2): TaskDevices(4, "0,1"), ("ps", 0): TaskDevices(None, "none")}
    assert task_devices(None, {"ps": [0]}) == {}
    assert task_devices({"ps": {"cpus": None, "gpus": ""}}, {"ps": [0]}) == {}


@pytest.mark.parametrize("devices, error, words", [
    ({"chief": {"cpus": 2}}, ValueError, "job 'chief', which the cluster does not have"),
    ({"ps": {"cpu": 2}}, ValueError, "keys 'cpus' and/or 'gpus', not {'cpu': 2}"),
    ({"ps": {"cpus": True}}, ValueError, "not True"),
    ({"ps": {"gpus": 0}}, TypeError, "the GPU list must be a string such as '0,1', not 0"),
    ({"ps": {"gpus": "0;1"}}, ValueError, "bad GPU list '0;1'"),
    ([("ps", 1)], TypeError, "devices must map job names"),
])
def test_bad_devices_are_named(devices, error, words):
    with pytest.raises(error) as info:
        task_devices(devices, {"ps": [0]})
    assert words in str(info.value)


class _Recorder:
    """A launcher that records what it was asked to start."""
    kind = "fake"

    def __init__(self) -> None:
        self.started = []

    def start(self, host, args, log_path, tasks_on_host, env):
        self.started.append((args, env))


def test_each_task_starts_with_its_devices_over_the_cluster_config(tmp_path):
    launcher, status = _Recorder(), StatusClient()
    tasks = [Task("worker", 0, "h", 1), Task("worker", 1, "h", 2, TaskDevices(3, "none")),
             Task("worker", 2, "h", 3, TaskDevices(None, "2"))]
    config = json.dumps({"allowSoftPlacement": True, "deviceCount": {"CPU": 5}})
    for task in tasks:
        start_task(task, tasks, launcher, status, str(tmp_path), config)
    status.close()
    (args0, env0), (args1, env1), (args2, env2) = launcher.started
    assert args0[-1] == config and env0 == {}  # no devices: the cluster's config
    assert json.loads(args1[-1]) == {"allowSoftPlacement": True,
                                     "deviceCount": {"CPU": 3, "GPU": 0}}
    assert env1 == {"CUDA_VISIBLE_DEVICES": ""}
    assert json.loads(args2[-1])["deviceCount"] == {"CPU": 5}
    assert env2 == {"CUDA_VISIBLE_DEVICES": "2"}
    assert args1.count("--config") == 1
    assert TaskDevices(2).config(None) == '{"deviceCount": {"CPU": 2}}'


def test_an_ssh_task_gets_its_own_variables_over_the_launchers():
    launcher = SSHLauncher(env={"PYTHONPATH": "/src", "CUDA_VISIBLE_DEVICES": "0,1"})
    command = launcher.remote_command(["-m", "nbcluster.server"], {"CUDA_VISIBLE_DEVICES": "1"})
    assert command == "exec env CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/src python3 -m nbcluster.server"
    assert "CUDA_VISIBLE_DEVICES=0,1" in launcher.remote_command(["-V"])


def test_devices_override_the_cluster_config_per_task():
    config = tf.ConfigProto(device_count={"CPU": 3})
    with Cluster.local(ps=1, worker=2, config=config,
                       devices={"worker": {"cpus": [1, None]}}) as cluster:
        counts = {(s.job, s.index): len(s.devices) for s in cluster.status()}
        pids = list(cluster.pids.values())
    assert counts == {("ps", 0): 3, ("worker", 0): 1, ("worker", 1): 3}
    assert wait_gone(pids, 10.0) == []


def test_bad_devices_are_refused_before_any_start(monkeypatch):
    started = []
    monkeypatch.setattr(LocalLauncher, "start", lambda self, *args: started.append(args))
    with pytest.raises(ValueError, match="cpus \\[2\\] has 1 entries for 2 tasks"):
        Cluster.local(ps=1, worker=2, devices={"worker": {"cpus": [2]}})
    assert started == []
