"""gRPC channel and server options, one reused channel per target, and private polling channels."""
from __future__ import annotations

import threading
from typing import Optional

import grpc

from nbcluster import errors
from nbcluster.rpc.grpc_transport import tls, tls_material, tokens

MAX_MESSAGE = 2 ** 31 - 1
OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.http2.lookahead_bytes", 256 * 1024 * 1024),
]
# A task that hangs (stopped, deadlocked, its host frozen) keeps its TCP
# connections open, so a call to it without a deadline would wait forever.
# While calls are in flight a channel pings every KEEPALIVE_MS; a peer whose
# gRPC core does not answer within KEEPALIVE_TIMEOUT_MS fails those calls
# (UnavailableError), which the coordinator handles as a failed worker.
# Servers must accept pings that often with no data flowing (a long step).
KEEPALIVE_MS, KEEPALIVE_TIMEOUT_MS = 10_000, 10_000
SERVER_OPTIONS = OPTIONS + [
    ("grpc.so_reuseport", 0),
    ("grpc.http2.min_recv_ping_interval_without_data_ms", KEEPALIVE_MS // 2),
    ("grpc.http2.max_ping_strikes", 0),
]
# A unary-stream call (PullResponse) read in the calling thread: no hand-off
# to the channel's polling thread per frame. grpc.experimental's
# ChannelOptions.SingleThreadedUnaryStream by its value (a test compares):
# importing grpc.experimental was 2% of a warm server start, which needs
# only SERVER_OPTIONS from here.
SINGLE_THREADED_UNARY_STREAM = "SingleThreadedUnaryStream"
CHANNEL_OPTIONS = OPTIONS + [
    (SINGLE_THREADED_UNARY_STREAM, 1),
    ("grpc.keepalive_time_ms", KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.http2.ping_timeout_ms", KEEPALIVE_TIMEOUT_MS),  # else a ping waits 60 s anyway
    ("grpc.http2.max_pings_without_data", 0),  # a long call is pinged all along
]
# gRPC's reconnect backoff grows to two minutes by default: a task that was
# restarted would stay unreachable through its reused channel for that long.
# Not grpc.min_reconnect_backoff_ms: gRPC also takes it as the time a connection
# attempt may last (default 20 s), and at 100 ms a task that is hung or merely
# busy, accepting but slow to answer, was refused at once (UnavailableError)
# instead of getting the call's own deadline (DeadlineExceededError).
_BACKOFF = ("grpc.initial_reconnect_backoff_ms", "grpc.max_reconnect_backoff_ms")
CHANNEL_OPTIONS += list(zip(_BACKOFF, (100, 1000)))
# Polling a task that is starting: it binds a second or so after its process
# starts, when the shared channels' backoff has grown towards 1 s, so it would
# be noticed up to a second late. Measured (`Cluster.local(ps=1, worker=4)`,
# 2 busy cores, medians of 5 starts): ready in 0.82-1.09 s with these options,
# 1.02-1.67 s (one start 2.6 s) with CHANNEL_OPTIONS'.
POLLING_OPTIONS = [o for o in CHANNEL_OPTIONS if o[0] not in _BACKOFF] + \
    list(zip(_BACKOFF, (50, 250)))

_channels: dict[str, tuple] = {}  # address -> ((its token, its CA) or Nones, channel)
_lock = threading.Lock()


def _opened(address: str, options: list, token) -> grpc.Channel:
    opened = tls.open_channel(address, options)  # TLS where a CA is known for it
    if token is None:  # no interceptor, no cost, where there is no token
        return opened
    from nbcluster.rpc.grpc_transport.token_metadata import TokenSender
    return grpc.intercept_channel(opened, TokenSender(token))


def channel(address: str) -> grpc.Channel:
    """The shared channel to `address` (a new channel costs about 1 ms); its calls
    carry the token `tokens.for_address(address)` gives, if any, over TLS where
    `tls_material.ca_for(address)` gives a CA."""
    token = tokens.for_address(address)
    secrets = (token, tls_material.ca_for(address))
    with _lock:
        found = _channels.get(address)
        if found is None or found[0] != secrets:  # a new cluster at that address
            found = _channels[address] = (secrets, _opened(address, CHANNEL_OPTIONS, token))
        return found[1]


def forget(address: str) -> None:
    """Closes the shared channel to `address`; the next `channel(address)` opens a new one.

    For tests and benchmarks that stop a server they made: clients still
    holding the old channel fail (UnavailableError) from then on, so nbcluster
    itself never forgets a channel a session may hold; the capped backoff
    lets a reused channel reach a restarted task instead.
    """
    with _lock:
        found = _channels.pop(address, None)
    if found is not None:
        found[1].close()


# TensorFlow's server allows a ping only every 5 minutes with no data flowing
# and answers more with GOAWAY ("too many pings"), failing a long step: its
# channels send none (a hung TF task is found by the step's own deadline).
TENSORFLOW_OPTIONS = OPTIONS + list(zip(_BACKOFF, (100, 1000)))
_tensorflow_channels: dict[str, grpc.Channel] = {}


def tensorflow_channel(address: str) -> grpc.Channel:
    """The shared channel to the real TensorFlow task at `address` (no keepalive pings)."""
    with _lock:
        found = _tensorflow_channels.get(address)
        if found is None:
            found = _tensorflow_channels[address] = grpc.insecure_channel(
                address, options=TENSORFLOW_OPTIONS)
        return found


def polling_channel(address: str) -> grpc.Channel:
    """A new channel to `address`, not shared, that retries connecting every 50-250 ms.

    For asking a task that is starting whether it is up yet (launch/'s
    readiness polling); the caller owns it and closes it (`channel.close()`).
    """
    return _opened(address, POLLING_OPTIONS, tokens.for_address(address))


def closed_channel_error(error: ValueError, target: str) -> Optional[errors.OpError]:
    """The UnavailableError for a call on a channel `forget` closed, naming `target`.

    gRPC refuses such a call with a ValueError; a client would otherwise leak
    that instead of an OpError. Returns None for any other ValueError.
    """
    text = str(error)
    if "closed channel" not in text and "Channel closed" not in text:
        return None
    return errors.UnavailableError(None, None, f"{target} is unavailable to this client: its "
                                               f"channel was closed (rpc.channels.forget)")
