"""A real jupyter server process on 127.0.0.1 with nbcluster's server extension, for the
server-extension tests (tests/jupyter/conftest.py makes it a fixture)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

TOKEN = "nbcluster-server-extension-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_server(home, extra_args=()):
    """A jupyter server with isolated JUPYTER_* dirs under `home` (on its PYTHONPATH too, for
    classes `extra_args` name): {"url", "runtime", "log"}."""
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               IPYTHONDIR=str(home / "ipython"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(home), os.environ.get("PYTHONPATH")])))
    env.pop("JUPYTER_PATH", None)
    port, log_path = _free_port(), home / "server.log"
    # the extension is named on the command line too, so that this test checks the
    # handler even where the package's config file is not installed (the list test is
    # the one that checks the installation)
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           "--ServerApp.allow_root=True", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={home}",
           "--ServerApp.jpserver_extensions={'nbcluster.jupyter': True}", *extra_args]
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter server did not come up:\n"
                                       f"{log_path.read_text()}") from None
                time.sleep(0.25)
        yield {"url": url, "runtime": home / "runtime", "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # our own process group only
            proc.wait(timeout=10)


def get_json(server, path: str = "/nbcluster/clusters", token: bool = True,
             timeout: float = 20):
    """GET `path` from `server` (the fixture's dict); the JSON it answered."""
    headers = {"Authorization": f"token {TOKEN}"} if token else {}
    request = urllib.request.Request(server["url"] + path, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        return json.loads(response.read())
