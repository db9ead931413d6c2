"""The same-host data plane's frames: requests for a step's tensors and the tensors themselves.

Rules: nothing is pickled; a frame that does not parse raises DataLossError
naming the bad value; array payloads go from the producer's buffer to the
socket and from the socket into the consumer's preallocated array.

Layout (little-endian; a connection carries one request at a time):

    request = "NBDP" u8 kind, i64 step_id, f64 timeout (< 0: none), u32 nkeys,
              nkeys * (u32 len, key utf-8)
              kind 1 (STREAM): the keys, batched as they are produced (RecvTensors)
              kind 2 (SINGLE): the one key (RecvTensor)
              kind 3 (RUN_GRAPH), 4 (RUN_STEP): nkeys is the length of the
              control bytes that follow; `calls` has the rest of those
              kind 5 (HELD): nkeys u64 inode numbers instead of keys, the
              shared-memory blocks (`shm_blocks`) the consumer still reads in
              place; it goes just before a request, and only when there are any
    reply   = batch ... until every key came, or one error frame
    batch   = "B" u32 count, u32 headers_len, count * header, then the payloads in order
    header  = u32 key_len, key utf-8, u8 form, u64 nbytes, then for form 0:
              u32 dtype (TF's DataType enum), u8 ndim, ndim * i64 dim
              form 0: the C-order little-endian array bytes; form 1: a
              TensorProto (string tensors); form 2: form 0's header, the bytes
              in a shared-memory block whose descriptor the frame carries
              (`shm_blocks`), none in the stream
    error   = "X" i32 code, u32 len, message utf-8, u32 len, node name utf-8
"""
from __future__ import annotations

import functools
import math
import os
import socket
import struct
import time
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.rpc.codec.tensor_decoding import aligned_empty, decode_tensor
from nbcluster.rpc.codec.tensor_encoding import encode_tensor, encoded_size
from nbcluster.rpc.codec.tensor_values import BY_ENUM, ENUM_BY_NP
from nbcluster.rpc.socket_transport import shm_blocks as shm

STREAM, SINGLE, RUN_GRAPH, RUN_STEP, HELD = 1, 2, 3, 4, 5
_KINDS = (STREAM, SINGLE, RUN_GRAPH, RUN_STEP, HELD)
_MAGIC = b"NBDP"
_REQUEST = struct.Struct("<4sBqdI")
_BATCH = struct.Struct("<cII")
_ENTRY = struct.Struct("<BQ")
_ARRAY = struct.Struct("<IB")
_U32 = struct.Struct("<I")
_ERROR = struct.Struct("<ciI")
_CREDS = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid
_MAX_KEYS = 1 << 20
_MAX_KEY = 64 << 10
_MAX_HEADERS = 64 << 20
_MAX_RANK = 64
MAX_CONTROL = 64 << 20  # a RunGraph or RunStep message without its tensors


class ConnectionClosed(EOFError):
    """The other end closed the connection (or it was shut down here)."""


def malformed(what: str) -> errors.DataLossError:
    """The DataLossError for a frame that does not parse; `what` names the bad value."""
    return errors.DataLossError(None, None, f"Malformed data-plane frame: {what}")


class FrameReader:
    """Buffered reads from a stream socket; large payloads bypass the buffer.

    `deadline` (time.monotonic() seconds, or None) bounds every read: past
    it a read raises socket.timeout.
    """
    # Small on purpose: a tensor's bytes that land in the buffer are copied
    # again; a 256 KiB buffer cost ~100 µs more per 0.8 MB stream than 16 KiB.

    def __init__(self, sock: socket.socket, size: int = 16 * 1024) -> None:
        self._sock = sock
        self._buf = bytearray(size)
        self._view = memoryview(self._buf)
        self._start = self._end = 0
        self.deadline: Optional[float] = None
        # Descriptors of shared-memory blocks come beside the bytes (SCM_RIGHTS).
        self.shared = shm.Received() if sock.family == socket.AF_UNIX else None

    def _recv_into(self, view: memoryview) -> int:
        if self.deadline is not None:
            self._sock.settimeout(max(1e-3, self.deadline - time.monotonic()))
        if self.shared is None:
            got = self._sock.recv_into(view)
        else:
            got, ancdata, flags, _ = self._sock.recvmsg_into([view], shm.FD_SPACE)
            if ancdata or flags:
                self.shared.add(ancdata, flags)
        if not got:
            raise ConnectionClosed()
        return got

    def buffered(self) -> bool:
        """Whether bytes of the next frame were read already."""
        return self._end > self._start

    def exact(self, n: int) -> memoryview:
        """The next `n` bytes (a view valid until the next read)."""
        if self._end - self._start < n:
            kept = bytes(self._view[self._start:self._end])
            if n > len(self._buf):
                self._buf = bytearray(n)
                self._view = memoryview(self._buf)
            self._view[:len(kept)] = kept  # compact: the frame starts at 0
            self._start, self._end = 0, len(kept)
            while self._end - self._start < n:
                self._end += self._recv_into(self._view[self._end:])
        out = self._view[self._start:self._start + n]
        self._start += n
        return out

    def into(self, target: memoryview) -> None:
        """Fills `target` (a writable byte view): buffered bytes first, then
        straight from the socket."""
        n = len(target)
        have = min(n, self._end - self._start)
        target[:have] = self._view[self._start:self._start + have]
        self._start += have
        while have < n:
            have += self._recv_into(target[have:])


def same_user(sock: socket.socket) -> bool:
    """Whether the process at the other end of the Unix socket `sock` runs as this user.

    An abstract socket name has no file permissions: any user of the host may
    connect to one, or bind a name first to pose as a task. Both ends check.
    """
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDS.size)
    return _CREDS.unpack(creds)[1] == os.geteuid()


# A step's weights or gradients (the MLP's: 0.8 MB) in one write: with the
# default 208 KiB a write of them blocked ~4 times, each block a wake-up of
# the writer and of the reader (~12 per step on a small host). The kernel
# caps it at net.core.wmem_max (4 MiB here, 208 KiB at least everywhere).
SEND_BUFFER = 4 * 1024 * 1024


def widen(sock: socket.socket) -> None:
    """Lets one write of a step's tensors go through `sock` without blocking."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    except OSError:
        pass  # the default buffer still works, in more writes


def send_all(sock: socket.socket, pieces: list, fds: list = ()) -> None:
    """Writes every piece (bytes or byte views), in order, in as few calls as the kernel
    allows; `fds` (shared-memory blocks of the frame) go with the first bytes."""
    pieces = [memoryview(p).cast("B") for p in pieces if len(p)]
    ancdata = shm.fd_message(list(fds))
    while pieces:
        sent = sock.sendmsg(pieces[:512], ancdata, socket.MSG_NOSIGNAL)
        ancdata = []
        while sent and sent >= pieces[0].nbytes:
            sent -= pieces.pop(0).nbytes
        if sent:
            pieces[0] = pieces[0][sent:]


def send_now(sock: socket.socket, pieces: list, fds: list = ()) -> tuple:
    """`send_all` without blocking: writes what the kernel takes now and
    returns (pieces, fds) left for a `send_all` (both empty when all went).

    On a socket with a timeout Python waits for room whatever MSG_DONTWAIT
    says (and then raises TimeoutError), so such a socket gets nothing here:
    the caller's thread must never wait on another's peer. The server's
    connections are blocking after their handshake, so this is the rule's guard.
    """
    pieces = [memoryview(p).cast("B") for p in pieces if len(p)]
    fds = list(fds)
    if sock.gettimeout() is not None:
        return pieces, fds
    while pieces:
        try:
            sent = sock.sendmsg(pieces[:512], shm.fd_message(fds),
                                socket.MSG_NOSIGNAL | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            break
        fds = []  # they went with the first bytes
        while sent and sent >= pieces[0].nbytes:
            sent -= pieces.pop(0).nbytes
        if sent:
            pieces[0] = pieces[0][sent:]
    return pieces, fds


def encode_request(kind: int, step_id: int, keys: list, timeout: Optional[float]) -> bytes:
    """A request frame for `keys` of step `step_id`."""
    parts = [encode_request_head(kind, step_id, len(keys), timeout)]
    for key in keys:
        raw = key.encode()
        parts += [_U32.pack(len(raw)), raw]
    return b"".join(parts)


def encode_request_head(kind: int, step_id: int, count: int, timeout: Optional[float]) -> bytes:
    """A request frame's fixed head; `count` keys (or control bytes) follow."""
    return _REQUEST.pack(_MAGIC, kind, step_id, -1.0 if timeout is None else timeout, count)


def encode_held(inodes: tuple) -> bytes:
    """The HELD frame naming the blocks `inodes`, or nothing when there are none."""
    if not inodes:
        return b""
    return encode_request_head(HELD, 0, len(inodes), None) + \
        struct.pack(f"<{len(inodes)}Q", *inodes)


def read_request(reader: FrameReader) -> tuple:
    """(kind, step_id, keys, timeout) from the next request frame; for
    RUN_GRAPH and RUN_STEP, `keys` is the control bytes (the caller reads the
    rest); for HELD, the blocks' inode numbers.

    Raises:
      ConnectionClosed: the peer closed the connection between requests.
      DataLossError: the frame is malformed (the connection cannot go on).
    """
    magic, kind, step_id, timeout, count = _REQUEST.unpack(reader.exact(_REQUEST.size))
    if magic != _MAGIC:
        raise malformed(f"request magic {bytes(magic)!r}, expected {_MAGIC!r}")
    if kind not in _KINDS:
        raise malformed(f"request kind {kind}, expected one of {_KINDS}")
    timeout = None if timeout < 0 or math.isnan(timeout) else timeout
    if kind in (RUN_GRAPH, RUN_STEP):
        if count > MAX_CONTROL:
            raise malformed(f"a request of kind {kind} with {count} control bytes "
                            f"(at most {MAX_CONTROL})")
        return kind, step_id, bytes(reader.exact(count)), timeout
    if kind == HELD:
        if not 0 < count <= shm.MAX_HELD:
            raise malformed(f"a HELD frame naming {count} blocks (1 to {shm.MAX_HELD})")
        return kind, step_id, struct.unpack(f"<{count}Q", reader.exact(8 * count)), timeout
    if count > _MAX_KEYS or (kind == SINGLE and count != 1):
        raise malformed(f"{count} keys in a request of kind {kind}")
    keys = []
    for _ in range(count):
        (length,) = _U32.unpack(reader.exact(4))
        if length > _MAX_KEY:
            raise malformed(f"a key of {length} bytes (at most {_MAX_KEY})")
        keys.append(_text(reader.exact(length), "key"))
    return kind, step_id, keys, timeout


def _text(view: memoryview, what: str) -> str:
    try:
        return bytes(view).decode()
    except UnicodeDecodeError:
        raise malformed(f"{what} {bytes(view[:64])!r} is not utf-8") from None


def encode_batch(pairs: list, shared: Optional["shm.BlockPool"] = None) -> list:
    """The pieces of a batch frame for [(key, value)]; the payloads are views
    of the arrays (send them before anything mutates the arrays). With
    `shared`, large arrays go into its blocks instead (send `shared.take_fds()`)."""
    headers, payloads = [], []
    for key, value in pairs:
        arr = np.asarray(value)
        named, enum, wire_dtype, spec = _tensor_head(key, arr.dtype, arr.shape)
        if enum is None:  # strings (and anything else TensorProto can say)
            pieces = encode_tensor(arr)
            headers += [named, _ENTRY.pack(1, encoded_size(pieces))]
            payloads += pieces
            continue
        arr = np.asarray(arr, dtype=wire_dtype, order="C")
        form = 2 if shared is not None and shared.share(arr) else 0
        headers += [named, _ENTRY.pack(form, arr.nbytes), spec]
        if arr.nbytes and form == 0:
            payloads.append(memoryview(arr.reshape(-1).view(np.uint8)))
    head = b"".join(headers)
    return [_BATCH.pack(b"B", len(pairs), len(head)) + head] + payloads


@functools.lru_cache(maxsize=1024)
def _tensor_head(key: str, dtype: np.dtype, shape: tuple) -> tuple:
    """(the key's header bytes, TF's DataType enum or None, the little-endian
    dtype, the dtype-and-shape header bytes): what a step's tensors repeat."""
    raw = key.encode()
    named = _U32.pack(len(raw)) + raw
    wire_dtype = dtype.newbyteorder("<")
    enum = ENUM_BY_NP.get(wire_dtype) if dtype.kind in "biufc" else None
    if enum is None:
        return named, None, None, b""
    return named, enum, wire_dtype, _ARRAY.pack(enum, len(shape)) + \
        struct.pack(f"<{len(shape)}q", *shape)


def encode_error(error: errors.OpError) -> bytes:
    """An error frame carrying `error`'s code, message and node name."""
    message, node = error.message.encode(), (error.node_name or "").encode()
    return _ERROR.pack(b"X", error.error_code, len(message)) + message + \
        _U32.pack(len(node)) + node


def read_reply(reader: FrameReader):
    """The next reply frame: [(key, ndarray)] for a batch, or (code, message,
    node name) for an error frame.

    Raises:
      ConnectionClosed, socket.timeout, OSError: from the socket.
      DataLossError: the frame is malformed.
    """
    tag = bytes(reader.exact(1))
    if tag == b"X":
        return read_error(reader)
    if tag != b"B":
        raise malformed(f"reply tag {tag!r}, expected b'B' or b'X'")
    count, size = struct.unpack("<II", reader.exact(8))
    if size > _MAX_HEADERS or count > size:
        raise malformed(f"a batch of {count} tensors with {size} bytes of headers")
    head = bytes(reader.exact(size))
    entries = (_parse_repeated if size <= _REPEATED_HEAD else _parse_headers)(head, count)
    return [(key, _read_value(reader, form, nbytes, spec)) for key, form, nbytes, spec in entries]


def read_error(reader: FrameReader) -> tuple:
    """(code, message, node name or None): the rest of an error frame after its b"X"."""
    code, length = struct.unpack("<iI", reader.exact(8))
    message = _text(reader.exact(length), "error message")
    node = _text(reader.exact(_U32.unpack(reader.exact(4))[0]), "node name")
    return code, message, node or None


# A step's batches repeat their headers byte for byte (the same keys, dtypes and
# shapes every step): parsing one took ~20 µs for 4 tensors, a lookup ~0.2.
_REPEATED_HEAD = 16 << 10  # larger headers are parsed each time (bounds the cache)


@functools.lru_cache(maxsize=256)
def _parse_repeated(head: bytes, count: int) -> tuple:
    return _parse_headers(head, count)  # a malformed head raises: nothing is kept


def _parse_headers(head: bytes, count: int) -> tuple:
    entries, at = [], 0
    try:
        for _ in range(count):
            (length,) = _U32.unpack_from(head, at)
            key = _text(memoryview(head)[at + 4:at + 4 + length], "key")
            at += 4 + length
            form, nbytes = _ENTRY.unpack_from(head, at)
            at += _ENTRY.size
            spec = None
            if form in (0, 2):
                enum, ndim = _ARRAY.unpack_from(head, at)
                if ndim > _MAX_RANK:
                    raise malformed(f"rank {ndim} for tensor {key!r}")
                shape = struct.unpack_from(f"<{ndim}q", head, at + _ARRAY.size)
                at += _ARRAY.size + 8 * ndim
                spec = (_numpy_dtype(enum, key), shape)
                _check_size(key, spec, nbytes)
            elif form != 1:
                raise malformed(f"tensor form {form} for {key!r}, expected 0, 1 or 2")
            entries.append((key, form, nbytes, spec))
    except struct.error:
        raise malformed(f"batch headers end early ({len(head)} bytes for {count} tensors)") \
            from None
    if at != len(head):
        raise malformed(f"{len(head) - at} stray bytes after {count} tensor headers")
    return tuple(entries)


def _numpy_dtype(enum: int, key: str) -> np.dtype:
    entry = BY_ENUM.get(enum)
    if entry is None or entry[3] is None:
        raise malformed(f"dtype enum {enum} for tensor {key!r}")
    return entry[3]


def _check_size(key: str, spec: tuple, nbytes: int) -> None:
    npd, shape = spec
    if any(d < 0 for d in shape) or math.prod(shape) * npd.itemsize != nbytes:
        raise malformed(f"tensor {key!r} of shape {list(shape)} and dtype {npd} "
                         f"announces {nbytes} bytes")


def _read_value(reader: FrameReader, form: int, nbytes: int, spec):
    if form == 1:
        buf = bytearray(nbytes)
        reader.into(memoryview(buf))
        return decode_tensor(buf)
    npd, shape = spec
    if form == 2:
        if reader.shared is None:
            raise malformed("a shared-memory tensor on a socket that carries no descriptors")
        return reader.shared.read(nbytes, npd, shape, aligned_empty)
    arr = aligned_empty(shape, npd)
    if nbytes:
        reader.into(memoryview(arr.reshape(-1).view(np.uint8)))
    return arr
