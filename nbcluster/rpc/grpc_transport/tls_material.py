"""Which certificate a task serves with, and which CA a client trusts for an address.

A task serves TLS when it is given a certificate, its key and its cluster's
CA (`Server(tls=...)`, `--tls-dir` or `--tls-cert/--tls-key/--tls-ca`, else
NBCLUSTER_TLS_DIR in its environment: a folder of `cert.pem`, `key.pem` and
`ca.pem`; or NBCLUSTER_TLS_MATERIAL, the three as one line of base64, where
a launcher reaches the task only through its environment or stdin: SSH and
Slurm, as their token). A key file must be its owner's alone (0600). Clients do not
present certificates: the token authenticates the caller, TLS the task and
the wire (docs/security.md).

A client uses TLS to an address exactly when it knows a CA for it, and
then verifies the task's certificate against that CA and the host it
dialled: the CA a launcher registered for its tasks' addresses in its own
process, else the one in the cluster's record (another process of the
same user on this host), else the process's own (NBCLUSTER_TLS_CA, a CA
file, else `ca.pem` in NBCLUSTER_TLS_DIR: a task's peer channels).
No grpc import here: launch/ and server/ use it before gRPC loads.
"""
from __future__ import annotations

import base64
import os
import stat
import threading
from typing import NamedTuple, Optional

from nbcluster.rpc.grpc_transport import tokens

DIR_ENV = "NBCLUSTER_TLS_DIR"
CA_ENV = "NBCLUSTER_TLS_CA"
MATERIAL_ENV = "NBCLUSTER_TLS_MATERIAL"  # ServerTls.encoded(): SSH's stdin, srun's environment
RECORD_FIELD = "tls_ca"  # a cluster record's CA certificate (PEM text)
FILES = ("cert.pem", "key.pem", "ca.pem")

_registered: dict = {}  # tokens.key(address) -> CA PEM bytes
_lock = threading.Lock()


class ServerTls(NamedTuple):
    """A task's certificate chain, its private key and its cluster's CA, as PEM bytes.

    A NamedTuple, not a frozen dataclass: every server's start imports this
    module, and a dataclass compiles its methods when defined (2% of a warm
    process's start)."""
    cert: bytes
    key: bytes
    ca: bytes

    def encoded(self) -> str:
        """One line of text (base64 of the three PEMs) for a launcher's stdin or environment."""
        return " ".join(base64.b64encode(p).decode("ascii") for p in (self.cert, self.key, self.ca))

    @classmethod
    def decoded(cls, text: str) -> "ServerTls":
        parts = text.split()
        if len(parts) != 3:
            raise ValueError("TLS material: expected three base64 fields")
        return cls(*(base64.b64decode(p, validate=True) for p in parts))


def _read(path: str, secret: bool) -> bytes:
    if secret:
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if mode & 0o077:
            raise ValueError(f"TLS key file {path} is readable by others (mode {mode:o}); "
                             f"chmod 600 it")
    with open(path, "rb") as f:
        data = f.read()
    if b"-----BEGIN" not in data:
        raise ValueError(f"{path} holds no PEM data")
    return data


def load(cert: str, key: str, ca: str) -> ServerTls:
    """The TLS material in three PEM files.

    Raises:
      ValueError: a file holds no PEM, or the key file is readable by others.
      OSError: a file cannot be read.
    """
    return ServerTls(_read(cert, False), _read(key, True), _read(ca, False))


def load_dir(folder: str) -> ServerTls:
    """`load` of `cert.pem`, `key.pem` and `ca.pem` in `folder`."""
    return load(*(os.path.join(folder, name) for name in FILES))


def write_dir(folder: str, tls: ServerTls) -> str:
    """Writes `tls` as the files `load_dir` reads into `folder` (made 0700 if new), each
    0600 from the moment it exists; returns `folder`."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    for name, data in zip(FILES, (tls.cert, tls.key, tls.ca)):
        path = os.path.join(folder, name)
        if os.path.lexists(path):
            os.unlink(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return folder


def from_environment(environ=None) -> Optional[ServerTls]:
    """The material in NBCLUSTER_TLS_DIR, else in NBCLUSTER_TLS_MATERIAL, else None."""
    environ = os.environ if environ is None else environ
    folder = environ.get(DIR_ENV)
    if folder:
        return load_dir(folder)
    encoded = environ.get(MATERIAL_ENV)
    return ServerTls.decoded(encoded) if encoded else None


def register_ca(address: str, ca: Optional[bytes]) -> None:
    """Trusts `ca` (PEM) for `address` ("host:port") from now on; None: forget it."""
    with _lock:
        if ca:
            _registered[tokens.key(address)] = bytes(ca)
        else:
            _registered.pop(tokens.key(address), None)


def forget_ca(address: str, ca: bytes) -> None:
    """Forgets the CA of `address` if it is still `ca` (a stopped cluster's)."""
    with _lock:
        if _registered.get(tokens.key(address)) == ca:
            del _registered[tokens.key(address)]


def ca_for(address: str) -> Optional[bytes]:
    """The CA to verify `address` with (None: the address is dialled without TLS)."""
    with _lock:
        ca = _registered.get(tokens.key(address))
    if ca is not None:
        return ca
    recorded = tokens.recorded(RECORD_FIELD).get(tokens.key(address))
    if recorded is not None:
        return recorded.encode("ascii")
    return _process_ca()


def _process_ca() -> Optional[bytes]:
    if os.environ.get(MATERIAL_ENV) and not os.environ.get(CA_ENV):
        try:
            return ServerTls.decoded(os.environ[MATERIAL_ENV]).ca
        except ValueError:
            return None
    path = os.environ.get(CA_ENV) or (os.path.join(os.environ[DIR_ENV], "ca.pem")
                                      if os.environ.get(DIR_ENV) else None)
    if not path:
        return None
    try:
        return _read(path, False)
    except (OSError, ValueError):
        return None  # the call then fails UNAVAILABLE naming the address
