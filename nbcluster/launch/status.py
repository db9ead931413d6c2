"""GetStatus polling: is a task up, and its pid, host, devices and counters as a TaskStatus.

Readiness is a GetStatus that answers, never a sleep. The calls go through
`rpc.grpc_transport.worker_client` over channels of the launcher's own
(`rpc.channels.polling_channel`, which retry connecting every 50-250 ms), so
that a task starting a moment after the first poll is seen at once, and
closing them never disturbs a session's shared channel to the same task.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

from nbcluster import errors
from nbcluster.rpc.grpc_transport import channels
from nbcluster.rpc.grpc_transport.worker_client import GrpcWorkerClient

STATES = ("up", "down", "starting", "failed", "stopped", "pending")  # pending: no allocation yet


@dataclass(frozen=True)
class TaskStatus:
    """One task as its GetStatus answered (or did not)."""
    job: str
    index: int
    state: str  # one of STATES
    address: str
    target: str
    pid: Optional[int]
    host: str
    devices: tuple  # device names
    uptime_s: Optional[float]
    steps_run: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    active_sessions: int = 0
    last_error: str = ""
    device_memory: tuple = ()  # bytes per device, in `devices`' order (0: unknown)
    cpu_percent: Optional[float] = None  # the task process's, of one core (None: unknown)
    rss_bytes: int = 0  # the task process's resident memory (0: unknown)
    # per GPU device: (name, bytes in use, bytes reserved, device bytes used, device total)
    gpu_memory: tuple = ()


class StatusClient:
    """GetStatus calls to any number of addresses; `close()` frees the channels."""

    def __init__(self) -> None:
        self._clients: dict = {}  # address -> (its channel, a GrpcWorkerClient on it)
        self._lock = threading.Lock()
        self._closed = False

    def _client(self, address: str) -> GrpcWorkerClient:
        with self._lock:
            if self._closed:
                # A poller racing `close()` must not open a channel nobody closes.
                raise errors.CancelledError(None, None, f"GetStatus to {address}: the "
                                                        f"status client is closed")
            entry = self._clients.get(address)
            if entry is None:
                channel = channels.polling_channel(address)
                entry = self._clients[address] = (channel, GrpcWorkerClient(address, channel))
        return entry[1]

    def get(self, address: str, timeout: float, wait: bool = False):
        """The GetStatusResponse of the task at `address`.

        Args:
          timeout: seconds the call may take.
          wait: wait (up to `timeout`) for the task to accept connections,
            instead of failing at once when it does not.
        Raises:
          OpError: no answer (UnavailableError, DeadlineExceededError).
          CancelledError: this client was closed.
        """
        return self._client(address).get_status(timeout, wait_for_ready=wait)

    def get_many(self, addresses: dict, timeout: float) -> dict:
        """{key: GetStatusResponse or None (no answer)} for {key: address}, concurrently."""
        def one(address):
            try:
                return self.get(address, timeout)
            except errors.OpError:
                return None
        if not addresses:
            return {}
        with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
            futures = {key: pool.submit(one, address) for key, address in addresses.items()}
        return {key: future.result() for key, future in futures.items()}

    def forget(self, address: str) -> None:
        """Closes the channel to `address`: the next call connects afresh, with no backoff."""
        with self._lock:
            entry = self._clients.pop(address, None)
        if entry is not None:
            entry[0].close()

    def close(self) -> None:
        """Closes every channel; later calls raise CancelledError."""
        with self._lock:
            self._closed = True
            entries, self._clients = list(self._clients.values()), {}
        for channel, _ in entries:
            channel.close()


def task_status(job: str, index: int, address: str, response, state: str,
                pid: Optional[int] = None, host: str = "") -> TaskStatus:
    """A TaskStatus from a GetStatusResponse (None: the task did not answer).

    `pid` and `host` are what the launcher knows, used when the task is silent.
    """
    target = f"grpc://{address}"
    if response is None:
        return TaskStatus(job, index, state, address, target, pid, host, (), None)
    start = response.incarnation_start_unix_micros / 1e6
    devices = response.device_attributes
    return TaskStatus(
        job, index, state, address, target, response.pid or pid, response.host or host,
        tuple(d.name for d in devices),
        max(0.0, time.time() - start) if start else None, response.steps_run,
        response.bytes_sent, response.bytes_received, response.active_sessions,
        response.last_error, tuple(int(d.memory_limit) for d in devices),
        response.cpu_percent, response.rss_bytes,
        tuple((g.device, g.bytes_in_use, g.bytes_reserved, g.device_bytes_used,
               g.device_bytes_total) for g in response.gpu_memory))


def task_of(address: str, timeout: float) -> tuple:
    """(job, index) of the server at `address` ("host:port"), from its own GetStatus.

    Raises:
      OpError: no answer within `timeout` (its class says why).
      ValueError: the server does not say its job.
    """
    try:
        status = GrpcWorkerClient(address).get_status(timeout)
    except errors.OpError as e:
        reason = e.message.split(" (target ")[0]  # the client appends the address again
        raise type(e)(None, None, f"no answer from grpc://{address} to ask its job and "
                                  f"task: {reason}") from None
    if not status.job_name:
        raise ValueError(f"the server at {address} did not say its job: give it as "
                         f"job:task=grpc://{address}")
    return status.job_name, status.task_index
