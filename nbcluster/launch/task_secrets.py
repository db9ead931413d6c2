"""What a launched task is handed so that it can check its callers and be checked:
the cluster's token and, with TLS, its own certificate under the cluster's CA.

Rules: nothing secret goes on a command line. A task the launcher starts on
this host gets its certificate and key as 0600 files in a 0700 folder of
the cluster's (private) log folder, named by NBCLUSTER_TLS_DIR; a task the
launcher reaches only through its environment or stdin (SSH, Slurm, a
Dask worker, a Ray actor) gets them as one NBCLUSTER_TLS_MATERIAL value
beside its NBCLUSTER_TOKEN, which SSH sends through ssh's stdin and the
Dask and Ray engines turn into 0600 files on the task's host. This
process then sends the token to the task's address and trusts the CA
there (rpc/grpc_transport/tokens.py and tls_material.py).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Optional

from nbcluster.rpc.grpc_transport import tls_material, tokens


def wants_tls(tls: Optional[bool], hosts) -> bool:
    """`tls` itself, or for None (the default): whether any task is off loopback."""
    if tls is not None:
        return bool(tls)
    return any(not tokens.is_loopback(host) for host in hosts if host)


def new_ca(name: str):
    """A fresh `certificates.ClusterCA` (imported here: `cryptography` loads only for TLS)."""
    from nbcluster.launch.certificates import ClusterCA
    return ClusterCA(name)


def task_env(task, token: Optional[str], ca, folder: Optional[str]) -> dict:
    """The environment entries that hand `task` its token and certificate; registers
    both for its address in this process.

    Args:
      task: a startup.Task at its final address.
      ca: the cluster's ClusterCA, or None (no TLS).
      folder: where to write its TLS files (on this host), or None to hand
        them over as NBCLUSTER_TLS_MATERIAL.
    """
    env = {}
    if token:
        env[tokens.ENV] = token
        tokens.register(task.address, token)
    if ca is not None:
        material = ca.issue(task.host)
        tls_material.register_ca(task.address, ca.cert_pem)
        if folder is not None:
            env[tls_material.DIR_ENV] = tls_material.write_dir(
                os.path.join(folder, "tls", f"{task.job}-{task.index}"), material)
        else:
            env[tls_material.MATERIAL_ENV] = material.encoded()
    return env


def forget(tasks, ca) -> None:
    """Stops trusting `ca` at the tasks' addresses (a later server there may be plaintext)."""
    if ca is not None:
        for task in tasks:
            if task.address:
                tls_material.forget_ca(task.address, ca.cert_pem)


def materialize(env: dict) -> tuple:
    """(env, folder): `env` with NBCLUSTER_TLS_MATERIAL turned into 0600 files in a new
    0700 folder (NBCLUSTER_TLS_DIR), for an engine's worker; folder None if none.
    The caller removes the folder (`discard`) when its task ends for good."""
    encoded = env.get(tls_material.MATERIAL_ENV)
    if not encoded:
        return env, None
    folder = tempfile.mkdtemp(prefix="nbcluster-tls-")
    tls_material.write_dir(folder, tls_material.ServerTls.decoded(encoded))
    env = {k: v for k, v in env.items() if k != tls_material.MATERIAL_ENV}
    env[tls_material.DIR_ENV] = folder
    return env, folder


def discard(folder: Optional[str]) -> None:
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
