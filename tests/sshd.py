"""A real OpenSSH sshd on 127.0.0.1 for the SSH launcher and magic tests (a fixture)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

SSHD = "/usr/sbin/sshd"  # an absolute path: sshd re-execs itself


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real sshd on 127.0.0.1:<free port>, key auth for the current user.

    Skips only where sshd cannot be started here (not installed); CI's
    `.ci/run` installs openssh-server so that it can.
    """
    if not (os.path.exists(SSHD) and shutil.which("ssh-keygen") and shutil.which("ssh")):
        pytest.skip("sshd cannot start here: apt-get install -y openssh-server openssh-client")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege-separation dir
    d = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)],
                       check=True, timeout=30)
    shutil.copy(d / "client_key.pub", d / "authorized_keys")
    port = _free_port()
    (d / "sshd_config").write_text(f"""\
ListenAddress 127.0.0.1
Port {port}
HostKey {d}/host_key
AuthorizedKeysFile {d}/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile {d}/sshd.pid
LogLevel VERBOSE
""")
    check = subprocess.run([SSHD, "-t", "-f", str(d / "sshd_config")], capture_output=True,
                           text=True, timeout=30)
    if check.returncode != 0:
        pytest.skip(f"sshd cannot start here: {check.stderr.strip()}")
    log = open(d / "sshd.log", "wb")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while True:  # ready once it sends its banner
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                if s.recv(64).startswith(b"SSH-2.0-"):
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log.close()
            raise RuntimeError((d / "sshd.log").read_text())
        time.sleep(0.1)
    options = ("-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "LogLevel=ERROR")
    try:
        yield {"host": "127.0.0.1", "port": port, "key": str(d / "client_key"),
               "options": options, "dir": d}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
