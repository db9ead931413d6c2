"""Launchers start task processes; the local one runs `python -m nbcluster.server` here.

A launcher knows how to find free ports on a host and how to start, signal
and stop one task process whose output goes to a log file. `Cluster` does the
rest (ports, readiness, retries) the same way for every launcher.

Rule: a task process dies with its owner. Each task gets `--exit-with-parent`
(the server then sets Linux's parent-death signal and also polls its parent),
and is spawned by `process.spawn` (see why there).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Optional, Protocol

from nbcluster.launch.errors import LaunchError
from nbcluster.launch.process import child_env, free_ports, share_blas_threads, spawn

_LOG_TAIL_BYTES = 256 * 1024


class TaskProcess(Protocol):
    """One started task, as its launcher sees it."""
    pid: Optional[int]         # the local process (the task itself, or its ssh client)
    server_pid: Optional[int]  # the task's own pid (from GetStatus when remote)

    def poll(self) -> Optional[int]: ...

    def signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...  # asks the task to stop; does not wait

    def wait_until(self, deadline: float) -> bool: ...  # ended by time.monotonic() deadline?

    def force(self) -> None: ...  # SIGKILL and reap

    def stop(self, grace: float) -> None: ...


class Launcher(Protocol):
    kind: str

    def free_ports(self, host: str, count: int, timeout: float) -> list: ...

    # env: the task's own variables (its GPU list), set over the launcher's
    def start(self, host: str, args: list, log_path: str, tasks_on_host: int,
              env: dict) -> TaskProcess: ...

    def close(self) -> None: ...


def log_tail(path: str, lines: int = 50) -> str:
    """The last `lines` lines of the log at `path` ("" if there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _LOG_TAIL_BYTES))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


def stop_all(processes: list, grace: float) -> None:
    """Asks every TaskProcess to stop, SIGKILLs those still alive after `grace` s.

    No threads: this also runs from atexit, when no new thread may start.
    """
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        if not process.wait_until(deadline):
            process.force()


def wait_until(proc: subprocess.Popen, deadline: float) -> bool:
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


class EngineProcess:
    """A task process that an engine (a Dask worker, a Ray actor) holds, reached only
    through that engine: a subclass says how to ask its exit code (`_exit_code`,
    None when not known now), how to signal it (`_send`), and whether the place it
    ran is gone (`_gone`: nothing is left to wait for)."""

    def __init__(self) -> None:
        self.pid: Optional[int] = None
        self.server_pid: Optional[int] = None
        self._code: Optional[int] = None

    def _exit_code(self) -> Optional[int]:
        raise NotImplementedError

    def _send(self, sig: int) -> None:
        raise NotImplementedError

    def _gone(self) -> bool:
        return False

    def poll(self) -> Optional[int]:
        return self._code

    def signal(self, sig: int) -> None:
        self._send(int(sig))

    def terminate(self) -> None:
        self.signal(signal.SIGTERM)

    def wait_until(self, deadline: float) -> bool:
        while True:
            code = self._exit_code()
            if code is not None:
                self._code = code
                return True
            if self._gone():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def force(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait_until(time.monotonic() + 5.0)

    def stop(self, grace: float) -> None:
        stop_all([self], grace)


class LocalProcess:
    """A task process on this host."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.pid: Optional[int] = proc.pid
        self.server_pid: Optional[int] = proc.pid

    def poll(self) -> Optional[int]:
        """The exit code once the process ended (-N: killed by signal N), else None.

        While another thread is inside `proc.wait()` (`kill()` and `stop()` wait),
        Popen's own poll says None even for a dead process, so a status poll
        that found the task silent called it "down" before "failed": the
        exit is then peeked at without reaping it (WNOWAIT), the waiter's to do.
        """
        code = self.proc.poll()
        if code is not None:
            return code
        try:
            ended = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped by that waiter just now
            return self.proc.returncode
        if ended is None:
            return None
        killed = ended.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
        return -ended.si_status if killed else ended.si_status

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def terminate(self) -> None:
        self.signal(signal.SIGTERM)

    def wait_until(self, deadline: float) -> bool:
        return wait_until(self.proc, deadline)

    def force(self) -> None:
        self.signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, grace: float) -> None:
        stop_all([self], grace)


# What a task runs, by the `server` a cluster asks for.
SERVER_MODULES = {"nbcluster": "nbcluster.server",
                  "tensorflow": "nbcluster.launch.tensorflow_task"}


class LocalLauncher:
    """Runs each task as `python -m nbcluster.server` on this host.

    Args:
      python: the interpreter (default: this one).
      env: extra environment variables for the tasks; this checkout of
        nbcluster comes first on their PYTHONPATH, and tasks on one host share
        its cores among their BLAS threads unless `env` sets a thread count.
      server: "nbcluster", or "tensorflow" for real `tf.distribute.Server`
        tasks (`tensorflow_task.py`; they check no token).
    """

    kind = "local"
    shares_files = True  # its tasks read files this process writes (task_secrets.py)

    def __init__(self, python: Optional[str] = None, env: Optional[dict] = None,
                 server: str = "nbcluster") -> None:
        if server not in SERVER_MODULES:
            raise ValueError(f"server must be one of {sorted(SERVER_MODULES)}, not {server!r}")
        self.python = python or sys.executable
        self.env = dict(env or {})
        self.server = server
        self.authenticates = server == "nbcluster"

    def free_ports(self, host: str, count: int, timeout: float) -> list:
        """`count` ports free on `host` (a local address).

        Raises:
          LaunchError: `host` is not an address of this machine.
        """
        try:
            return free_ports(count, host) if count else []
        except OSError as e:
            raise LaunchError(f"Cannot pick a port on host {host!r}: {e.strerror or e} (a "
                              f"local cluster's host must be an address of this machine)") \
                from None

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int,
              env: dict) -> LocalProcess:
        env = child_env({**self.env, **env})
        share_blas_threads(env, tasks_on_host)
        # The pid of this process, not "whoever is my parent when I look": a
        # task that starts slowly may find itself orphaned before it looks.
        argv = [self.python, "-m", SERVER_MODULES[self.server], *args,
                f"--exit-with-parent={os.getpid()}"]
        try:
            with open(log_path, "ab") as log:
                # Its own session: a terminal's ^C/^Z/hang-up goes to the owner, who stops
                # the tasks, and a task stopped on purpose (SIGSTOP) is never resumed by
                # the kernel's orphaned-group SIGCONT when some process of ours exits.
                proc = spawn(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            raise LaunchError(f"Cannot run {self.python!r}: {e.strerror or e}") from None
        return LocalProcess(proc)

    def close(self) -> None:
        pass


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)
