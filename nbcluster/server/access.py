"""Who may call a task, and who may trust it: its token, its TLS material, and the
rule that keeps an open task off the network.

A server takes its token from `Server(token=...)` (`--token-file` on the
command line), else NBCLUSTER_TOKEN, else the file NBCLUSTER_TOKEN_FILE
names; its TLS material from `Server(tls=...)` (`--tls-dir`, or
`--tls-cert/--tls-key/--tls-ca`), else NBCLUSTER_TLS_DIR. A server bound to
loopback may run with neither (today's zero-setup start; launched clusters
get a token all the same, and TLS when asked). One bound beyond loopback
refuses to start without both, unless `insecure=True` (`--insecure`), and
then warns on stderr what it lacks.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from nbcluster import errors
from nbcluster.rpc.grpc_transport import tls_material, tokens


def server_tls(tls) -> Optional[tls_material.ServerTls]:
    """The TLS material of `Server(tls=...)`: a ServerTls, a folder of cert.pem,
    key.pem and ca.pem, None (NBCLUSTER_TLS_DIR, else no TLS) or False (no TLS).

    Raises:
      InvalidArgumentError: the files are missing, malformed or the key is
        readable by others.
    """
    if tls is False:
        return None
    if isinstance(tls, tls_material.ServerTls):
        return tls
    try:
        if tls is None:
            return tls_material.from_environment()
        if isinstance(tls, (str, os.PathLike)):
            return tls_material.load_dir(os.fspath(tls))
    except (OSError, ValueError) as e:
        where = tls_material.DIR_ENV if tls is None else "tls"
        raise errors.InvalidArgumentError(None, None, f"{where}: {e}") from None
    raise errors.InvalidArgumentError(None, None, f"tls must be a folder, a ServerTls, None "
                                                  f"or False, not {type(tls).__name__}")


def server_token(host: str, token: Optional[str], insecure: bool,
                 tls: Optional[tls_material.ServerTls] = None) -> Optional[str]:
    """The token a server bound to `host` (serving `tls`, if any) requires, or None.

    Raises:
      InvalidArgumentError: `token` is not a non-empty string, the token file
        is unusable, or `host` is beyond loopback without a token and TLS, and
        not `insecure`.
    """
    if token is not None and (not isinstance(token, str) or not token):
        raise errors.InvalidArgumentError(None, None, "token must be a non-empty string")
    if token is None:
        try:
            token = tokens.from_environment()
        except (OSError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"{tokens.FILE_ENV}: {e}") from None
    lacks = [what for what, have in (("token", token), ("TLS", tls)) if not have]
    if not lacks or tokens.is_loopback(host):
        return token or None
    if not insecure:
        raise errors.InvalidArgumentError(
            None, None, f"This server would listen on {host!r}, beyond loopback, with no "
                        f"{' and no '.join(lacks)}: anyone who reaches it could run any "
                        f"graph and read or write its files, or read its traffic. Give it "
                        f"a token ({tokens.ENV}, {tokens.FILE_ENV}, --token-file or token=) "
                        f"and TLS ({tls_material.DIR_ENV}, --tls-dir or tls=; launchers "
                        f"make both), or pass insecure=True / --insecure to run it so anyway")
    print(f"nbcluster.server: warning: serving on {host!r} with no "
          f"{' and no '.join(lacks)} (insecure): "
          + ("anyone who can reach this port can run any graph here" if not token else
             "the token and tensors cross the network in clear text"),
          file=sys.stderr, flush=True)
    return token or None
