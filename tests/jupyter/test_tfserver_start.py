"""Jupyter tier: %tfserver start (servers in the kernel), help, one-line errors, unload."""
from __future__ import annotations

import json
import socket
import time

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.jupyter.failures import TfServerError
from nbcluster.launch import free_ports
from nbcluster.server import Server

pytestmark = pytest.mark.timeout(90)

SUBCOMMANDS = ("start", "cluster", "list", "status", "logs", "restart", "stop", "connect")


def _add_one(target: str) -> float:
    with tf.Graph().as_default():
        y = tf.constant(41.0) + 1.0
        with tf.Session(target) as sess:
            return float(sess.run(y))


def _refused(target: str, within: float = 5.0) -> bool:
    """Whether connecting to `target` is refused, trying for up to `within` seconds (on a
    loaded machine gRPC may close its listener a moment after stop() returns)."""
    host, port = target[len("grpc://"):].rsplit(":", 1)
    deadline = time.monotonic() + within
    while True:
        with socket.socket() as s:
            if s.connect_ex((host, int(port))) != 0:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _error(capsys, magic, *args) -> str:
    """The one line a failing magic shows: it raises (the cell goes red, Run All stops)
    and IPython renders just `tfserver: error: ...`, printing nothing else."""
    with pytest.raises(TfServerError) as info:
        magic("tfserver", *args)
    out, err = capsys.readouterr()
    assert not err, err
    lines = info.value._render_traceback_()
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert lines[0].startswith("tfserver: error: ")
    return lines[0]


def test_help_lists_every_subcommand(ip, capsys):
    ip.run_line_magic("tfserver", "--help")
    out, err = capsys.readouterr()
    assert out.startswith("usage: %tfserver") and not err
    for name in SUBCOMMANDS:
        assert f"    {name} " in out
    for name in SUBCOMMANDS:
        ip.run_line_magic("tfserver", f"{name} --help")
        out, err = capsys.readouterr()
        assert out.startswith(f"usage: %tfserver {name}") and not err


def test_start_local_server(ip, capsys):
    ip.run_line_magic("tfserver", "start")
    out, err = capsys.readouterr()
    server = ip.user_ns["server"]
    assert isinstance(server, Server) and not err
    assert server.target.startswith("grpc://localhost:")
    assert out.strip() == (f"localhost:0 serving at {server.target} (in this kernel: server; "
                           f"tf.Session(server.target))")
    assert ip.user_ns["server"].server_def.job_name == "localhost"
    assert _add_one(server.target) == 42.0

    # the same task again: refused, first one intact
    line = _error(capsys, ip.run_line_magic, "start")
    assert "localhost:0 already runs" in line and server.target in line
    assert ip.user_ns["server"] is server

    ip.run_line_magic("tfserver", "stop localhost:0")
    assert "stopped localhost:0" in capsys.readouterr().out
    assert _refused(server.target)
    ip.run_line_magic("tfserver", "start")
    assert ip.user_ns["server"] is not server
    assert _add_one(ip.user_ns["server"].target) == 42.0


def test_start_binds_the_name_asked(ip, capsys):
    ip.run_line_magic("tfserver", "start --name ps_server")
    out, err = capsys.readouterr()
    server = ip.user_ns["ps_server"]
    assert "server" not in ip.user_ns and "(in this kernel: ps_server;" in out
    assert _add_one(server.target) == 42.0
    ip.run_line_magic("tfserver", "stop ps_server")  # the variable names it
    assert "stopped localhost:0" in capsys.readouterr().out
    assert "bad name 'class'" in _error(capsys, ip.run_line_magic, "start --name class")
    assert "class" not in ip.user_ns and "no clusters" in ip.magics_manager.registry[
        "TfServerMagics"].registry.table()


@pytest.mark.parametrize("form", ["json", "file", "variable"])
def test_start_task_of_a_cluster(ip, capsys, tmp_path, form):
    ports = free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    value = {"json": json.dumps(cluster), "file": str(tmp_path / "c.json"), "variable": "spec"}
    (tmp_path / "c.json").write_text(json.dumps(cluster))
    ip.user_ns["spec"] = tf.train.ClusterSpec(cluster)
    ip.run_line_magic("tfserver", f"start --job worker --task 1 --cluster {value[form]}")
    out, err = capsys.readouterr()
    server = ip.user_ns["server"]
    assert not err and server.target == f"grpc://localhost:{ports[1]}" and server.target in out
    assert (server.server_def.job_name, server.server_def.task_index) == ("worker", 1)
    assert _add_one(server.target) == 42.0

    assert "worker:1 already runs in this kernel" in _error(
        capsys, ip.run_line_magic, f"start --job worker --task 1 --cluster {value[form]}")


def test_start_errors_are_one_line(ip, capsys):
    ports = free_ports(1)
    cluster = json.dumps({"worker": [f"127.0.0.1:{ports[0]}"]})
    cases = [
        (f"start --job chief --cluster {cluster}", "'chief'"),
        (f"start --job worker --task 3 --cluster {cluster}", "3"),
        ("start --job worker --task 0", "--job and --task need --cluster"),
        ("start --cluster nowhere", "'nowhere' is neither a variable"),
        ('start --cluster {"worker": [}', "malformed cluster JSON"),
        ("start --config '{\"bogus\": 1}'", "malformed ConfigProto"),
        ("frobnicate", "invalid choice: 'frobnicate'"),
        ("logs", "required"),
        ("stop", "give NAME or --all"),
        ("stop nothing", "no cluster or server named 'nothing'"),
        ("logs nothing worker:0", "no cluster or server named 'nothing'"),
    ]
    for line, words in cases:
        assert words in _error(capsys, ip.run_line_magic, line), line
    assert "server" not in ip.user_ns


def test_port_in_use_is_one_line(ip, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = _error(capsys, ip.run_line_magic, "start --cluster " +
                      json.dumps({"worker": [f"127.0.0.1:{port}"]}))
    assert str(port) in line
    ip.run_line_magic("tfserver", "list")
    assert "no clusters or servers" in capsys.readouterr().out


def test_cluster_is_a_cell_magic(ip, capsys):
    assert "needs a cell body" in _error(capsys, ip.run_line_magic, "cluster demo")
    assert "only `cluster` takes a cell body" in _error(capsys, ip.run_cell_magic, "list",
                                                        "ps: 1")
    assert "bad name '2demo'" in _error(capsys, ip.run_cell_magic, "cluster 2demo", "ps: 1")
    assert "line 1: 'ps 1': expected 'job: count' or 'job: [addresses]'" in _error(
        capsys, ip.run_cell_magic, "cluster demo", "ps 1\nworker: 2")
    for line, body, words in [
            ("cluster demo --user bob", "worker: 1", "need --ssh"),
            ("cluster demo --ssh", "worker: 1", "--ssh needs hosts"),
            ("cluster demo --ssh h1,h2", "worker: [h1:2222]", "give --ssh without hosts"),
            ("cluster demo --timeout 0", "worker: 1", "--timeout: must be > 0")]:
        assert words in _error(capsys, ip.run_cell_magic, line, body), line
    assert "demo" not in ip.user_ns


def test_list_status_and_stop_all(ip, capsys):
    ip.run_line_magic("tfserver", "start")
    ports = free_ports(1)
    ip.run_line_magic("tfserver", "start --cluster " +
                      json.dumps({"ps": [f"127.0.0.1:{ports[0]}"]}))
    servers = [entry.obj for entry in ip.magics_manager.registry["TfServerMagics"]
               .registry.entries()]
    capsys.readouterr()
    ip.run_line_magic("tfserver", "list")
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["NAME", "KIND", "TASKS", "TARGET"]
    assert "localhost:0" in out and "ps:0" in out and servers[1].target in out
    ip.run_line_magic("tfserver", "status server")  # a variable names its server too
    assert f"ps:0: serving at {servers[1].target}" in capsys.readouterr().out
    ip.run_line_magic("tfserver", "stop --all")
    assert capsys.readouterr().out.strip() == "stopped ps:0, localhost:0"
    assert all(_refused(s.target) for s in servers)


def test_unload_stops_everything(ip, capsys):
    ip.run_line_magic("tfserver", "start")
    target = ip.user_ns["server"].target
    ip.run_line_magic("unload_ext", "nbcluster.jupyter")
    assert _refused(target)
    assert "tfserver" not in ip.magics_manager.magics["line"]
    ip.run_line_magic("load_ext", "nbcluster.jupyter")  # and loads again, empty
    ip.run_line_magic("tfserver", "list")
    assert "no clusters or servers" in capsys.readouterr().out
    np.testing.assert_equal(_add_one(""), 42.0)


def test_unexpected_errors_propagate(ip, monkeypatch):
    import nbcluster.jupyter.magics as magics

    class Broken:
        @staticmethod
        def local(**kwargs):
            raise KeyError("a bug, not bad input")

    monkeypatch.setattr(magics, "Cluster", Broken)
    with pytest.raises(KeyError, match="a bug"):
        ip.run_cell_magic("tfserver", "cluster demo", "worker: 1")
    assert "demo" not in ip.user_ns


def test_load_ext_nbcluster_is_the_same_extension(_shell, capsys):
    _shell.run_line_magic("load_ext", "nbcluster")
    try:
        _shell.run_line_magic("load_ext", "nbcluster.jupyter")  # both: still one set of magics
        magics = _shell.magics_manager.registry["TfServerMagics"]
        _shell.run_line_magic("tfserver", "start")
        assert len(magics.registry) == 1
        target = _shell.user_ns["server"].target
        assert _add_one(target) == 42.0
    finally:
        _shell.run_line_magic("unload_ext", "nbcluster")
        if "nbcluster.jupyter" in _shell.extension_manager.loaded:
            _shell.run_line_magic("unload_ext", "nbcluster.jupyter")
        _shell.user_ns.pop("server", None)
    assert _refused(target)
    assert "tfserver" not in _shell.magics_manager.magics["line"]
    assert "tfserver" not in _shell.magics_manager.magics["cell"]
