"""No orphans: tasks die with the process that started them, however it ends."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from nbcluster.launch import child_env

from process_checks import kill_pids, wait_gone

pytestmark = pytest.mark.timeout(120)

_OWNER = textwrap.dedent("""
    import json, sys, threading, time
    from nbcluster.launch import Cluster
    holder = []
    def create():  # from a thread that ends at once: tasks must outlive it
        holder.append(Cluster.local(ps=1, worker=2))
    thread = threading.Thread(target=create)
    thread.start()
    thread.join()
    cluster = holder[0]
    print(json.dumps([s.pid for s in cluster.status()]), flush=True)
    time.sleep(1.0)
    print(json.dumps([s.state for s in cluster.status()]), flush=True)
    sys.stdin.readline()  # the test says when to end
    sys.exit(0)  # no stop(): the normal end of the process must do it
""")


def _owner(how: str) -> tuple:
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, how], env=child_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(owner.stdout.readline())
        states = json.loads(owner.stdout.readline())
    except BaseException:
        owner.kill()
        owner.wait()
        raise
    return owner, pids, states


@pytest.mark.parametrize("how", ["sigkill", "exit"])
def test_tasks_stop_within_seconds_when_the_owner_dies(how):
    owner, pids, states = _owner(how)
    try:
        assert len(pids) == 3 and states == ["up", "up", "up"]
        assert wait_gone(pids, 0.5) == pids  # alive while the owner is
        if how == "sigkill":
            owner.kill()
        else:
            owner.stdin.write("end\n")
            owner.stdin.flush()
        assert owner.wait(30) == (-9 if how == "sigkill" else 0)
        left = wait_gone(pids, 10)
        assert left == [], f"tasks {left} outlived their owner by 10 s"
    finally:
        owner.kill()
        owner.wait()
        owner.stdout.close()
        owner.stdin.close()
        kill_pids(pids)
