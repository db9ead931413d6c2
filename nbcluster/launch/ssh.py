"""The SSH launcher: tasks on remote hosts, through the system's OpenSSH `ssh` client.

`ssh` runs as a subprocess, so the user's ~/.ssh/config, ssh-agent and
known_hosts apply exactly as on the command line, and nothing new is
installed. Every call has `-o BatchMode=yes`: a host that would ask for a
password or a host-key confirmation fails at once instead of hanging.

Each task is one ssh session that runs, in the remote login shell (POSIX sh
syntax), `exec env K=V ... <python> -m nbcluster.server ... --exit-with-parent=$PPID`:
the server replaces the shell, so it is a child of the session's sshd and
dies when the session ends; its stdout and stderr come back through ssh into
the task's local log file. The local `ssh` client in turn dies with this
process (Linux's parent-death signal, set before it is exec'd). `stop()`
also kills the remote pid explicitly over ssh. No ControlMaster: a
multiplexed session's command is a child of the master connection's sshd,
which outlives the session, so the task would not die with it.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from typing import Optional

from nbcluster.launch.errors import LaunchError
from nbcluster.launch.launcher import spawn, stop_all, wait_until
from nbcluster.rpc.grpc_transport.tls_material import MATERIAL_ENV as TLS_ENV
from nbcluster.rpc.grpc_transport.tokens import ENV as TOKEN_ENV

# Runs argv[2:] with SIGTERM as its parent-death signal, unless the parent
# (argv[1]) is already gone; no nbcluster import, so it costs ~20 ms.
_DIE_WITH_PARENT = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 15, 0, 0, 0); "
                    "os.getppid() == int(sys.argv[1]) or os._exit(0); "
                    "os.execvp(sys.argv[2], sys.argv[2:])")
# Checks that nbcluster imports remotely and prints `count` ports free there.
_PROBE = ("import importlib.util, socket, sys\n"
          "if importlib.util.find_spec('nbcluster') is None: sys.exit(3)\n"
          "socks = [socket.socket() for _ in range(int(sys.argv[1]))]\n"
          "for s in socks: s.bind(('', 0))\n"
          "print('ports', *[s.getsockname()[1] for s in socks])\n")


# Whitespace, control characters and NUL: no host name has them, and ssh or
# a shell on the way could split on them.
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f]")


def check_host(host) -> str:
    """`host` if it is safe to hand to ssh as its destination.

    A host such as "-oProxyCommand=sh -c ..." would otherwise be an ssh
    option that runs a command here, before any connection.

    Raises:
      ValueError: not a non-empty string, begins with "-", or holds
        whitespace or control characters (the message names it).
    """
    if not isinstance(host, str) or not host:
        raise ValueError(f"An SSH host must be a non-empty host name, not {host!r}")
    if host.startswith("-") or _UNSAFE.search(host):
        raise ValueError(f"SSH host {host!r} is not a host name: it begins with '-' or holds "
                         f"whitespace or control characters")
    return host


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


class SSHProcess:
    """A task run by one ssh session; its server pid comes from GetStatus."""

    def __init__(self, launcher: "SSHLauncher", host: str, proc: subprocess.Popen) -> None:
        self.launcher, self.host, self.proc = launcher, host, proc
        self.pid: Optional[int] = proc.pid
        self.server_pid: Optional[int] = None
        self._killer: Optional[subprocess.Popen] = None

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def _remote_kill(self, sig: int, wait: bool) -> None:
        command = f"kill -{int(sig)} {int(self.server_pid)}"
        proc = spawn(self.launcher.ssh_argv(self.host) + [command], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait:
            if not wait_until(proc, time.monotonic() + self.launcher.connect_timeout + 5):
                proc.kill()
                proc.wait()
        else:
            self._killer = proc

    def signal(self, sig: int) -> None:
        if self.proc.poll() is not None:
            return
        if self.server_pid:
            self._remote_kill(sig, wait=True)
        else:  # not served yet: ending the session ends the task
            self.proc.send_signal(sig)

    def terminate(self) -> None:
        if self.proc.poll() is None:
            if self.server_pid:
                self._remote_kill(signal.SIGTERM, wait=False)
            else:
                self.proc.terminate()

    def wait_until(self, deadline: float) -> bool:
        ended = wait_until(self.proc, deadline)
        if self._killer is not None and not wait_until(self._killer, deadline):
            self._killer.kill()
            self._killer.wait()
        return ended

    def force(self) -> None:
        if self.proc.poll() is None and self.server_pid:
            self._remote_kill(signal.SIGKILL, wait=True)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self, grace: float) -> None:
        stop_all([self], grace)


class SSHLauncher:
    """Starts tasks over SSH with the system `ssh` client.

    Args:
      python: the remote interpreter that can import nbcluster (an absolute
        path is safest: a login shell's PATH may pick another Python).
      user: the remote user (default: ssh's, e.g. from ~/.ssh/config).
      key: an identity file (then only it is offered).
      port: the sshd port.
      ssh_options: more `ssh` arguments, e.g. ("-o", "StrictHostKeyChecking=no").
      env: environment variables for the remote tasks (e.g. PYTHONPATH), set
        on the remote command line, since sshd drops most sent variables.
      connect_timeout: seconds for ssh to connect.
    """

    kind = "ssh"

    def __init__(self, python: str = "python3", user: Optional[str] = None,
                 key: Optional[str] = None, port: int = 22, ssh_options=(),
                 env: Optional[dict] = None, connect_timeout: float = 10.0) -> None:
        if not isinstance(python, str) or not python:
            raise ValueError(f"python must name the remote interpreter, not {python!r}")
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"port must be an integer in [1, 65535], not {port!r}")
        if isinstance(ssh_options, str) or not all(isinstance(o, str) for o in ssh_options):
            raise TypeError(f"ssh_options must be a sequence of strings, not {ssh_options!r}")
        if user is not None and (not isinstance(user, str) or not user or
                                 user.startswith("-") or _UNSAFE.search(user)):
            raise ValueError(f"user must be a login name, not {user!r}")
        self.python, self.user, self.key, self.port = python, user, key, port
        self.ssh_options = tuple(ssh_options)
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.connect_timeout = connect_timeout

    def ssh_argv(self, host: str) -> list:
        """The `ssh ... -- host` argv (the remote command goes after it).

        Raises:
          ValueError: `host` could be read as an option (see `check_host`).
        """
        check_host(host)
        argv = ["ssh", "-o", "BatchMode=yes", "-o",
                f"ConnectTimeout={max(1, int(self.connect_timeout))}", "-p", str(self.port)]
        if self.key:
            argv += ["-i", self.key, "-o", "IdentitiesOnly=yes"]
        if self.user:
            argv += ["-l", self.user]
        # "--": whatever the host is, ssh reads no option past it.
        return argv + list(self.ssh_options) + ["--", host]

    def remote_command(self, args: list, env: Optional[dict] = None) -> str:
        """`exec env K=V ... python ARGS`, quoted for the remote POSIX shell; `env`
        (a task's own variables) over the launcher's."""
        env = {**self.env, **(env or {})}
        words = ["exec", "env"] + [f"{k}={v}" for k, v in sorted(env.items())]
        return " ".join(shlex.quote(w) for w in words + [self.python] + list(args))

    def free_ports(self, host: str, count: int, timeout: float) -> list:
        """`count` ports free on `host`; also checks that ssh and python work there.

        Raises:
          LaunchError: one line naming `host` and what failed.
        """
        command = self.remote_command(["-c", _PROBE, str(count)])
        try:
            done = subprocess.run(self.ssh_argv(host) + [command], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True,
                                  timeout=max(timeout, self.connect_timeout + 5))
        except subprocess.TimeoutExpired:
            raise LaunchError(f"Cannot reach host {host!r} over ssh: no answer within "
                              f"{timeout:g}s") from None
        except FileNotFoundError:
            raise LaunchError(f"Cannot reach host {host!r}: no `ssh` client on PATH") from None
        if done.returncode == 255:
            raise LaunchError(f"Cannot reach host {host!r} over ssh: "
                              f"{_last_line(done.stderr)}")
        if done.returncode == 3:
            raise LaunchError(f"{self.python} on host {host!r} cannot import nbcluster (install "
                              f"it there, or pass env={{'PYTHONPATH': ...}})")
        words = _last_line(done.stdout).split()
        if done.returncode != 0 or words[:1] != ["ports"] or len(words) != count + 1:
            raise LaunchError(f"{self.python} did not run on host {host!r} (status "
                              f"{done.returncode}): {_last_line(done.stderr)}")
        return [int(w) for w in words[1:]]

    def start(self, host: str, args: list, log_path: str, tasks_on_host: int,
              env: dict) -> SSHProcess:
        """Starts `python -m nbcluster.server ARGS` on `host`; output into `log_path`."""
        del tasks_on_host  # the remote host's cores are its own business
        env = dict(env)
        # the token and TLS material: one line each through ssh's stdin and the
        # shell's `read`, on no command line there
        secret = {name: env.pop(name) for name in (TOKEN_ENV, TLS_ENV) if env.get(name)}
        # $PPID is the session's sshd, unquoted so the remote shell expands it.
        command = self.remote_command(["-m", "nbcluster.server", *args], env) + \
            " --exit-with-parent=$PPID"
        for name in reversed(secret):
            command = f"IFS= read -r {name} && export {name} && {command}"
        argv = self.ssh_argv(host) + [command]
        if sys.platform.startswith("linux"):
            argv = [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid())] + argv
        with open(log_path, "ab") as log:
            proc = spawn(argv, stdin=subprocess.PIPE if secret else subprocess.DEVNULL,
                         stdout=log, stderr=subprocess.STDOUT)
        if secret:
            try:
                proc.stdin.write("".join(v + "\n" for v in secret.values()).encode())
                proc.stdin.close()
            except OSError:
                pass  # ssh died at once: its log and status say why
        return SSHProcess(self, host, proc)

    def close(self) -> None:
        pass
