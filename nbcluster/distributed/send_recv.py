"""_Send/_Recv: the ops a partitioner puts on every edge that crosses devices.

A client-terminated pair is a feed (`_Recv` reads the step's feeds) or a
fetch (`_Send` writes the step's fetches); the others go through the step's
rendezvous. The executor never knows about the network.
"""
from __future__ import annotations

from nbcluster import errors
from nbcluster.distributed.rendezvous import make_key
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.tensor_shape import unknown_shape
from nbcluster.kernels.registry import register_kernel


@register_op("_Send")
def _send_shape(op):
    return []


@register_op("_Recv", blocking=True)
def _recv_shape(op):
    return [(op.get_attr("tensor_type"), unknown_shape())]


def _key(node) -> str:
    a = node.attrs
    return make_key(a["send_device"], int(a["send_device_incarnation"]), a["recv_device"],
                    a["tensor_name"])


@register_kernel("_Send", "CPU", "GPU")
def _send(node, device):
    to_host = device.to_numpy
    if node.attrs.get("client_terminated"):
        name = node.attrs["tensor_name"]

        def fetch(ctx, value):
            ctx.fetches[name] = to_host(value)
            return ()
        return fetch
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
    key = _key(node)

    def recv(ctx):
        return (to_device(ctx.rendezvous.recv(key, ctx)),)
    recv.rendezvous_key = key  # the executor waits for tensors that land by themselves
    return recv
