"""Spawning task processes: their environment, free ports, and one long-lived spawner thread.

Every task process is forked by one thread that lives as long as this
process: Linux's parent-death signal (which `--exit-with-parent` sets in the
task) fires when the *thread* that forked the task ends, and a notebook may
create clusters from short-lived threads.
"""
from __future__ import annotations

import os
import queue
import socket
import subprocess
import threading
from concurrent.futures import Future
from typing import Optional

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_ports(n: int, host: str = "127.0.0.1") -> list:
    """`n` distinct ports free on `host` right now (bound together, then released).

    Another process may still take one before it is used: bind soon after.
    """
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_port_free(host: str, port: int, timeout: float) -> bool:
    """Waits until `port` can be bound on `host` (a dead server's socket may linger a
    moment); whether it could within `timeout` s."""
    import time
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            try:
                s.bind((host, port))
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
        time.sleep(0.1)


def child_env(extra: Optional[dict] = None) -> dict:
    """This environment, with this checkout of nbcluster first on PYTHONPATH."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = _PACKAGE_ROOT + (os.pathsep + path if path else "")
    env.update(extra or {})
    return env


def share_blas_threads(env: dict, tasks: int) -> None:
    """Sets a task process's math threads before numpy loads, by the rule every
    Server applies once it runs (`runtime/math_threads.py`): this host's cores
    split among its `tasks`. A thread count the user set wins, as it does there.
    """
    from nbcluster.runtime.math_threads import THREAD_VARS, core_share
    if not any(name in env for name in THREAD_VARS):
        env["OPENBLAS_NUM_THREADS"] = str(core_share(tasks))


# -- spawning from one thread that lives as long as the process ----------------
_requests: "queue.Queue" = queue.Queue()
_spawner: Optional[threading.Thread] = None
_spawner_lock = threading.Lock()


def _serve_spawns() -> None:
    while True:
        future, argv, kwargs = _requests.get()
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(subprocess.Popen(argv, **kwargs))
            except BaseException as e:  # handed to the caller, who re-raises it
                future.set_exception(e)


def spawn(argv: list, **kwargs) -> subprocess.Popen:
    """subprocess.Popen(argv, **kwargs), forked from the process-long spawner thread."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_serve_spawns, name="nbcluster-spawner",
                                        daemon=True)
            _spawner.start()
    future: Future = Future()
    _requests.put((future, argv, kwargs))
    return future.result()


