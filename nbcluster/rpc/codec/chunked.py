"""A message with large tensors as a stream of 1 MiB frames, reassembled in place.

Rule: no tensor is ever joined into one `bytes`. The sender slices the
arrays' own buffers into frames; the receiver allocates every array once
(64-byte aligned, writable) and copies each frame straight into it, so a
tensor of any size travels (4 GiB included; a gRPC message stops at 2 GiB)
with at most one frame in hand on either side. Pure functions of bytes: no
gRPC here (`streaming` puts frames on the wire).

A message with tensors in its whole form (`messages.encode`) is::

    [small fields][entry 1]...[entry n]       entry = (Named)TensorProto, whose
                                              tensor_content holds the array

Streamed, the same message is a sequence of gRPC messages, "frames"::

    frame 0     StreamHead, our own message in protobuf wire format:
                  0a <len> <message>           message = 1: the whole form with
                                               every tensor_content field left out
                  10 <varint>                  content_bytes = 2: the sum of the
                                               left-out contents' lengths
    frame 1..k  raw bytes, no header: the left-out contents, entry after entry in
                message order, cut every CHUNK_BYTES (a frame may span entries;
                only the last frame may be shorter)

Putting each content back as field 4 of its TensorProto gives the whole form
again, so every tensor stays in TensorFlow's wire format. String tensors keep
their values in the head (content_bytes counts only numeric contents). The
stream must end exactly after content_bytes: a short, long or malformed
stream is a DataLossError.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

from nbcluster.errors import DataLossError
from nbcluster.rpc.codec import wire
from nbcluster.rpc.codec.messages import Layout, encode_entry, split_fields
from nbcluster.rpc.codec.tensor_decoding import empty_for, split_named
from nbcluster.rpc.codec.tensor_encoding import split_content

CHUNK_BYTES = 1 << 20       # PERFORMANCE.md: 1 MiB beat 256 KiB, 4 MiB and 16 MiB
STREAM_THRESHOLD = 4 << 20  # below this, one unary message is faster
_MESSAGE, _CONTENT_BYTES = 1, 2


def content_bytes(tensors) -> int:
    """The numeric payload bytes of [(name, array), ...]: what decides streaming."""
    total = 0
    for _, array in tensors:
        dtype = getattr(array, "dtype", None)
        if dtype is not None and dtype.kind not in "OSU":
            total += array.nbytes
    return total


def should_stream(tensors) -> bool:
    return content_bytes(tensors) >= STREAM_THRESHOLD


# ----------------------------------------------------------------- sending

def encode_frames(message, layout: Layout, tensors,
                  chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Frames of `message` with `tensors` as `layout.field` (see the module doc).

    The head is built at once, so a bad tensor raises here, before anything is
    sent; the data frames are cut lazily from the arrays' buffers. Do not
    mutate the arrays until the iterator is exhausted.

    Raises:
      InvalidArgumentError: a tensor has no TensorProto form.

    Example:
      >>> frames = list(encode_frames(RunStepRequest(), Layout(RunStepRequest, 2),
      ...                             [("x:0", np.zeros(3 << 20, np.float32))]))
      >>> len(frames)    # the head, then 12 MiB in 1 MiB frames
      13
    """
    pieces = [message.SerializeToString()]
    contents = []
    for name, array in tensors:
        header, content = split_content(array)
        pieces.extend(encode_entry(layout, name, [header]))
        if content is not None:
            contents.append(content)
    body = b"".join(pieces)
    total = sum(c.nbytes for c in contents)
    head = (wire.length_delimited(_MESSAGE, len(body)) + body
            + wire.tag(_CONTENT_BYTES, wire.VARINT) + wire.encode_varint(total))
    return itertools.chain((head,), _data_frames(contents, chunk_bytes))


def _data_frames(contents: list, chunk_bytes: int) -> Iterator[bytes]:
    held: list = []   # pieces of a frame that spans entries
    size = 0
    for mv in contents:
        pos, n = 0, mv.nbytes
        while pos < n:
            take = min(chunk_bytes - size, n - pos)
            if take == chunk_bytes:       # the common case: one slice, one copy
                yield mv[pos:pos + take].tobytes()
            else:
                held.append(mv[pos:pos + take])
                size += take
                if size == chunk_bytes:
                    yield b"".join(held)
                    held, size = [], 0
            pos += take
    if held:
        yield b"".join(held)


# --------------------------------------------------------------- receiving

class Assembler:
    """Rebuilds a streamed message frame by frame into preallocated arrays.

    Example:
      >>> assembler = Assembler(layout)
      >>> for frame in frames:
      ...     assembler.add(frame)
      >>> message, tensors = assembler.result()
    """

    def __init__(self, layout: Layout) -> None:
        self._layout = layout
        self._message = None
        self._tensors: list = []
        self._targets: list = []   # writable byte memoryviews, in stream order
        self._index = 0            # the target being filled ...
        self._offset = 0           # ... and how much of it is
        self._missing = 0          # content bytes still to come

    def add(self, frame) -> None:
        """Takes the next frame.

        Raises:
          DataLossError: a malformed head, or more bytes than it announced.
          InvalidArgumentError, ResourceExhaustedError: the head announces a
            tensor that cannot be built.
        """
        if self._message is None:
            self._read_head(frame)
            return
        mv = wire.as_byte_view(frame)
        n = mv.nbytes
        if n > self._missing:
            raise DataLossError(None, None, f"tensor stream carries {n - self._missing} "
                                            "bytes more than its head announced")
        pos = 0
        while pos < n:
            target = self._targets[self._index]
            take = min(target.nbytes - self._offset, n - pos)
            target[self._offset:self._offset + take] = mv[pos:pos + take]
            pos += take
            self._offset += take
            if self._offset == target.nbytes:
                self._index += 1
                self._offset = 0
        self._missing -= n

    def result(self) -> tuple:
        """(message, [(name, ndarray), ...]) once the stream has ended.

        Raises:
          DataLossError: the stream had no head or ended early.
        """
        if self._message is None:
            raise DataLossError(None, None, "tensor stream ended before its head")
        if self._missing:
            raise DataLossError(None, None, f"tensor stream ended {self._missing} bytes short")
        return self._message, self._tensors

    def _read_head(self, frame) -> None:
        body, announced = None, 0
        for number, wire_type, value, _, _ in wire.iter_fields(frame):
            if number == _MESSAGE and wire_type == wire.LENGTH_DELIMITED:
                body = value
            elif number == _CONTENT_BYTES and wire_type == wire.VARINT:
                announced = value
        if body is None:
            raise DataLossError(None, None, "tensor stream head has no message")
        layout = self._layout
        rest, fields = split_fields(body, [layout.field] if layout.field is not None else [])
        try:
            message = layout.message_class.FromString(rest)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError, from peer bytes
            raise DataLossError(None, None, f"tensor stream head: {e}") from None
        for entry in fields.get(layout.field, ()):
            name, tensor = split_named(entry) if layout.named else ("", entry)
            array, content = empty_for(tensor)
            self._tensors.append((name, array))
            if content is not None:
                self._targets.append(memoryview(content))
        expected = sum(t.nbytes for t in self._targets)
        if expected != announced:
            raise DataLossError(None, None, f"tensor stream head announces {announced} "
                                            f"content bytes; its tensors hold {expected}")
        self._missing = expected
        self._message = message


def decode_frames(frames: Iterable, layout: Layout) -> tuple:
    """(message, [(name, ndarray), ...]) from `encode_frames`' frames.

    The arrays are new, writable, C-contiguous and 64-byte aligned.

    Raises:
      DataLossError: a truncated, overlong or malformed stream.
    """
    assembler = Assembler(layout)
    for frame in frames:
        assembler.add(frame)
    return assembler.result()

