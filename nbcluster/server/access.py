"""Who may call a task: its token, and the rule that keeps it off open networks.

A server takes its token from `Server(token=...)` (`--token-file` on the
command line), else NBCLUSTER_TOKEN, else the file NBCLUSTER_TOKEN_FILE
names. A server bound to loopback may run without one (today's zero-setup
start; launched clusters get a token all the same); one bound beyond
loopback refuses to start without a token unless `insecure=True`
(`--insecure`), and then warns on stderr that anyone who can reach it can
run anything on it.
"""
from __future__ import annotations

import sys
from typing import Optional

from nbcluster import errors
from nbcluster.rpc.grpc_transport import tokens


def server_token(host: str, token: Optional[str], insecure: bool) -> Optional[str]:
    """The token a server bound to `host` requires, or None.

    Raises:
      InvalidArgumentError: `token` is not a non-empty string, the token file
        is unusable, or `host` is beyond loopback with no token and not `insecure`.
    """
    if token is not None and (not isinstance(token, str) or not token):
        raise errors.InvalidArgumentError(None, None, "token must be a non-empty string")
    if token is None:
        try:
            token = tokens.from_environment()
        except (OSError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"{tokens.FILE_ENV}: {e}") from None
    if token or tokens.is_loopback(host):
        return token or None
    if not insecure:
        raise errors.InvalidArgumentError(
            None, None, f"This server would listen on {host!r}, beyond loopback, with no "
                        f"token: anyone who reaches it could run any graph and read or "
                        f"write its files. Give it a token ({tokens.ENV}, "
                        f"{tokens.FILE_ENV}, --token-file or token=), or pass "
                        f"insecure=True / --insecure to run it open anyway")
    print(f"nbcluster.server: warning: serving on {host!r} with no token (insecure): "
          f"anyone who can reach this port can run any graph here", file=sys.stderr,
          flush=True)
    return None
