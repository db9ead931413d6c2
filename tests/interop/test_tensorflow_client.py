"""A real TensorFlow client (`tf.compat.v1.Session("grpc://<nbcluster task>")`)
on an nbcluster cluster of a ps and a worker, each its own process."""
from __future__ import annotations

import json

import numpy as np
import pytest
from tensorflow_processes import requires_tensorflow, run_program

pytestmark = [requires_tensorflow, pytest.mark.timeout(420)]


@pytest.fixture(scope="module")
def tf_client_run():
    """One TF client program's results on a fresh nbcluster ps + worker."""
    from tensorflow_processes import Tasks
    started = Tasks()
    try:
        spec = started.cluster({"ps": ["nbcluster"], "worker": ["nbcluster"]})
        yield run_program("tf_client.py", f"grpc://{spec['worker'][0]}", json.dumps(spec))
    finally:
        started.stop()


def test_a_tensorflow_client_trains_with_tf_losses_and_optimizers_as_tf_does(tf_client_run):
    losses, reference = tf_client_run["losses"], tf_client_run["reference_losses"]
    np.testing.assert_allclose(losses, reference, rtol=2e-5)
    assert losses[-1] < losses[0]


def test_fetches_and_feeds_of_any_size_travel_as_one_message(tf_client_run):
    assert tf_client_run["fetch_8mib"] == [[2 << 20], 1.5 * (2 << 20)]
    assert tf_client_run["fetch_256mib"] == [[64 << 20], 0.25, 0.25]
    assert tf_client_run["feed_64mib"] == 0.5 * (16 << 20)


def test_make_callable_runs_by_handle(tf_client_run):
    assert tf_client_run["callable"] == [[2.0, 4.0, 6.0], 4.0]
    assert tf_client_run["callable_again"] == [[2.0, 4.0, 6.0], 2.0]


def test_step_stats_name_the_nbcluster_devices_that_ran_the_ops(tf_client_run):
    devices = tf_client_run["step_stats_devices"]
    assert "/job:ps/replica:0/task:0/device:CPU:0" in devices, devices
    assert {"v", "mul"} <= set(tf_client_run["step_stats_nodes"])


def test_errors_arrive_as_tensorflow_s_classes_and_the_session_goes_on(tf_client_run):
    kind, message = tf_client_run["error"]
    assert kind == "InvalidArgumentError"
    assert "8" in message and "3" in message, message
    assert tf_client_run["after_error"] == [2.0, 4.0, 6.0]


def test_partial_runs_are_unimplemented_naming_the_method(tf_client_run):
    kind, message = tf_client_run["partial_run"]
    assert kind == "UnimplementedError" and "PartialRunSetup" in message


def test_reset_clears_the_variables_a_tf_client_made(tf_client_run):
    assert tf_client_run["after_reset"] == "FailedPreconditionError"


def test_a_tf2_style_client_with_resource_variables_trains_as_tf_does(tasks):
    """TF2's graph-mode defaults: VarHandleOp / ReadVariableOp / ResourceApply* on the ps."""
    spec = tasks.cluster({"ps": ["nbcluster"], "worker": ["nbcluster"]})
    result = run_program("tf_client.py", f"grpc://{spec['worker'][0]}", json.dumps(spec),
                         "resource")
    np.testing.assert_allclose(result["losses"], result["reference_losses"], rtol=2e-5)
    assert "ReadVariableOp" in result["step_stats_nodes"]
    assert result["callable"] == [[2.0, 4.0, 6.0], 4.0]
    assert result["after_reset"] == "FailedPreconditionError"
