"""A GraphDef's function library (TF2 graphs) read into the FuncAttrs of its callers, and run."""
from __future__ import annotations

import numpy as np
import pytest

import nbcluster as tf
from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.framework.graph_def import node_to_proto
from nbcluster.framework.node import Node
from nbcluster.proto import graph_pb2

F32 = dtypes.float32.as_datatype_enum
I32 = dtypes.int32.as_datatype_enum
BOOL = dtypes.bool.as_datatype_enum


def _function(library, name, inputs, outputs, nodes, ret):
    """Adds FunctionDef `name`: inputs/outputs [(arg name, DataType enum)], body Nodes,
    ret {output arg: "node:arg:index" or an argument}."""
    fdef = library.function.add()
    fdef.signature.name = name
    for arg, dtype in inputs:
        fdef.signature.input_arg.add(name=arg, type=dtype)
    for arg, dtype in outputs:
        fdef.signature.output_arg.add(name=arg, type=dtype)
    fdef.node_def.extend(node_to_proto(n) for n in nodes)
    fdef.ret.update(ret)
    return fdef


def _func_attr(attr, name: str) -> None:
    attr.func.name = name


def _graph(library_builder, caller) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    library_builder(graph_def.library)
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = F32
    x.attr["shape"].shape.unknown_rank = True
    graph_def.node.append(caller)
    return graph_def


def _twice_plus_one(library) -> None:
    two = Node("two", "Const", (), "", {"dtype": dtypes.float32,
                                        "value": np.array(2.0, np.float32)})
    one = Node("one", "Const", (), "", {"dtype": dtypes.float32,
                                        "value": np.array(1.0, np.float32)})
    mul = Node("mul", "Mul", ("v", "two:output:0"), "", {"T": dtypes.float32})
    add = Node("add", "AddV2", ("mul:z:0", "one:output:0"), "", {"T": dtypes.float32})
    _function(library, "twice_plus_one", [("v", F32)], [("out", F32)], [two, one, mul, add],
              {"out": "add:z:0"})


def _call(name: str = "twice_plus_one", op: str = "PartitionedCall"):
    call = graph_pb2.NodeDef(name="call", op=op, input=["x"])
    call.attr["Tin"].list.type.append(F32)
    call.attr["Tout"].list.type.append(F32)
    _func_attr(call.attr["f"], name)
    return call


def _run(graph_def, fetch: str, x, **run_kwargs):
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            return sess.run(fetch, {"x:0": np.asarray(x, np.float32)}, **run_kwargs)


@pytest.mark.parametrize("op", ["PartitionedCall", "StatefulPartitionedCall"])
def test_a_call_runs_its_library_function(op):
    graph_def = _graph(_twice_plus_one, _call(op=op))
    np.testing.assert_allclose(_run(graph_def, "call:0", [1.0, -3.0]), [3.0, -5.0])


def test_a_body_calls_another_library_function():
    def library(lib):
        _twice_plus_one(lib)
        inner = Node("inner", "PartitionedCall", ("w",), "",
                     {"Tin": [dtypes.float32], "Tout": [dtypes.float32]})
        fdef = _function(lib, "outer", [("w", F32)], [("y", F32)], [inner],
                         {"y": "inner:output:0"})
        node = fdef.node_def[0]
        _func_attr(node.attr["f"], "twice_plus_one")
    graph_def = _graph(library, _call("outer"))
    np.testing.assert_allclose(_run(graph_def, "call:0", 2.0), 5.0)


def _counter_loop(library) -> None:
    """cond(i, t): i < 4; body(i, t): (i + 1, t * 2)."""
    four = Node("four", "Const", (), "", {"dtype": dtypes.int32, "value": np.array(4, np.int32)})
    less = Node("less", "Less", ("i", "four:output:0"), "", {"T": dtypes.int32})
    _function(library, "cond", [("i", I32), ("t", F32)], [("keep", BOOL)], [four, less],
              {"keep": "less:z:0"})
    one = Node("one", "Const", (), "", {"dtype": dtypes.int32, "value": np.array(1, np.int32)})
    two = Node("two", "Const", (), "", {"dtype": dtypes.float32,
                                        "value": np.array(2.0, np.float32)})
    inc = Node("inc", "AddV2", ("i", "one:output:0"), "", {"T": dtypes.int32})
    dbl = Node("dbl", "Mul", ("t", "two:output:0"), "", {"T": dtypes.float32})
    _function(library, "body", [("i", I32), ("t", F32)], [("i2", I32), ("t2", F32)],
              [one, two, inc, dbl], {"i2": "inc:z:0", "t2": "dbl:z:0"})


def _while(op: str = "StatelessWhile", start: int = 0) -> list:
    zero = graph_pb2.NodeDef(name="zero", op="Const")
    zero.attr["dtype"].type = I32
    zero.attr["value"].tensor.dtype = I32
    zero.attr["value"].tensor.int_val.append(start)
    loop = graph_pb2.NodeDef(name="loop", op=op, input=["zero", "x"])
    loop.attr["T"].list.type.extend([I32, F32])
    _func_attr(loop.attr["cond"], "cond")
    _func_attr(loop.attr["body"], "body")
    return [zero, loop]


@pytest.mark.parametrize("op", ["While", "StatelessWhile"])
def test_a_while_loop_runs_its_body_until_its_condition_is_false(op):
    graph_def = _graph(_counter_loop, _while(op)[0])
    graph_def.node.append(_while(op)[1])
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            i, t = sess.run(["loop:0", "loop:1"], {"x:0": np.float32(3.0)})
    assert (i, t) == (4, 48.0)


def test_an_endless_while_loop_ends_with_its_step_deadline():
    def library(lib):
        true = Node("yes", "Const", (), "", {"dtype": dtypes.bool, "value": np.array(True)})
        _function(lib, "cond", [("i", I32), ("t", F32)], [("keep", BOOL)], [true],
                  {"keep": "yes:output:0"})
        idi = Node("same", "Identity", ("i",), "", {"T": dtypes.int32})
        idt = Node("same_t", "Identity", ("t",), "", {"T": dtypes.float32})
        _function(lib, "body", [("i", I32), ("t", F32)], [("i2", I32), ("t2", F32)],
                  [idi, idt], {"i2": "same:output:0", "t2": "same_t:output:0"})
    zero, loop = _while()
    graph_def = _graph(library, zero)
    graph_def.node.append(loop)
    with pytest.raises(errors.DeadlineExceededError):
        _run(graph_def, "loop:1", 1.0, options=tf.RunOptions(timeout_in_ms=300))


def test_a_blocking_kernel_in_a_called_body_ends_with_the_calling_steps_deadline():
    # the body dequeues from a queue nothing fills: the call's step, not the body, owns
    # the deadline, so the dequeue must give up when the step's timeout passes
    def library(lib):
        queue = Node("queue", "FIFOQueueV2", (), "", {
            "component_types": [dtypes.float32], "shapes": [], "capacity": 4,
            "container": "", "shared_name": "starved"})
        take = Node("take", "QueueDequeueV2", ("queue:handle:0",), "", {
            "component_types": [dtypes.float32], "timeout_ms": -1})
        plus = Node("plus", "AddV2", ("v", "take:components:0"), "", {"T": dtypes.float32})
        _function(lib, "starved", [("v", F32)], [("out", F32)], [queue, take, plus],
                  {"out": "plus:z:0"})
    graph_def = _graph(library, _call("starved", op="StatefulPartitionedCall"))
    with pytest.raises(errors.DeadlineExceededError):
        _run(graph_def, "call:0", 1.0, options=tf.RunOptions(timeout_in_ms=300))


@pytest.mark.parametrize("pred, expected", [(1.0, 3.0), (0.0, -1.0)])
def test_if_runs_the_branch_its_condition_picks(pred, expected):
    def library(lib):
        _twice_plus_one(lib)
        neg = Node("neg", "Neg", ("v",), "", {"T": dtypes.float32})
        _function(lib, "negate", [("v", F32)], [("out", F32)], [neg], {"out": "neg:y:0"})
    if_ = graph_pb2.NodeDef(name="if", op="StatelessIf", input=["x", "x"])
    if_.attr["Tcond"].type = F32
    if_.attr["Tin"].list.type.append(F32)
    if_.attr["Tout"].list.type.append(F32)
    _func_attr(if_.attr["then_branch"], "twice_plus_one")
    _func_attr(if_.attr["else_branch"], "negate")
    graph_def = _graph(library, if_)
    # a float scalar condition is true where non-zero, as TF's
    assert _run(graph_def, "if:0", pred) == (expected if pred else -0.0)


def test_a_function_calling_itself_is_refused_naming_it():
    def library(lib):
        again = Node("again", "PartitionedCall", ("v",), "",
                     {"Tin": [dtypes.float32], "Tout": [dtypes.float32]})
        fdef = _function(lib, "forever", [("v", F32)], [("out", F32)], [again],
                         {"out": "again:output:0"})
        _func_attr(fdef.node_def[0].attr["f"], "forever")
    with pytest.raises(errors.InvalidArgumentError, match="'forever' calls itself"):
        _run(_graph(library, _call("forever")), "call:0", 1.0)


def test_a_body_naming_an_unknown_input_is_refused_naming_it():
    def library(lib):
        bad = Node("bad", "Neg", ("nowhere:y:0",), "", {"T": dtypes.float32})
        _function(lib, "broken", [("v", F32)], [("out", F32)], [bad], {"out": "bad:y:0"})
    with pytest.raises(errors.InvalidArgumentError, match="'nowhere:y:0'"):
        _run(_graph(library, _call("broken")), "call:0", 1.0)


def test_a_polymorphic_library_function_is_unimplemented_naming_its_argument():
    def library(lib):
        fdef = _function(lib, "generic", [], [("out", F32)], [], {"out": "v"})
        fdef.signature.input_arg.add(name="v", type_attr="T")
    with pytest.raises(errors.UnimplementedError, match="argument 'v'"):
        _run(_graph(library, _call("generic")), "call:0", 1.0)


def test_a_graph_nbcluster_writes_carries_bodies_in_attrs_not_a_library():
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_graph(_twice_plus_one, _call()), name="")
        written = g.as_graph_def()
    assert not written.library.function
    np.testing.assert_allclose(_run(written, "call:0", 4.0), 9.0)


def test_gradients_over_an_imported_call_say_nbcluster_has_none():
    with tf.Graph().as_default() as g:
        tf.import_graph_def(_graph(_twice_plus_one, _call()), name="")
        with pytest.raises(errors.UnimplementedError, match="no gradient for PartitionedCall"):
            tf.gradients(g.get_tensor_by_name("call:0"), [g.get_tensor_by_name("x:0")])


@pytest.mark.parametrize("ref, op, wired", [("ta:flow:0", "TensorArrayV3", "ta:1"),
                                            ("ta:handle:0", "TensorArrayV3", "ta:0"),
                                            ("g:flow_out:0", "TensorArrayGradV3", "g:1"),
                                            ("s:output_true:0", "RefSwitch", "s:1"),
                                            ("m:value_index:0", "RefMerge", "m:1"),
                                            ("mul:z:0", "Mul", "mul:0"), ("v", "_Arg", "v:0")])
def test_a_body_input_names_the_output_its_arg_stands_for(ref, op, wired):
    from nbcluster.framework.function_library import _graph_ref
    assert _graph_ref("f", ref, {ref.partition(":")[0]: op}) == wired
