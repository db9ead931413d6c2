"""The server extension asks jupyter-server's authorizer (resource "nbcluster":
"read" to list, "write" to stop); a stop the OS refuses is a JSON 403; the
records' runtime dir is made 0700."""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from nbcluster.jupyter import server_extension
from nbcluster.launch import Cluster, record_stop

pytestmark = pytest.mark.timeout(180)

TOKEN = "nbcluster-authorizer-test"
_AUTHORIZER = '''
from jupyter_server.auth.authorizer import Authorizer


class ReadOnlyClusters(Authorizer):
    """Everything, except "write" on nbcluster's resource."""

    def is_authorized(self, handler, user, action, resource):
        return not (resource == "nbcluster" and action == "write")
'''


@pytest.fixture(scope="module")
def read_only_server(tmp_path_factory):
    home = tmp_path_factory.mktemp("auth-home")
    (home / "readonly_authorizer.py").write_text(_AUTHORIZER)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               IPYTHONDIR=str(home / "ipython"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(home), os.environ.get("PYTHONPATH")])))
    env.pop("JUPYTER_PATH", None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           "--ServerApp.allow_root=True", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={home}",
           "--ServerApp.authorizer_class=readonly_authorizer.ReadOnlyClusters",
           "--ServerApp.jpserver_extensions={'nbcluster.jupyter': True}"]
    url, log_path = f"http://127.0.0.1:{port}", home / "server.log"
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
        yield {"url": url, "runtime": home / "runtime"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # our own process group only
            proc.wait(timeout=10)


def _request(server, path: str, method: str = "GET") -> tuple:
    request = urllib.request.Request(server["url"] + path, method=method,
                                     headers={"Authorization": f"token {TOKEN}"},
                                     data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_the_authorizer_decides_who_may_list_and_who_may_stop(read_only_server, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(read_only_server["runtime"]))
    with Cluster.local(ps=0, worker=1, name="guarded") as cluster:
        status, listed = _request(read_only_server, "/nbcluster/clusters")
        assert status == 200 and [c["name"] for c in listed] == ["guarded"]
        status, _ = _request(read_only_server, f"/nbcluster/clusters/{listed[0]['id']}/stop",
                             "POST")
        assert status == 403  # logged in, but not allowed to "write" nbcluster
        assert {s.state for s in cluster.status()} == {"up"}


def test_a_stop_the_os_refuses_is_a_json_403(monkeypatch):
    monkeypatch.setattr(record_stop, "find", lambda record_id: {"name": "theirs"})

    def refuse(record):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(record_stop, "stop_recorded", refuse)
    status, answer = server_extension.stop("4242-theirs")
    assert status == 403
    assert "Not allowed to stop cluster '4242-theirs'" in answer["message"]
    json.dumps(answer)  # a JSON body, not a traceback page


def test_the_runtime_dir_is_made_private(tmp_path, monkeypatch):
    runtime = tmp_path / "fresh" / "runtime"
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    old = os.umask(0o022)
    try:
        with Cluster.local(ps=0, worker=1, name="private"):
            assert (runtime / "nbcluster").is_dir()
            modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (runtime, runtime / "nbcluster")}
    finally:
        os.umask(old)
    assert modes == {runtime: 0o700, runtime / "nbcluster": 0o700}
