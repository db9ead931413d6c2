"""rpc/grpc_transport/listen_addresses.py: a task named "localhost" listens on both
loopbacks at one port, or fails naming the one another process holds; never on one
alone, where its grpc://localhost:PORT would reach that other process."""
from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.launch import free_ports
from nbcluster.rpc.grpc_transport import listen_addresses

pytestmark = pytest.mark.timeout(60)


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not _ipv6_loopback(),
                                reason="this host has no IPv6 loopback (::1) to bind")


def _listening(family: int, host: str, port: int) -> socket.socket:
    held = socket.socket(family)
    held.bind((host, port))
    held.listen()
    return held


def _runs_through(target: str) -> float:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with tf.Session(target) as session:
            return float(session.run(tf.reduce_sum(x * 2), {x: np.ones(2, np.float32)}))


@needs_ipv6
def test_a_localhost_task_on_port_0_serves_on_both_loopbacks_at_one_port():
    server = tf.distribute.Server(tf.train.ClusterSpec({"worker": ["localhost:0"]}),
                                  job_name="worker", task_index=0)
    try:
        port = int(server.target.rsplit(":", 1)[1])
        assert _runs_through(f"grpc://127.0.0.1:{port}") == 4.0
        assert _runs_through(f"grpc://[::1]:{port}") == 4.0
    finally:
        server.stop()


@needs_ipv6
def test_port_0_takes_another_port_where_the_other_loopback_at_it_is_held():
    held, tries = [], []

    def add_port(server, address: str) -> int:
        try:
            bound = server.add_insecure_port(address)
        except RuntimeError:  # grpcio's "failed to bind"
            bound = 0
        tries.append((address, bound))
        if len(tries) == 1:  # another process takes ::1 at the port 127.0.0.1 just got
            held.append(_listening(socket.AF_INET6, "::1", bound))
        return bound

    try:
        server, port, why = listen_addresses.bind_every_address(
            lambda: grpc.server(ThreadPoolExecutor(1)), "localhost", 0, add_port)
        first = tries[0][1]
        assert why == "" and port and port != first
        assert tries[0][0] == "127.0.0.1:0" and tries[1] == (f"[::1]:{first}", 0)
        assert tries[-2:] == [("127.0.0.1:0", port), (f"[::1]:{port}", port)]
        # the server given up on let its port go
        with socket.socket() as again:
            again.bind(("127.0.0.1", first))
        server.start()
        server.stop(None).wait()
    finally:
        for s in held:
            s.close()


@needs_ipv6
def test_a_given_port_another_process_holds_on_one_loopback_fails_naming_it():
    (port,) = free_ports(1)
    held = _listening(socket.AF_INET, "127.0.0.1", port)
    try:
        with pytest.raises(errors.UnknownError) as info:
            tf.distribute.Server(tf.train.ClusterSpec({"worker": [f"localhost:{port}"]}),
                                 job_name="worker", task_index=0)
        assert f"failed to bind localhost:{port}" in info.value.message
        assert f"127.0.0.1:{port} is in use" in info.value.message
    finally:
        held.close()
    with socket.socket(socket.AF_INET6) as again:  # nothing was left bound on ::1
        again.bind(("::1", port))


def test_a_literal_address_is_bound_as_given():
    assert listen_addresses.host_addresses("127.0.0.1") == ["127.0.0.1"]
    assert listen_addresses.host_addresses("::1") == ["::1"]
    assert listen_addresses.host_addresses("localhost") == ["127.0.0.1", "::1"]
