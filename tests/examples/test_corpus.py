"""The TF1-shaped corpus (nbcluster/examples/tf1/) runs as its docstrings say: each task
its own process on 127.0.0.1, started in a random order, every trainer reaching its
loss and every process ending cleanly (`python -m nbcluster.examples.run NAME`)."""
import json
import os
import random
import signal
import subprocess
import sys

import pytest

from nbcluster.examples.corpus import PROGRAMS

RUN_TIMEOUT_S = 240  # the runner's own bound on its trainers; the subprocess gets more


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_trains_and_every_task_exits_cleanly(name):
    seed = random.randrange(1 << 16)
    proc = subprocess.Popen([sys.executable, "-m", "nbcluster.examples.run", name,
                             "--seed", str(seed), "--timeout", str(RUN_TIMEOUT_S)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S + 40)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and every task it started
        out, err = proc.communicate()
        pytest.fail(f"{name} (start-order seed {seed}) did not finish:\n{err[-3000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    assert proc.returncode == 0 and result["ok"], (
        f"{name} (start-order seed {seed}): {result.get('problems')}\n{err[-3000:]}")
    assert result["losses"] and all(v <= PROGRAMS[name].max_loss
                                    for v in result["losses"].values())
