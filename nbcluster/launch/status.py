"""GetStatus polling: is a task up, and its pid, host, devices and counters as a TaskStatus.

Readiness is a GetStatus that answers, never a sleep. These channels are the
launcher's own, with a short reconnect backoff: gRPC's default backoff (1 s,
growing to 2 min) would make a task that starts a moment after the first poll
look slow to come up.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import grpc

from nbcluster.proto import worker_pb2
from nbcluster.rpc.worker_service import SERVICE

_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 50), ("grpc.min_reconnect_backoff_ms", 50),
            ("grpc.max_reconnect_backoff_ms", 250)]
STATES = ("up", "down", "starting", "failed", "stopped")


@dataclass(frozen=True)
class TaskStatus:
    """One task as its GetStatus answered (or did not)."""
    job: str
    index: int
    state: str  # "up" | "down" | "starting" | "failed" | "stopped"
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


class StatusClient:
    """GetStatus calls to any number of addresses; `close()` frees the channels."""

    def __init__(self) -> None:
        self._channels: dict = {}
        self._lock = threading.Lock()

    def _stub(self, address: str):
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = self._channels[address] = grpc.insecure_channel(address, _OPTIONS)
        return channel.unary_unary(f"/{SERVICE}/GetStatus",
                                   request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=worker_pb2.GetStatusResponse.FromString)

    def get(self, address: str, timeout: float, wait: bool = False):
        """The GetStatusResponse of the task at `address`.

        Args:
          timeout: seconds the call may take.
          wait: wait (up to `timeout`) for the task to accept connections,
            instead of failing at once when it does not.
        Raises:
          grpc.RpcError: no answer.
        """
        return self._stub(address)(worker_pb2.GetStatusRequest(), timeout=timeout,
                                   wait_for_ready=wait)

    def get_many(self, addresses: dict, timeout: float) -> dict:
        """{key: GetStatusResponse or None (no answer)} for {key: address}, concurrently."""
        def one(address):
            try:
                return self.get(address, timeout)
            except grpc.RpcError:
                return None
        if not addresses:
            return {}
        with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
            futures = {key: pool.submit(one, address) for key, address in addresses.items()}
        return {key: future.result() for key, future in futures.items()}

    def forget(self, address: str) -> None:
        with self._lock:
            channel = self._channels.pop(address, None)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
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
    return TaskStatus(
        job, index, state, address, target, response.pid or pid, response.host or host,
        tuple(d.name for d in response.device_attributes),
        max(0.0, time.time() - start) if start else None, response.steps_run,
        response.bytes_sent, response.bytes_received, response.active_sessions,
        response.last_error)
