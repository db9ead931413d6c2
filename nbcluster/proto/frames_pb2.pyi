from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class TensorFrame(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StreamHead(_message.Message):
    __slots__ = ("message", "content_bytes")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    message: bytes
    content_bytes: int
    def __init__(self, message: _Optional[bytes] = ..., content_bytes: _Optional[int] = ...) -> None: ...

class PullToken(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RecvTensorsFrame(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
