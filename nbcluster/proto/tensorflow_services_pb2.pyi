from nbcluster.proto import master_pb2 as _master_pb2
from nbcluster.proto import worker_pb2 as _worker_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
