"""DaemonPool, and what it is for: a program ends when its main thread does,
even while a step is still pending (a dequeue on a queue nobody fills)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from nbcluster.launch import child_env
from nbcluster.runtime import thread_pool
from nbcluster.runtime.thread_pool import DaemonPool

from process_checks import kill_pids, wait_gone

pytestmark = pytest.mark.timeout(120)

# Each script ends its main thread while another thread's step is blocked on
# an empty FIFOQueue, then must exit with its own status.
_PREFIX = """
    import sys, threading
    import nbcluster as tf

    def block_in(run):
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(1.0)
        print("blocked" if thread.is_alive() else "returned", flush=True)
"""
_SCRIPTS = {
    # Two dequeues in one step: the second runs on a pool thread.
    "in_process_session": """
        q1, q2 = tf.FIFOQueue(4, tf.float32), tf.FIFOQueue(4, tf.float32)
        sess = tf.Session("")
        block_in(lambda: sess.run([q1.dequeue(), q2.dequeue()]))
    """,
    "session_on_a_server": """
        server = tf.train.Server.create_local_server()
        q1, q2 = tf.FIFOQueue(4, tf.float32), tf.FIFOQueue(4, tf.float32)
        sess = tf.Session(server.target)
        block_in(lambda: sess.run([q1.dequeue(), q2.dequeue()]))
    """,
    "queue_runner": """
        source = tf.FIFOQueue(4, tf.float32)
        sink = tf.FIFOQueue(4, tf.float32)
        tf.train.add_queue_runner(tf.train.QueueRunner(sink, [sink.enqueue(source.dequeue())]))
        sess = tf.Session("")
        threads = tf.train.start_queue_runners(sess)
        block_in(lambda: sess.run([sink.dequeue(), sink.dequeue()]))
    """,
    # The queue lives in a second process (`ps`); this one is its worker.
    "two_processes": """
        import json, subprocess
        from nbcluster.launch import free_ports
        ps, worker = free_ports(2)
        cluster = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]}
        task = subprocess.Popen([sys.executable, "-m", "nbcluster.server", "--cluster",
                                 json.dumps(cluster), "--job", "ps", "--exit-with-parent"],
                                stdout=subprocess.PIPE, text=True)
        print(task.pid, flush=True)
        task.stdout.readline()
        server = tf.train.Server(cluster, job_name="worker", task_index=0)
        with tf.device("/job:ps/task:0"):
            dequeued = tf.FIFOQueue(4, tf.float32).dequeue()
        with tf.device("/job:worker/task:0"):
            out = dequeued + 1.0
        sess = tf.Session(server.target)
        block_in(lambda: sess.run(out))
    """,
}


@pytest.mark.parametrize("case", sorted(_SCRIPTS))
def test_a_program_exits_while_a_step_is_pending(case):
    """Regression: pool threads were joined at exit, so the program hung after its end."""
    script = textwrap.dedent(_PREFIX) + textwrap.dedent(_SCRIPTS[case]) + "sys.exit(3)\n"
    proc = subprocess.Popen([sys.executable, "-c", script], env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        hung = True
    else:
        hung = False
    lines = out.split()
    tasks = [int(word) for word in lines if word.isdigit()]  # the ps pid, if any
    left = wait_gone(tasks)  # --exit-with-parent: the ps goes with its parent
    kill_pids(left)
    assert not hung, f"{case}: the program did not exit after its main thread ended\n{err}"
    assert proc.returncode == 3, err
    assert lines[-1] == "blocked", out  # the step was pending when the program ended
    assert not left


def test_threads_are_daemons_and_reused():
    pool = DaemonPool(max_workers=4, thread_name_prefix="test-pool")
    names = [pool.submit(lambda: threading.current_thread()).result(10) for _ in range(5)]
    assert all(t.daemon for t in names)
    assert len({t.name for t in names}) == 1  # one idle thread serves each next task


def test_caps_threads_and_queues_the_rest():
    pool = DaemonPool(max_workers=2, thread_name_prefix="test-pool")
    release = threading.Event()
    started = threading.Semaphore(0)

    def hold():
        started.release()
        release.wait(30)
        return threading.current_thread().name

    futures = [pool.submit(hold) for _ in range(3)]
    assert started.acquire(timeout=10) and started.acquire(timeout=10)
    assert not started.acquire(timeout=0.2)  # the third waits for a free thread
    release.set()
    assert len({f.result(10) for f in futures}) == 2


def test_exceptions_reach_the_future_and_map_works():
    pool = DaemonPool(max_workers=2, thread_name_prefix="test-pool")
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(10)
    assert list(pool.map(lambda x: x * 2, range(5), timeout=10)) == [0, 2, 4, 6, 8]


def test_idle_threads_end(monkeypatch):
    monkeypatch.setattr(thread_pool, "_IDLE_EXIT_S", 0.05)
    pool = DaemonPool(max_workers=3, thread_name_prefix="test-pool-idle")
    thread = pool.submit(threading.current_thread).result(10)
    thread.join(10)
    assert not thread.is_alive()
    assert pool.submit(lambda: 7).result(10) == 7  # a new thread takes the next task


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_gets_fresh_threads():
    import os
    pool = DaemonPool(max_workers=1, thread_name_prefix="test-pool-fork")
    assert pool.submit(lambda: 1).result(10) == 1  # the parent's thread now waits idle
    pid = os.fork()
    if pid == 0:  # the child: that thread is not here
        try:
            code = 0 if pool.submit(lambda: 2).result(10) == 2 else 1
        except BaseException:  # noqa: BLE001 - any failure is the child's exit status
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
