"""`%%tfserver cluster NAME --server tensorflow`: a cell starts real TensorFlow tasks."""
from __future__ import annotations

import pytest
from IPython.utils.capture import capture_output
from tensorflow_processes import requires_tensorflow

from nbcluster.jupyter.failures import TfServerError

from process_checks import wait_gone

pytestmark = pytest.mark.timeout(300)


@requires_tensorflow
def test_a_cell_starts_tensorflow_tasks_and_stops_them(ip):
    with capture_output():
        ip.run_cell_magic("tfserver", "cluster tfdemo --server tensorflow --timeout 120",
                          "worker: 2\n")
    cluster = ip.user_ns["tfdemo"]
    statuses = cluster.status()
    assert [s.state for s in statuses] == ["up", "up"]
    assert [s.devices for s in statuses] == [
        (f"/job:worker/replica:0/task:{i}/device:CPU:0",) for i in range(2)]
    with capture_output() as cap:
        ip.run_line_magic("tfserver", "stop tfdemo")
    assert cap.stdout.strip() == "stopped tfdemo"
    assert wait_gone([s.pid for s in statuses]) == []


@pytest.mark.parametrize("line", ["cluster x --server tensorflow --ssh a,b",
                                  "cluster x --server tensorflow --slurm"])
def test_tensorflow_tasks_are_local_only(ip, line):
    with capture_output(), pytest.raises(TfServerError, match="local tasks only"):
        ip.run_cell_magic("tfserver", line, "worker: 1\n")
