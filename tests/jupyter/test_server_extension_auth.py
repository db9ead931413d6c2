"""The server extension asks jupyter-server's authorizer (resource "nbcluster":
"read" to list, "write" to stop); a stop the OS refuses is a JSON 403; the
records' runtime dir is made 0700."""
from __future__ import annotations

import json
import os
import stat
import urllib.error
import urllib.request

import pytest
from lab_server import TOKEN, jupyter_server

from nbcluster.jupyter import server_extension
from nbcluster.launch import Cluster, record_stop

pytestmark = pytest.mark.timeout(180)

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
    with jupyter_server(home, ["--ServerApp.authorizer_class="
                               "readonly_authorizer.ReadOnlyClusters"]) as server:
        yield server


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
