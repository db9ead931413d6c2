"""TF2 graphs from real TensorFlow (tf.function, control flow v2) imported and run by nbcluster.

TensorFlow writes each graph with its function library (tests/interop/programs/
tf2_functions.py, one process for all); nbcluster imports the GraphDef, runs
it and must fetch what TF fetched: calls, If and While (nested), and a
TF1-style training graph whose gradients run through a while loop and a cond.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow, run_program

import nbcluster as tf
from nbcluster.proto import graph_pb2

pytestmark = [requires_tensorflow, pytest.mark.timeout(300)]

CASES = ("cond", "cond_false", "while_sum", "nested", "call", "loop_with_matmul")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf2")
    return out, run_program("tf2_functions.py", str(out))


def _graph_def(out, name: str):
    return graph_pb2.GraphDef.FromString((out / f"{name}.pb").read_bytes())


@pytest.mark.parametrize("case", CASES)
def test_a_tf2_function_graph_imports_and_fetches_what_tf_fetched(written, case):
    out, report = written
    expected = np.load(out / f"{case}.npz")
    with tf.Graph().as_default():
        tf.import_graph_def(_graph_def(out, case), name="")
        with tf.Session() as sess:
            got = sess.run(report[case]["outputs"],
                           {p: expected[f"in{i}"]
                            for i, p in enumerate(report[case]["placeholders"])})
    assert report[case]["library"]  # the bodies came from the GraphDef's library
    for i, value in enumerate(got):
        assert value.dtype == expected[f"out{i}"].dtype
        np.testing.assert_allclose(value, expected[f"out{i}"], rtol=1e-6)


def test_a_tf1_training_graph_with_control_flow_v2_trains_as_in_tf(written):
    out, report = written
    case = report["training"]
    assert {"If", "StatelessWhile", "EmptyTensorList"} <= set(case["ops"])
    expected = np.load(out / "training.npz")
    feeds = {"x:0": expected["x"]}
    with tf.Graph().as_default():
        tf.import_graph_def(_graph_def(out, "training"), name="")
        with tf.Session() as sess:
            sess.run(case["init"])
            loss, grad_w, grad_x = sess.run(case["fetches"], feeds)
            sess.run(case["train"], feeds)
            after = sess.run(case["fetches"][0], feeds)
    np.testing.assert_allclose(loss, expected["loss"], rtol=1e-5)
    np.testing.assert_allclose(grad_w, expected["grad_w"], rtol=1e-5)
    np.testing.assert_allclose(grad_x, expected["grad_x"], rtol=1e-5)
    np.testing.assert_allclose(after, expected["after"], rtol=1e-5)
    assert after < loss


def test_function_bodies_travel_to_the_task_that_runs_them(written, tasks):
    # imported onto the ps and run from the worker's master: the ps registers the
    # graph whose call, If and While nodes carry their bodies in their attrs
    out, report = written
    spec = tasks.cluster({"ps": ["nbcluster"], "worker": ["nbcluster"]})
    expected = np.load(out / "nested.npz")
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            tf.import_graph_def(_graph_def(out, "nested"), name="")
        with tf.Session(f"grpc://{spec['worker'][0]}") as sess:
            got = sess.run(report["nested"]["outputs"][0], {"v:0": expected["in0"]},
                           options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                           run_metadata=(metadata := tf.RunMetadata()))
    np.testing.assert_allclose(got, expected["out0"], rtol=1e-6)
    ran_on = {d.device for d in metadata.step_stats.dev_stats
              for n in d.node_stats if n.node_name == "cond"}
    assert ran_on == {"/job:ps/replica:0/task:0/device:CPU:0"}, ran_on


def test_a_tf_client_trains_with_control_flow_v2_on_nbcluster_tasks(tasks):
    # TF's client sends its library with CreateSession; the loop reads a variable on
    # the ps, so it runs there (an op taking a resource runs with the resource)
    spec = tasks.cluster({"ps": ["nbcluster"], "worker": ["nbcluster"]})
    result = run_program("tf_client_cf2.py", f"grpc://{spec['worker'][0]}", json.dumps(spec))
    assert {"StatelessWhile", "If"} & set(result["ops"])
    np.testing.assert_allclose(result["losses"], result["reference_losses"], rtol=1e-5)
    assert result["losses"][-1] < result["losses"][0]
