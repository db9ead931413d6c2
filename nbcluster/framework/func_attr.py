"""A function-valued attr (MapDataset's `f`): its name and the body that travels with it.

Rule: a function's body rides inside the attr of the node that calls it, so
whichever task the node is placed on receives the function with it; no
graph-wide function library has to follow the node around.

TensorFlow keeps bodies in `GraphDef.library` and the attr names one
(`AttrValue.func`, a NameAttrList). nbcluster writes the same NameAttrList,
its `name` TF's, and adds the body as attrs of that NameAttrList:

    _body          s     a serialized GraphDef of the body's nodes
    _outputs       list  s: the tensor names ("node:i") it returns, in order
    _arg_types     list  type: the dtypes of its `_Arg` nodes, by index
    _output_types  list  type

The body's arguments are `_Arg` nodes (attrs `index`, `T`), as in TF's
instantiated functions. A func attr from TensorFlow (no `_body`) names a
library function nbcluster does not have: InvalidArgumentError.
"""
from __future__ import annotations

from dataclasses import dataclass

from nbcluster import errors


@dataclass(frozen=True, eq=False)
class FuncAttr:
    """A function: its body's Nodes, the refs it returns, its signature.

    Args:
      name: the function's name (unique in its graph, as TF's).
      nodes: the body, Node values; `_Arg` nodes stand for the arguments.
      outputs: "node:i" refs of what it returns, in order.
      arg_types, output_types: DTypes of the arguments and results.
    """

    name: str
    nodes: tuple
    outputs: tuple
    arg_types: tuple
    output_types: tuple

    def __repr__(self) -> str:
        return f"FuncAttr({self.name!r}, {len(self.nodes)} nodes)"


def fill_func(name_attr_list, func: FuncAttr, nodes_to_proto, fill_attr) -> None:
    """Writes `func` into a NameAttrList (graph_def.py passes its own converters)."""
    name_attr_list.name = func.name
    name_attr_list.attr["_body"].s = nodes_to_proto(func.nodes).SerializeToString()
    fill_attr(name_attr_list.attr["_outputs"], list(func.outputs))
    fill_attr(name_attr_list.attr["_arg_types"], list(func.arg_types))
    fill_attr(name_attr_list.attr["_output_types"], list(func.output_types))


def read_func(name_attr_list, graph_def_type, nodes_from_proto, attr_from_proto) -> FuncAttr:
    """The FuncAttr a NameAttrList carries.

    Raises:
      InvalidArgumentError: no body (a TF library function) or a body that
        does not parse.
    """
    attrs = name_attr_list.attr
    if "_body" not in attrs:
        raise errors.InvalidArgumentError(
            None, None, f"the 'func' attr names function {name_attr_list.name!r} without its "
                        f"body: nbcluster carries a function's body in its attr, not in a "
                        f"GraphDef library")
    body = graph_def_type()
    try:
        body.ParseFromString(attrs["_body"].s)
    except Exception as e:  # noqa: BLE001 - protobuf's DecodeError, from a peer's bytes
        raise errors.InvalidArgumentError(
            None, None, f"function {name_attr_list.name!r}: its body does not parse ({e})") \
            from None

    def listed(key: str) -> tuple:
        return tuple(attr_from_proto(attrs[key])) if key in attrs else ()
    return FuncAttr(name_attr_list.name, tuple(nodes_from_proto(body)), listed("_outputs"),
                    listed("_arg_types"), listed("_output_types"))
