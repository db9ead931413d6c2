"""Which tasks a session's own cluster may name: with auth on, only tasks that require the token.

A CreateSession's `cluster_def`, and the ServerDef of a CreateWorkerSession,
make this task dial the addresses they name. With a token on this task,
every task they name outside this task's own cluster must be one that
requires a token too, so the session stays among tasks an authenticated
caller could reach anyway, and the task never sends its token to, nor
runs steps with, a listener that asks for none. Each such address is
asked once, by a GetStatus that carries no token: it must be refused
UNAUTHENTICATED. A task that answers it, or a service that is no task, is
PermissionDeniedError naming the address; one that answers nothing within
PROBE_S is UnavailableError naming it. Addresses that passed are
remembered for the server's life. With no token on this task nothing is
checked (as in TF: whoever reaches it may run anything).
"""
from __future__ import annotations

import threading
from typing import Optional

import grpc

from nbcluster import errors
from nbcluster.rpc.grpc_transport import tokens

PROBE_S = 10.0  # a named task not up yet gets this long (wait_for_ready) to answer


class PeerCheck:
    """`check(spec, local_task)` for Master and Worker (their `check_cluster`).

    Args:
      token: this task's token (None: nothing is checked).
      own: the addresses of this task's own cluster (trusted: its launcher made them).
    """

    def __init__(self, token: Optional[str], own) -> None:
        self._token = token
        self._passed = {tokens.key(a) for a in own}
        self._lock = threading.Lock()

    def trust(self, address: str) -> None:
        """Adds `address` (this task's, once its port is known) to the trusted ones."""
        with self._lock:
            self._passed.add(tokens.key(address))

    def __call__(self, spec, local_task: tuple, what: str = "the session's cluster") -> None:
        if not self._token:
            return
        for job in spec.jobs:
            for index in spec.task_indices(job):
                if (job, index) == tuple(local_task):
                    continue
                address = spec.task_address(job, index)
                with self._lock:
                    if tokens.key(address) in self._passed:
                        continue
                self._probe(address, f"/job:{job}/task:{index}", what)
                with self._lock:
                    self._passed.add(tokens.key(address))

    def _probe(self, address: str, name: str, what: str) -> None:
        # a client's modules, loaded by the first probe, not by every server's start
        from nbcluster.proto import worker_pb2, worker_pb2_grpc
        from nbcluster.rpc.grpc_transport import channels, tls
        channel = tls.open_channel(address, channels.POLLING_OPTIONS)  # no token sent
        get_status = worker_pb2_grpc.WorkerServiceStub(channel).GetStatus
        try:
            get_status(worker_pb2.GetStatusRequest(), timeout=PROBE_S, wait_for_ready=True)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNAUTHENTICATED:
                return
            if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise errors.UnavailableError(
                    None, None, f"{what} names {name} at {address}, which did not answer "
                                f"within {PROBE_S:g}s (this task has a token, so it checks "
                                f"that every task it is asked to reach requires one): "
                                f"{e.details()}") from None
            raise self._refusal(address, name, what, f"it is no nbcluster task "
                                                     f"({e.code().name}: {e.details()})")
        finally:
            channel.close()
        raise self._refusal(address, name, what, "it answers without a token")

    @staticmethod
    def _refusal(address: str, name: str, what: str, why: str) -> errors.PermissionDeniedError:
        return errors.PermissionDeniedError(
            None, None, f"{what} names {name} at {address}, which this task may not reach: "
                        f"{why}. With auth on, a session may name only tasks that require "
                        f"a token (docs/security.md)")
