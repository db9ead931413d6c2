"""Cluster resolvers and the environment parsing behind them (TF_CONFIG, Slurm)."""
from __future__ import annotations

import json

import pytest

from nbcluster.framework.cluster_spec import ClusterSpec
from nbcluster.launch import (
    SimpleClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    expand_hostlist,
)
from nbcluster.server.environment import expand_tasks_per_node, from_slurm, task_from_environment

pytestmark = pytest.mark.timeout(30)

_SLURM_VARS = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_STEP_NODELIST",
               "SLURM_JOB_NODELIST", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
               "CUDA_VISIBLE_DEVICES", "SLURM_GPUS_ON_NODE", "TF_CONFIG")


@pytest.fixture
def env(monkeypatch):
    for name in _SLURM_VARS:
        monkeypatch.delenv(name, raising=False)

    def setenv(**values):
        for name, value in values.items():
            monkeypatch.setenv(name, str(value))
    return setenv


@pytest.mark.parametrize("hostlist, hosts", [
    ("node[01-04]", ["node01", "node02", "node03", "node04"]),
    ("a[1,3-5],b2", ["a1", "a3", "a4", "a5", "b2"]),
    ("single", ["single"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("r[1-2]-g[0-1]", ["r1-g0", "r1-g1", "r2-g0", "r2-g1"]),
    ("x[009-011],y", ["x009", "x010", "x011", "y"]),
])
def test_hostlists_expand_as_slurm_does(hostlist, hosts):
    assert expand_hostlist(hostlist) == hosts


@pytest.mark.parametrize("bad", ["node[01-04", "node01]", "a[3-1]", "a[x]", "a,,b"])
def test_malformed_hostlists_are_named(bad):
    with pytest.raises(ValueError, match=r"hostlist"):
        expand_hostlist(bad)


def test_tasks_per_node_expand():
    assert expand_tasks_per_node("2(x3),1") == [2, 2, 2, 1]
    assert expand_tasks_per_node("4") == [4]
    with pytest.raises(ValueError, match="'2x3'"):
        expand_tasks_per_node("2x3,1")


def test_simple_resolver_returns_what_it_was_given():
    spec = {"ps": ["h0:1"], "worker": ["h1:2", "h2:3"]}
    r = SimpleClusterResolver(spec, master="h1:2", task_type="worker", task_id=1,
                              environment="local", num_accelerators={"GPU": 2},
                              rpc_layer="grpc")
    assert r.cluster_spec() == ClusterSpec(spec)
    assert r.master() == "grpc://h1:2"
    assert r.master("worker", 1) == "grpc://h2:3"
    assert r.master("ps", 0, rpc_layer="http") == "http://h0:1"
    assert (r.task_type, r.task_id, r.environment) == ("worker", 1, "local")
    assert r.num_accelerators() == {"GPU": 2}
    assert SimpleClusterResolver(spec).master() == ""
    with pytest.raises(ValueError):
        r.master("chief", 0)


def test_tf_config_resolver_reads_kubeflow_style_config(env):
    cluster = {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p:2222"]}
    env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1},
                              "environment": "cloud"}))
    r = TFConfigClusterResolver()
    assert r.cluster_spec() == ClusterSpec(cluster)
    assert (r.task_type, r.task_id, r.environment, r.rpc_layer) == ("worker", 1, "cloud", None)
    assert r.master() == "w1:2222"
    assert r.master("chief", 0, rpc_layer="grpc") == "grpc://c:2222"
    overridden = TFConfigClusterResolver(task_type="ps", task_id=0, rpc_layer="grpc")
    assert overridden.master() == "grpc://p:2222"
    env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "chief", "index": "0"},
                              "rpc_layer": "grpc"}))
    assert (r.task_type, r.task_id, r.master()) == ("chief", 0, "grpc://c:2222")


def test_tf_config_session_master_wins_and_a_lone_task_has_no_master(env):
    # TF's order: session_master as given; one job of one task: ""; else the address
    cluster = {"worker": ["w0:2222", "w1:2222"], "ps": ["p:2222"]}
    env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1},
                              "session_master": "grpc://elsewhere:9"}))
    r = TFConfigClusterResolver(rpc_layer="grpc")
    assert r.master() == "grpc://elsewhere:9" and r.master("ps", 0) == "grpc://elsewhere:9"
    env(TF_CONFIG=json.dumps({"cluster": {"worker": ["w0:2222"]},
                              "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"}))
    assert TFConfigClusterResolver().master() == ""
    env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}}))
    assert TFConfigClusterResolver().master(rpc_layer="grpc") == "grpc://w1:2222"


def test_tf_config_integer_task_type_is_cast_to_str(env):
    # (a job named "123456" is no valid device name here, so only the cast is seen)
    cluster = {"ps": ["p0:2222", "p1:2222"], "worker": ["w0:2222"]}
    env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": 123456, "index": 1},
                              "rpc_layer": "grpc"}))
    r = TFConfigClusterResolver()
    assert (r.task_type, r.task_id) == ("123456", 1)
    assert r.master("ps") == "grpc://p1:2222"
    with pytest.raises(ValueError, match="'123456'"):
        r.master()
    assert TFConfigClusterResolver(task_type=123456, task_id="0").task_type == "123456"
    assert TFConfigClusterResolver(task_type=123456, task_id="0").task_id == 0
    env(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "ps"}}))
    assert (r.task_type, r.task_id) == ("ps", None)  # TF's resolver: no index, no id
    env(TF_CONFIG=json.dumps({"task": {"type": ["worker"], "index": 0}}))
    with pytest.raises(ValueError, match=r"\['worker'\]"):
        r.task_type


def test_tf_config_absent_or_malformed(env):
    r = TFConfigClusterResolver()
    assert r.cluster_spec() == ClusterSpec({}) and r.task_type is None and r.master() == ""
    env(TF_CONFIG="{not json")
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        r.cluster_spec()
    env(TF_CONFIG=json.dumps({"task": {"type": "worker", "index": "one"}}))
    with pytest.raises(ValueError, match="'one'"):
        r.task_id


def test_slurm_resolver_lays_tasks_out_by_rank(env):
    env(SLURM_PROCID=4, SLURM_STEP_NUM_TASKS=5, SLURM_STEP_NODELIST="node[01-03]",
        SLURM_STEP_TASKS_PER_NODE="2(x2),1")
    r = SlurmClusterResolver(jobs={"ps": 1, "worker": 4}, port_base=9000, gpus_per_node=0)
    assert r.cluster_spec().as_dict() == {
        "ps": ["node01:9000"],
        "worker": ["node01:9001", "node02:9000", "node02:9001", "node03:9000"]}
    assert (r.task_type, r.task_id) == ("worker", 3)
    assert r.master() == "grpc://node03:9000"
    assert r.master("ps", 0, rpc_layer="http") == "http://node01:9000"


def test_slurm_resolver_falls_back_to_job_variables_and_shares_gpus(env, monkeypatch):
    env(SLURM_PROCID=1, SLURM_NTASKS=4, SLURM_JOB_NODELIST="gpu[1-2]",
        SLURM_TASKS_PER_NODE="2(x2)", CUDA_VISIBLE_DEVICES="0,1,2,3")
    r = SlurmClusterResolver()
    assert r.cluster_spec().as_dict() == {"worker": ["gpu1:8888", "gpu1:8889", "gpu2:8888",
                                                     "gpu2:8889"]}
    assert (r.task_type, r.task_id) == ("worker", 1)
    assert r.num_accelerators() == {"GPU": 2}
    import os
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"  # local rank 1's two GPUs


def test_slurm_mismatches_are_named(env):
    env(SLURM_PROCID=0, SLURM_NTASKS=3, SLURM_JOB_NODELIST="n[1-2]", SLURM_TASKS_PER_NODE="1(x2)")
    with pytest.raises(ValueError, match="3 tasks but its nodes hold 2"):
        SlurmClusterResolver()
    env(SLURM_NTASKS=2)
    with pytest.raises(ValueError, match="ask for 3 tasks"):
        SlurmClusterResolver(jobs={"ps": 1, "worker": 2})
    with pytest.raises(ValueError, match="GPUs"):
        SlurmClusterResolver(gpus_per_node=1, gpus_per_task=2)


def test_slurm_outside_a_step_is_named(env):
    with pytest.raises(ValueError, match="SLURM_PROCID"):
        SlurmClusterResolver()


def test_task_from_environment_prefers_tf_config(env):
    env(SLURM_PROCID=0, SLURM_NTASKS=1, SLURM_JOB_NODELIST="n1", SLURM_TASKS_PER_NODE="1")
    import os
    slurm = task_from_environment(os.environ)
    assert (slurm.cluster, slurm.job, slurm.index) == ({"worker": ["n1:8888"]}, "worker", 0)
    env(TF_CONFIG=json.dumps({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief"}}))
    tf_config = task_from_environment(os.environ)
    assert (tf_config.cluster, tf_config.job, tf_config.index) == ({"chief": ["c:1"]}, "chief", 0)


def test_an_evaluator_outside_its_cluster_is_refused(env):
    import os
    env(TF_CONFIG=json.dumps({"cluster": {"worker": ["w:1"]},
                              "task": {"type": "evaluator", "index": 0}}))
    with pytest.raises(ValueError, match="evaluator:0 is not in its cluster"):
        task_from_environment(os.environ)
    assert TFConfigClusterResolver().task_type == "evaluator"


def test_slurm_jobs_for_the_server_come_from_nbcluster_variables():
    environ = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n[1-2]",
               "SLURM_TASKS_PER_NODE": "1(x2)", "NBCLUSTER_SLURM_JOBS": '{"ps": 1, "worker": 1}',
               "NBCLUSTER_SLURM_PORT_BASE": "7000"}
    task = task_from_environment(environ)
    assert (task.cluster, task.job, task.index) == ({"ps": ["n1:7000"], "worker": ["n2:7000"]},
                                                    "worker", 0)
    assert from_slurm(environ)[0].cluster == {"worker": ["n1:8888", "n2:8888"]}
    with pytest.raises(ValueError, match="NBCLUSTER_SLURM_JOBS"):
        task_from_environment(dict(environ, NBCLUSTER_SLURM_JOBS="[1]"))
