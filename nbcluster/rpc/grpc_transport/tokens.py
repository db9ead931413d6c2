"""Which secret token a task wants, and which one to send to an address.

Every RPC to a task that has a token carries it as call metadata
(`METADATA_KEY`); the task compares it in constant time
(`server_core.TokenCheck`) and answers UNAUTHENTICATED otherwise, changing
nothing. A launched cluster has its own token: the launcher makes it, hands
it to its tasks in their environment (never their argv) and registers it
here for their addresses, so `Session(target)`, `Cluster` and `%tfserver` in
this process send it with no user step. Another process of the same user on
the same host finds it in the cluster's record (a 0600 file in the 0700
`<Jupyter runtime dir>/nbcluster/`, launch/records.py): such a process could
read the tasks' environment anyway (docs/security.md). Anything else uses the
process's token: NBCLUSTER_TOKEN, else the file NBCLUSTER_TOKEN_FILE names.
No grpc import here: launch/ and server/ use it before gRPC loads.
"""
from __future__ import annotations

import ipaddress
import json
import os
import secrets
import stat
import threading
from typing import Optional

ENV = "NBCLUSTER_TOKEN"
FILE_ENV = "NBCLUSTER_TOKEN_FILE"
METADATA_KEY = "nbcluster-token"

_registered: dict = {}  # (host key, port) -> token
_lock = threading.Lock()
_recorded: dict = {}  # record field -> (the records folder's mtime when read, {key: value})


def new_token() -> str:
    """A fresh 256-bit secret, URL-safe text."""
    return secrets.token_urlsafe(32)


def read_token_file(path: str) -> str:
    """The token in file `path` (surrounding whitespace dropped).

    Raises:
      ValueError: the file is empty, or others than its owner may read it.
      OSError: it cannot be read.
    """
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise ValueError(f"token file {path} is readable by others (mode {mode:o}); "
                         f"chmod 600 it")
    with open(path, encoding="utf-8") as f:
        token = f.read().strip()
    if not token:
        raise ValueError(f"token file {path} is empty")
    return token


def write_token_file(path: str, token: str) -> None:
    """Writes `token` to a new file `path`, 0600 from the moment it exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")


def from_environment(environ=None) -> Optional[str]:
    """NBCLUSTER_TOKEN, else the contents of NBCLUSTER_TOKEN_FILE, else None."""
    environ = os.environ if environ is None else environ
    token = environ.get(ENV)
    if token:
        return token
    path = environ.get(FILE_ENV)
    return read_token_file(path) if path else None


def is_loopback(host: str) -> bool:
    """Whether `host` ("localhost", "127.0.0.1", "::1", "[::1]") is this host's loopback."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key(address: str) -> tuple:
    """The registry key of "host:port": every loopback spelling of a port is one key."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    return ("loopback" if is_loopback(host) else host.lower(), port)


def register(address: str, token: Optional[str]) -> None:
    """Sends `token` to `address` ("host:port") from now on (None: forget it)."""
    with _lock:
        if token:
            _registered[key(address)] = token
        else:
            _registered.pop(key(address), None)


def for_address(address: str) -> Optional[str]:
    """The token to send to `address`: the one registered for it, else the process's."""
    found = key(address)
    with _lock:
        token = _registered.get(found)
    if token is not None:
        return token
    token = _recorded_tokens().get(found)
    if token is not None:
        return token
    try:
        return from_environment()
    except (OSError, ValueError):
        return None  # the call then fails UNAUTHENTICATED, which names the way out


def _recorded_tokens() -> dict:
    return recorded("token")


def recorded(field: str) -> dict:
    """{address key: record[field]} from the records of this user's live clusters
    on this host (non-empty strings only); read again only when the records
    folder changed. `tls_material` reads each cluster's CA the same way."""
    try:
        from jupyter_core.paths import jupyter_runtime_dir
        folder = os.path.join(jupyter_runtime_dir(), "nbcluster")
        mtime = os.stat(folder).st_mtime_ns
    except (ImportError, OSError):
        return {}
    with _lock:
        cached = _recorded.get(field)
        if cached is not None and cached[0] == mtime:
            return cached[1]
    found: dict = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                record = json.load(f)
            os.kill(int(record["owner_pid"]), 0)  # its owner is alive: not a stale port
        except (OSError, ValueError, KeyError, TypeError):
            continue
        value = record.get(field)
        for task in record.get("tasks", []) if isinstance(value, str) and value else ():
            if isinstance(task, dict) and isinstance(task.get("address"), str):
                found[key(task["address"])] = value
    with _lock:
        _recorded[field] = (mtime, found)
    return found
