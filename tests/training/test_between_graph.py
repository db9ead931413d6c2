"""Between-graph replication (TF1's tutorial): 1 ps + 2 workers as task processes, and
each worker's client loop in its own process, training one MLP whose variables and
global step live on the ps."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.launch import child_env

pytestmark = pytest.mark.timeout(180)

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ps_worker.py")
STEPS = 60
LOSS_BELOW = 0.1  # held-out mean cross entropy after both workers' steps


def _worker_module():
    spec = importlib.util.spec_from_file_location("ps_worker", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start_worker(cluster, task: int, out: str) -> subprocess.Popen:
    args = [sys.executable, SCRIPT, "--cluster", json.dumps(cluster.spec.as_dict()),
            "--task", str(task), "--steps", str(STEPS), "--out", out]
    return subprocess.Popen(args, env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, timeout: float) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"worker client failed (rc={proc.returncode}):\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def test_two_workers_train_one_model_on_the_ps(cluster_factory, tmp_path):
    cluster = cluster_factory({"ps": 1, "worker": 2}, timeout=60)
    procs = [_start_worker(cluster, task, str(tmp_path)) for task in (0, 1)]
    try:
        results = [_finish(p, 150) for p in procs]
    finally:
        for p in procs:  # by pid, whatever happened above
            if p.poll() is None:
                p.kill()
                p.wait()
    # Each worker saw the loss fall, on its own batches and on held-out data.
    for r in results:
        assert r["first_eval_loss"] > 2.0, r
        assert r["final_eval_loss"] < LOSS_BELOW, r
        assert r["last_loss"] < r["first_loss"], r
    # One shared global step: every update of both workers counted once.
    assert [r["final_global_step"] for r in results] == [2 * STEPS] * 2, results

    # What the ps holds, read by a third client: equal to both workers' last reads.
    with tf.Graph().as_default():
        model, step, _ = _worker_module().build(cluster.spec, 0, 0.1)
        assert {v.device for v in model.variables + [step]} == {"/job:ps/task:0"}
        with tf.Session(cluster.target("ps", 0)) as sess:
            on_ps = sess.run(model.variables)
            assert sess.run(step) == 2 * STEPS
    for task in (0, 1):
        saved = np.load(tmp_path / f"worker{task}.npz")
        for i, value in enumerate(on_ps):
            np.testing.assert_array_equal(saved[f"arr_{i}"], value)
