"""Node <-> NodeDef and Graph <-> GraphDef conversion (import_graph_def: `importer.py`).

Attribute values map by Python type: bool->b, int->i, float->f, str/bytes->s,
DType->type, TensorShape->shape, ndarray->tensor, list->list, FuncAttr->func.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.func_attr import FuncAttr, fill_func, read_func
from nbcluster.framework.function_library import FunctionLibrary
from nbcluster.framework.node import Node
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.framework.tensor_util import make_ndarray, make_tensor_proto
from nbcluster.proto import graph_pb2

PRODUCER_VERSION = 1


def shape_to_proto(shape: TensorShape) -> "graph_pb2.TensorShapeProto":
    proto = graph_pb2.TensorShapeProto()
    if shape.rank is None:
        proto.unknown_rank = True
    else:
        proto.dim.extend(graph_pb2.TensorShapeProto.Dim(size=-1 if d is None else d)
                         for d in shape)
    return proto


def shape_from_proto(proto) -> TensorShape:
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in proto.dim])


def _fill_attr(attr, value) -> None:
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, (int, np.integer)):
        attr.i = int(value)
    elif isinstance(value, (float, np.floating)):
        attr.f = float(value)
    elif isinstance(value, str):
        attr.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        attr.s = value
    elif isinstance(value, dtypes.DType):
        attr.type = value.as_datatype_enum
    elif isinstance(value, TensorShape):
        attr.shape.CopyFrom(shape_to_proto(value))
    elif isinstance(value, np.ndarray):
        attr.tensor.CopyFrom(make_tensor_proto(value))
    elif isinstance(value, (list, tuple)):
        _fill_list(attr.list, list(value))
        attr.SetInParent()
    elif isinstance(value, FuncAttr):
        fill_func(attr.func, value, nodes_to_proto, _fill_attr)
    else:
        raise TypeError(f"Cannot store attr value {value!r} of type {type(value).__name__}")


def _fill_list(lst, values: list) -> None:
    for v in values:
        if isinstance(v, bool):
            lst.b.append(v)
        elif isinstance(v, (int, np.integer)):
            lst.i.append(int(v))
        elif isinstance(v, float):
            lst.f.append(v)
        elif isinstance(v, (str, bytes)):
            lst.s.append(v.encode("utf-8") if isinstance(v, str) else v)
        elif isinstance(v, dtypes.DType):
            lst.type.append(v.as_datatype_enum)
        elif isinstance(v, TensorShape):
            lst.shape.append(shape_to_proto(v))
        elif isinstance(v, np.ndarray):
            lst.tensor.append(make_tensor_proto(v))
        else:
            raise TypeError(f"Cannot store list attr element {v!r}")


def _decode_s(raw: bytes):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _dtype(enum: int):
    try:
        return dtypes.as_dtype(enum)
    except TypeError:
        raise errors.InvalidArgumentError(None, None, f"unknown DataType enum {enum}") from None


def attr_from_proto(attr, functions=None):
    """The Python value of an AttrValue.

    Args:
      functions: the GraphDef's FunctionLibrary (function_library.py), where a
        `func` attr may name a library function instead of carrying its body.

    Raises:
      InvalidArgumentError: a kind nbcluster has no use for (`placeholder`),
        a `func` without its body (func_attr.py), an unknown dtype, or a bad
        tensor or shape.
        A tensor too large to make up is one too (tensor_size.py).
    """
    kind = attr.WhichOneof("value")
    if kind == "s":
        return _decode_s(attr.s)
    if kind in ("i", "f", "b"):
        return getattr(attr, kind)
    if kind == "type":
        return _dtype(attr.type)
    if kind == "shape":
        return shape_from_proto(attr.shape)
    if kind == "tensor":
        return make_ndarray(attr.tensor)
    if kind == "list":
        lst = attr.list
        return ([_decode_s(s) for s in lst.s] + list(lst.i) + list(lst.f) + list(lst.b)
                + [_dtype(t) for t in lst.type]
                + [shape_from_proto(s) for s in lst.shape]
                + [make_ndarray(t) for t in lst.tensor])
    if kind is None:
        return []
    if kind == "func":
        if functions is not None and "_body" not in attr.func.attr and \
                attr.func.name in functions:
            return functions.get(attr.func.name)
        return read_func(attr.func, graph_pb2.GraphDef, nodes_from_proto, attr_from_proto)
    raise errors.InvalidArgumentError(
        None, None, f"attr kind {kind!r} is not supported (attr "
                    f"placeholders have no kernels here)")


def node_to_proto(node: Node) -> "graph_pb2.NodeDef":
    proto = graph_pb2.NodeDef(name=node.name, op=node.op, input=list(node.inputs),
                              device=node.device)
    for key, value in node.attrs.items():
        _fill_attr(proto.attr[key], value)
    return proto


def node_from_proto(proto, functions=None) -> Node:
    """A Node from a NodeDef (a peer's: every problem is an OpError naming the node).

    `functions`: as attr_from_proto's.

    Raises:
      InvalidArgumentError: an attr that cannot be read (see attr_from_proto).
        A constant too large to make up is one too.
    """
    attrs = {}
    for key, value in proto.attr.items():
        try:
            attrs[key] = attr_from_proto(value, functions)
        except errors.OpError as e:
            raise type(e)(None, None, f"NodeDef {proto.name!r} ({proto.op}) attr {key!r}: "
                                      f"{e.message}", node_name=proto.name) from None
        except (ValueError, TypeError, OverflowError) as e:  # numpy refusing a peer's value
            raise errors.InvalidArgumentError(
                None, None, f"NodeDef {proto.name!r} ({proto.op}) attr {key!r}: {e}",
                node_name=proto.name) from None
    return Node(proto.name, proto.op, tuple(proto.input), proto.device, attrs)


def nodes_to_proto(nodes: Iterable[Node]) -> "graph_pb2.GraphDef":
    graph_def = graph_pb2.GraphDef()
    graph_def.node.extend(node_to_proto(n) for n in nodes)
    graph_def.versions.producer = PRODUCER_VERSION
    return graph_def


def nodes_from_proto(graph_def) -> list:
    """The GraphDef's Nodes; functions of its library ride in their callers' attrs."""
    functions = None
    if graph_def.library.function:
        functions = FunctionLibrary(graph_def.library, node_from_proto)
    return [node_from_proto(n, functions) for n in graph_def.node]
