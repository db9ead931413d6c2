"""TF's function library read into FuncAttrs: a TF2 graph's functions, for its callers' attrs.

Rule: a FunctionDef becomes the FuncAttr nbcluster carries in the calling
node's attr (func_attr.py), read once per name and on demand, so a
function used by several callers, or by another function's body, is
converted once and only if used. The body's inputs are rewritten from
TF's function form ("node:output_arg:index", or an argument's bare name)
to graph form ("node:flat_index"), each argument becomes an `_Arg` node,
and `ret` gives the outputs in the signature's order.
"""
from __future__ import annotations

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.func_attr import FuncAttr
from nbcluster.framework.node import Node

# Output args of the ops that have more than one, each one tensor; every other
# op's outputs are one arg, so "node:arg:i" is output i.
_OUTPUT_ARGS = {
    "BroadcastGradientArgs": ("r0", "r1"),
    "RefMerge": ("output", "value_index"),
    "RefSwitch": ("output_false", "output_true"),
    "TensorArrayGradV3": ("grad_handle", "flow_out"),
    "TensorArrayV3": ("handle", "flow"),
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                       "reserve_space_2"),
    "FusedBatchNormV2": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                         "reserve_space_2"),
    "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1",
                         "reserve_space_2", "reserve_space_3"),
    "ListDiff": ("out", "idx"),
    "MaxPoolWithArgmax": ("output", "argmax"),
    "Merge": ("output", "value_index"),
    "Qr": ("q", "r"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "Svd": ("s", "u", "v"),
    "TensorListPopBack": ("output_handle", "tensor"),
    "Switch": ("output_false", "output_true"),
    "TopKV2": ("values", "indices"),
    "Unique": ("y", "idx"),
    "UniqueV2": ("y", "idx"),
    "UniqueWithCounts": ("y", "idx", "count"),
}


class FunctionLibrary:
    """The functions of a GraphDef's `library`, as FuncAttrs by name.

    Args:
      library: a FunctionDefLibrary message.
      node_from_proto: graph_def's NodeDef reader, called as
        `node_from_proto(node_def, functions)` with this library, so bodies
        that call other functions find them here.
    """

    def __init__(self, library, node_from_proto) -> None:
        self._defs = {f.signature.name: f for f in library.function}
        self._node_from_proto = node_from_proto
        self._read: dict = {}
        self._reading: set = set()

    def __contains__(self, name: str) -> bool:
        return name in self._defs

    def get(self, name: str) -> FuncAttr:
        """Raises:
          InvalidArgumentError: a body that calls itself, names an input it does
            not have, or returns an output it does not make.
          UnimplementedError: a signature whose types its callers decide
            (type or number attrs: polymorphic library functions).
        """
        func = self._read.get(name)
        if func is None:
            if name in self._reading:
                raise errors.InvalidArgumentError(
                    None, None, f"function {name!r} calls itself: recursive functions are "
                                f"not supported")
            self._reading.add(name)
            try:
                func = self._read[name] = self._convert(self._defs[name])
            finally:
                self._reading.discard(name)
        return func

    def _convert(self, fdef) -> FuncAttr:
        sig = fdef.signature
        args = [_argument(sig.name, i, a) for i, a in enumerate(sig.input_arg)]
        body = [self._node_from_proto(n, self) for n in fdef.node_def]
        ops = {n.name: n.op for n in body}
        ops.update((a.name, "_Arg") for a in args)

        def graph_ref(ref: str) -> str:
            return _graph_ref(sig.name, ref, ops)
        nodes = args + [n.with_changes(inputs=tuple(graph_ref(r) for r in n.inputs))
                        for n in body]
        outputs = []
        for out in sig.output_arg:
            if out.name not in fdef.ret:
                raise errors.InvalidArgumentError(
                    None, None, f"function {sig.name!r} does not say what its output "
                                f"{out.name!r} returns")
            outputs.append(graph_ref(fdef.ret[out.name]))
        return FuncAttr(sig.name, tuple(nodes), tuple(outputs),
                        tuple(a.attrs["T"] for a in args),
                        tuple(_arg_type(sig.name, o) for o in sig.output_arg))


def _arg_type(function: str, arg) -> dtypes.DType:
    if not arg.type or arg.number_attr or arg.type_list_attr:
        raise errors.UnimplementedError(
            None, None, f"function {function!r}: argument {arg.name!r} takes its type from "
                        f"the caller's attrs (a polymorphic library function); nbcluster "
                        f"imports functions of fixed types, as tf.function writes them")
    return dtypes.as_dtype(arg.type)


def _argument(function: str, index: int, arg) -> Node:
    return Node(arg.name, "_Arg", (), "", {"index": index, "T": _arg_type(function, arg)})


def _graph_ref(function: str, ref: str, ops: dict) -> str:
    """`ref` of a function body in graph form: "^node", or "node:flat_index"."""
    if ref.startswith("^"):
        name = ref[1:]
    else:
        name, _, rest = ref.partition(":")
    if name not in ops:
        raise errors.InvalidArgumentError(
            None, None, f"function {function!r} names {ref!r}, which is neither one of its "
                        f"nodes nor one of its arguments")
    if ref.startswith("^"):
        return ref
    if not rest:
        return f"{name}:0"
    arg, _, index = rest.rpartition(":")
    if not arg:  # "node:index", graph form already
        return ref
    names = _OUTPUT_ARGS.get(ops[name])
    if names is None:
        return f"{name}:{index}"
    if arg not in names:
        raise errors.InvalidArgumentError(
            None, None, f"function {function!r} names output {arg!r} of {name!r} "
                        f"({ops[name]}), which has outputs {list(names)}")
    return f"{name}:{names.index(arg) + int(index)}"
