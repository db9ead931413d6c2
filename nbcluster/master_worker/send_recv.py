"""_Send/_Recv: the ops a partitioner puts on every edge that crosses devices.

A client-terminated pair is a feed (`_Recv` reads the step's feeds) or a
fetch (`_Send` writes the step's fetches); the others go through the step's
rendezvous. The executor never knows about the network.
"""
from __future__ import annotations

import numpy as np

from nbcluster import errors
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import unknown_shape
from nbcluster.master_worker.rendezvous import key_of, task_of
from nbcluster.runtime.dead_tensor import DEAD
from nbcluster.runtime.kernel_table import register_kernel


@register_op("_Send")
def _send_shape(op):
    return []


@register_op("_Recv", blocking=True)
def _recv_shape(op):
    return [(op.get_attr("tensor_type"), unknown_shape())]


def _key(node, frame_iter: str = "0:0", suffix: str = "") -> str:
    return key_of(node.attrs, frame_iter, suffix)


@register_kernel("_Send", "CPU", "GPU")
def _send(node, device):
    to_host = device.to_numpy
    if node.attrs.get("client_terminated"):
        name = node.attrs["tensor_name"]

        def fetch(ctx, value):
            ctx.fetches[name] = to_host(value)
            return ()
        return fetch
    if node.attrs.get("_cf"):
        return _frame_send(node, to_host)
    key = _key(node)

    def send(ctx, value):
        ctx.rendezvous.send(key, to_host(value))
        return ()
    return send


@register_kernel("_Recv", "CPU", "GPU")
def _recv(node, device):
    to_device = device.from_numpy
    if node.attrs.get("client_terminated"):
        name = node.attrs["tensor_name"]

        def feed(ctx):
            try:
                return (to_device(ctx.feeds[name]),)
            except KeyError:
                raise errors.InvalidArgumentError(
                    None, None, f"No value was fed for tensor '{name}'") from None
        return feed
    if node.attrs.get("_cf"):
        return _frame_recv(node, to_device)
    key = _key(node)

    def recv(ctx):
        return (to_device(ctx.rendezvous.recv(key, ctx)),)
    recv.rendezvous_key = key  # the executor waits for tensors that land by themselves
    return recv


# A control-flow pair (attr `_cf`, from the partitioner) keys each tensor with
# its frame and iteration, and sends first whether it is live ("<name>/live",
# a bool), then the tensor itself only if it is: a dead tensor crosses devices
# as deadness, with nothing on the wire that a TF peer would misread.
def _frame_send(node, to_host):
    remote = task_of(node.attrs["send_device"]) != task_of(node.attrs["recv_device"])

    def send(ctx, value):
        frame_iter = getattr(ctx, "frame_iter", "0:0")
        live = value is not DEAD
        ctx.rendezvous.send(_key(node, frame_iter, "/live"), np.array(live))
        if live:
            ctx.rendezvous.send(_key(node, frame_iter), to_host(value))
        if remote:
            state = ctx.step_state
            state["remote_sent"] = state.get("remote_sent", 0) + 1 + live
        return ()
    return send


def _frame_recv(node, to_device):
    def recv(ctx):
        frame_iter = getattr(ctx, "frame_iter", "0:0")
        if not bool(ctx.rendezvous.recv(_key(node, frame_iter, "/live"), ctx)):
            return (DEAD,)
        return (to_device(ctx.rendezvous.recv(_key(node, frame_iter), ctx)),)
    return recv
