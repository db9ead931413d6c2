"""The RunGraph / RunStep / RecvTensor(s) serving logic every transport calls.

Rule: a transport (gRPC's servicers, the local socket's server) only decodes a
request, calls one of these and encodes what it returns; waiting, aborts,
deadlines and byte counts are decided here and below (the `Worker`, the
`Master`), so a call means the same over any transport. A transport adds only
what its wire needs: noticing a caller that went away (`stopped`, `CallerWatch`).
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from nbcluster.proto import master_pb2, worker_pb2


def serve_run_graph(worker, req, sends: list, timeout) -> tuple:
    """RunGraph, as every transport serves it.

    Args:
      worker: the `Worker`.
      req: the RunGraphRequest (its tensors apart, in `sends`).
      sends: [(rendezvous key, ndarray)], the feeds.
      timeout: seconds left to the caller's deadline, or None.
    Returns:
      (RunGraphResponse without tensors, [(key, ndarray)] in `recv_key` order).
    Raises:
      OpError: the step failed.
    """
    worker.counters.received(sum(a.nbytes for _, a in sends if hasattr(a, "nbytes")))
    fetches = list(req.recv_key)
    result = worker.run_graph(req.session_handle, req.graph_handle, req.step_id,
                              dict(sends), fetches, timeout,
                              req.exec_opts.record_timeline,
                              req.exec_opts.record_partition_graphs)
    response = worker_pb2.RunGraphResponse()
    if result.step_stats is not None:
        response.step_stats.CopyFrom(result.step_stats)
    response.partition_graph.extend(result.partition_graphs)
    return response, [(f, result.fetches[f]) for f in fetches]


def serve_run_step(master, req, feeds: list, caller=None) -> tuple:
    """RunStep, as every transport serves it.

    Args:
      master: the `Master`.
      req: the RunStepRequest (its tensors apart, in `feeds`).
      feeds: [(name, ndarray)].
      caller: a `CallerWatch` the transport fires if the caller goes away.
    Returns:
      (RunStepResponse without tensors, [(fetch, ndarray)] in `req.fetch` order).
    Raises:
      OpError: the step failed (the master enforces the step's deadline).
    """
    options = req.options if req.HasField("options") else None
    fetches = list(req.fetch)
    values, metadata = master.run_step(req.session_handle, dict(feeds), fetches,
                                       list(req.target), options, caller)
    response = master_pb2.RunStepResponse()
    if metadata is not None:
        response.metadata.CopyFrom(metadata)
    return response, list(zip(fetches, values))


def serve_recv_tensor(worker, step_id: int, key: str, timeout: Optional[float],
                      stopped: Callable[[], bool]):
    """RecvTensor: the tensor `key` of step `step_id` once produced here.

    Args:
      stopped: whether the caller went away (the wait then ends).
    Raises:
      OpError: the step was aborted, the deadline passed, or the caller left.
    """
    return worker.recv_tensor(step_id, key, timeout, stopped=stopped)


def serve_recv_tensors(worker, step_id: int, keys: list, timeout: Optional[float],
                       stopped: Callable[[], bool], stream_limit: Optional[int] = None
                       ) -> Iterator[list]:
    """RecvTensors: batches of [(key, ndarray)] of step `step_id` as they are produced
    here; with `stream_limit`, (key, None) for a tensor of at least that many bytes
    (the caller fetches it with RecvTensor)."""
    return worker.recv_tensors(step_id, keys, timeout, stopped, stream_limit)


def serve_push_tensors(worker, step_id: int, keys: list, deliver: Callable[[list], object],
                       timeout: Optional[float], stopped: Callable[[], bool],
                       wakeup: Optional[Callable[[], None]] = None,
                       idle: Optional[Callable[[Optional[float]], bool]] = None) -> None:
    """RecvTensors for a transport whose replies any thread may write without
    blocking: `deliver(batch)` is called on the thread that produced it
    (`Worker.push_tensors`); returns once every key was delivered (with
    `wakeup` and `idle`: once the transport's `idle` saw its next request)."""
    worker.push_tensors(step_id, keys, deliver, timeout, stopped, wakeup, idle)
