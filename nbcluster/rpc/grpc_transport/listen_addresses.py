"""Where a task's gRPC server listens: every address its host name stands for, on one port.

Why: gRPC binds a name such as "localhost" on each loopback (127.0.0.1 and
::1) and succeeds where any one of them binds. With port 0 it takes a free
port on one of them, and where the other at that port belongs to another
process it serves on the one alone: the task's `grpc://localhost:PORT` then
reaches the other process from every client that tries that address first.
Here each address is bound explicitly: port 0 tries fresh ports until every
address binds, a given port fails naming the address another process holds.
An address this host cannot bind at all (IPv6 turned off) is left out.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import Callable, Optional

from nbcluster.framework.cluster_spec import join_address

_LOOPBACKS = ("127.0.0.1", "::1")  # what gRPC and its clients take "localhost" for
_TRIES = 32  # fresh ports for port 0 before giving up


def host_addresses(host: str) -> list:
    """The addresses `host` stands for: one for a literal address, the loopbacks for
    "localhost", else what the resolver gives (in its order, each once)."""
    if host == "localhost":
        return list(_LOOPBACKS)
    try:
        ipaddress.ip_address(host)
        return [host]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return [host]  # gRPC says what is wrong with it
    out = []
    for *_, sockaddr in found:
        if sockaddr[0] not in out:
            out.append(sockaddr[0])
    return out or [host]


def _bindable(address: str) -> bool:
    """Whether this host can listen on `address` at all (some free port of it)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False


def _add(add_port: Callable, server, address: str) -> int:
    try:
        return add_port(server, address)
    except RuntimeError:  # grpcio raises where older releases returned 0
        return 0


def _discard(server) -> None:
    # An unstarted gRPC server keeps its ports bound until it has run and stopped.
    server.start()
    server.stop(None).wait()


def bind_every_address(new_server: Callable, host: str, port: int,
                       add_port: Callable) -> tuple:
    """(server, port, "") with `new_server()` listening on every address of `host` at
    one port (`port`, or a free one for 0); (None, 0, why) where that cannot be.

    `add_port(server, "host:port")` binds one address and returns its port (0: failed).
    """
    addresses, name = host_addresses(host), host  # one address: the name, as gRPC binds it
    if len(addresses) > 1:
        addresses = [a for a in addresses if _bindable(a)] or addresses[:1]
        name = addresses[0]
    if len(addresses) == 1:
        server = new_server()
        bound = _add(add_port, server, join_address(name, port))
        if bound:
            return server, bound, ""
        return None, 0, "the port is in use or the address is not local"
    taken: Optional[str] = None
    for _ in range(_TRIES if port == 0 else 1):
        server = new_server()
        bound = _add(add_port, server, join_address(addresses[0], port))
        if not bound:
            return None, 0, f"{join_address(addresses[0], port)} is in use"
        taken = next((join_address(a, bound) for a in addresses[1:]
                      if _add(add_port, server, join_address(a, bound)) != bound), None)
        if taken is None:
            return server, bound, ""
        _discard(server)
    if port:
        return None, 0, f"{taken} is in use ({host} stands for it too)"
    return None, 0, f"no port in {_TRIES} tries was free on every address of {host}"
