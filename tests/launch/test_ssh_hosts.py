"""A host that ssh could read as an option never reaches ssh; every ssh argv
ends its options with "--" before the host. A stand-in `ssh` on PATH records
what it is given (no sshd needed)."""
from __future__ import annotations

import json
import os
import stat

import pytest

from nbcluster.launch import Cluster, LaunchError
from nbcluster.launch.ssh import SSHLauncher, check_host

pytestmark = pytest.mark.timeout(60)

EVIL = "-oProxyCommand=touch {marker}"


@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    """The argv log of an `ssh` that records its arguments and fails as an unknown host."""
    log = tmp_path / "ssh-argv.jsonl"
    script = tmp_path / "bin" / "ssh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n"
                      f"python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \"$@\" "
                      f">> {log}\n"
                      "echo 'ssh: Could not resolve hostname' >&2\nexit 255\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return log


def _calls(log) -> list:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_the_host_comes_after_a_double_dash(fake_ssh):
    with pytest.raises(LaunchError, match="node-1"):
        Cluster.ssh(["node-1"], ps=0, worker=1, timeout=10)
    (argv,) = _calls(fake_ssh)[:1]
    assert argv[argv.index("--") + 1] == "node-1"
    assert all(not a.startswith("node-1") for a in argv[:argv.index("--")])


@pytest.mark.parametrize("host", [EVIL, "-F/etc/passwd", "host name", "a\nb", "", "x\x00y"])
def test_a_host_that_is_not_a_host_name_is_refused_before_ssh_runs(fake_ssh, tmp_path, host):
    host = host.format(marker=tmp_path / "pwned")
    with pytest.raises(ValueError, match="host"):
        Cluster.ssh([host], ps=0, worker=1, timeout=10)
    with pytest.raises(ValueError):
        SSHLauncher().ssh_argv(host)
    assert _calls(fake_ssh) == []
    assert not (tmp_path / "pwned").exists()


def test_a_spec_naming_such_a_host_never_runs_ssh(fake_ssh, tmp_path):
    spec = {"worker": [EVIL.format(marker=tmp_path / "pwned") + ":2222"]}
    with pytest.raises((ValueError, LaunchError)):
        Cluster.from_spec(spec, "ssh", timeout=10)
    assert _calls(fake_ssh) == []
    assert not (tmp_path / "pwned").exists()


def test_a_user_that_is_an_option_is_refused():
    with pytest.raises(ValueError, match="user"):
        SSHLauncher(user="-oProxyCommand=id")
    assert check_host("node-1.example.org") == "node-1.example.org"
