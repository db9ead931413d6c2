"""Math op constructors (tf.add, tf.equal, tf.cast, ...) and their shape functions.

Reductions, arg-reductions and tf.range are in `ops/reduction.py`; matmul is in
`ops/linalg.py`.

Rule: dtypes and shapes are checked here, when the graph is built, with TF's
error classes (TypeError for dtypes, ValueError for shapes); kernels trust them.
A Python value combined with a Tensor takes the Tensor's dtype (`x * 2.0`).
"""
from __future__ import annotations

from typing import Optional

from nbcluster.framework import dtypes
from nbcluster.framework.constant import convert_to_tensor
from nbcluster.framework.graph import graph_of
from nbcluster.framework.op_registry import register_op
from nbcluster.framework.operation import Tensor, as_tensor_or_op, register_operator
from nbcluster.framework.tensor_shape import broadcast, unknown_shape
from nbcluster.ops.shape_inference import INDEX_TYPES, merge_shapes

# -- dtype sets (TF's OpDef type constraints) ---------------------------------
FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
COMPLEX = (dtypes.complex64, dtypes.complex128)
INTS = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
        dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
REAL = FLOATS + INTS
NUMERIC = REAL + COMPLEX
FLOAT_COMPLEX = FLOATS + COMPLEX
ANY = NUMERIC + (dtypes.bool, dtypes.string)
INDEX = INDEX_TYPES
RANGE = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def check_dtype(dtype: dtypes.DType, allowed: tuple, param: str = "x") -> None:
    """Raises TF's TypeError when `dtype` is not among `allowed`."""
    if dtype not in allowed:
        raise TypeError(f"Value passed to parameter '{param}' has DataType {dtype.name} not "
                        f"in list of allowed values: {', '.join(d.name for d in allowed)}")


def check_same_dtype(op, names: tuple = ("x", "y")) -> dtypes.DType:
    """All of `op`'s inputs share one dtype (TF's attr T); returns it."""
    first = op.inputs[0].dtype
    for t, name in zip(op.inputs[1:], names[1:]):
        if t.dtype != first:
            raise TypeError(f"Input '{name}' of '{op.type}' Op has type {t.dtype.name} that "
                            f"does not match type {first.name} of argument '{names[0]}'.")
    return first


# -- building ops ---------------------------------------------------------------
def tensor_dtype(values) -> Optional[dtypes.DType]:
    """The dtype of the first Tensor among `values` (what Python values convert to)."""
    for v in values:
        v = as_tensor_or_op(v)
        if isinstance(v, Tensor):
            return v.dtype
    return None


def to_tensor(value, dtype, name: str, graph) -> Tensor:
    """A Tensor as is; any other value as a Const of `dtype` (if given)."""
    if isinstance(as_tensor_or_op(value), Tensor):
        return convert_to_tensor(value, graph=graph)
    return convert_to_tensor(value, dtype=dtype, name=name, graph=graph)


def apply_op(op_type: str, values: list, arg_names: tuple, name: Optional[str] = None,
             attrs: Optional[dict] = None):
    """Builds one op with attr T in a name scope, as TF's op wrappers do; returns it.

    Python values become Consts named after their argument ("AddV2/y"), with
    the dtype of the first Tensor among `values`.
    """
    graph = graph_of(*values)
    dtype = tensor_dtype(values)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        inputs = [to_tensor(v, dtype, n, graph) for v, n in zip(values, arg_names)]
        attrs = {"T": inputs[0].dtype, **(attrs or {})}
        return graph.create_op(op_type, inputs, attrs, name=scope)


# -- element-wise ops ----------------------------------------------------------
def _unary_shape(allowed: tuple):
    def shape_fn(op):
        x = op.inputs[0]
        check_dtype(x.dtype, allowed)
        return [(x.dtype, x.shape)]
    return shape_fn


def _binary_shape(allowed: tuple, out_dtype: Optional[dtypes.DType] = None):
    def shape_fn(op):
        dtype = check_same_dtype(op)
        check_dtype(dtype, allowed)
        shape = broadcast(op.inputs[0].shape, op.inputs[1].shape, op.name)
        return [(out_dtype or dtype, shape)]
    return shape_fn


_UNARY = {"Neg": NUMERIC, "Sign": NUMERIC, "Square": NUMERIC, "Sqrt": FLOAT_COMPLEX,
          "Exp": FLOAT_COMPLEX, "Log": FLOAT_COMPLEX, "Log1p": FLOAT_COMPLEX, "Tanh": FLOAT_COMPLEX, "Abs": REAL,
          "Reciprocal": FLOAT_COMPLEX, "Rsqrt": FLOAT_COMPLEX}
_BINARY = {"AddV2": (NUMERIC, None), "Sub": (NUMERIC, None), "Mul": (NUMERIC, None),
           "RealDiv": (FLOAT_COMPLEX, None), "DivNoNan": (FLOAT_COMPLEX, None),
           "Maximum": (REAL, None),
           "Minimum": (REAL, None), "Pow": (FLOAT_COMPLEX + (dtypes.int32, dtypes.int64), None),
           "FloorDiv": (REAL, None), "FloorMod": (REAL, None),
           "SquaredDifference": (NUMERIC, None),
           "Equal": (ANY, dtypes.bool), "NotEqual": (ANY, dtypes.bool),
           "Less": (REAL, dtypes.bool), "LessEqual": (REAL, dtypes.bool),
           "Greater": (REAL, dtypes.bool), "GreaterEqual": (REAL, dtypes.bool)}
for _type, _allowed in _UNARY.items():
    register_op(_type)(_unary_shape(_allowed))
for _type, (_allowed, _out) in _BINARY.items():
    register_op(_type)(_binary_shape(_allowed, _out))


def _unary(op_type: str, x, name: Optional[str]) -> Tensor:
    return apply_op(op_type, [x], ("x",), name).outputs[0]


def _binary(op_type: str, x, y, name: Optional[str]) -> Tensor:
    return apply_op(op_type, [x, y], ("x", "y"), name).outputs[0]


def add(x, y, name=None) -> Tensor:
    """x + y element-wise, with numpy broadcasting (op AddV2).

    Args: x, y: Tensors or Python/numpy values of one numeric dtype. name: op name.
    Returns: a Tensor of that dtype and the broadcast shape.
    Raises: TypeError on mismatched or non-numeric dtypes; ValueError when the
      shapes do not broadcast.

    Example:
      >>> add(constant([1., 2.]), 1.0).shape
      TensorShape([2])
    """
    return _binary("AddV2", x, y, name)


def subtract(x, y, name=None) -> Tensor:
    """x - y element-wise (op Sub); see `add`."""
    return _binary("Sub", x, y, name)


def squared_difference(x, y, name=None) -> Tensor:
    """(x - y) * (x - y) element-wise with broadcasting (op SquaredDifference; TF's
    tf.nn.moments and mean_squared_error build it)."""
    return _binary("SquaredDifference", x, y, name)


def multiply(x, y, name=None) -> Tensor:
    """x * y element-wise (op Mul); see `add`."""
    return _binary("Mul", x, y, name)


def realdiv(x, y, name=None) -> Tensor:
    """x / y for float or complex tensors (op RealDiv)."""
    return _binary("RealDiv", x, y, name)


def div_no_nan(x, y, name=None) -> Tensor:
    """x / y, but 0 wherever y is 0 (op DivNoNan; TF's losses divide by weight sums so)."""
    return _binary("DivNoNan", x, y, name)


# TF1's __truediv__: small ints divide as float32, 32/64-bit ints as float64.
_TRUEDIV = {dtypes.int8: dtypes.float32, dtypes.uint8: dtypes.float32,
            dtypes.int16: dtypes.float32, dtypes.uint16: dtypes.float32,
            dtypes.int32: dtypes.float64, dtypes.int64: dtypes.float64}


def floordiv(x, y, name=None) -> Tensor:
    """x // y element-wise, rounding toward minus infinity, as Python (op FloorDiv).

    Raises: InvalidArgumentError at run time for an integer division by zero.
    """
    return _binary("FloorDiv", x, y, name)


def floormod(x, y, name=None) -> Tensor:
    """x % y element-wise with the sign of y, as Python (op FloorMod; tf.mod)."""
    return _binary("FloorMod", x, y, name)


def truediv(x, y, name=None) -> Tensor:
    """x / y as Python 3 divides: integer tensors are cast to float first.

    Example:
      >>> truediv(constant([3]), 2).dtype
      tf.float64
    """
    graph = graph_of(x, y)
    dtype = tensor_dtype([x, y])
    with graph.as_default(), graph.name_scope(name or "truediv") as scope:
        x = to_tensor(x, dtype, "x", graph)
        y = to_tensor(y, dtype, "y", graph)
        if x.dtype != y.dtype:
            raise TypeError(f"x and y must have the same dtype, got {x.dtype!r} != {y.dtype!r}")
        target = _TRUEDIV.get(x.dtype)
        if target is not None:
            x, y = cast(x, target), cast(y, target)
        elif x.dtype not in FLOAT_COMPLEX:
            raise TypeError(f"Invalid dtype {x.dtype!r} in __truediv__")
        return graph.create_op("RealDiv", [x, y], {"T": x.dtype}, name=scope).outputs[0]


divide = truediv  # TF1's tf.divide(x, y) is `x / y`


def negative(x, name=None) -> Tensor:
    """-x element-wise (op Neg)."""
    return _unary("Neg", x, name)


def square(x, name=None) -> Tensor:
    return _unary("Square", x, name)


def sqrt(x, name=None) -> Tensor:
    return _unary("Sqrt", x, name)


def exp(x, name=None) -> Tensor:
    return _unary("Exp", x, name)


def log(x, name=None) -> Tensor:
    return _unary("Log", x, name)


def log1p(x, name=None) -> Tensor:
    """log(1 + x), accurate for small x."""
    return _unary("Log1p", x, name)


def reciprocal(x, name=None) -> Tensor:
    """1 / x element-wise (op Reciprocal; TF's gradients of divisions and means use it)."""
    return _unary("Reciprocal", x, name)


def rsqrt(x, name=None) -> Tensor:
    """1 / sqrt(x) element-wise (op Rsqrt; TF's l2_normalize and batch norms use it)."""
    return _unary("Rsqrt", x, name)


def tanh(x, name=None) -> Tensor:
    return _unary("Tanh", x, name)


def abs(x, name=None) -> Tensor:  # noqa: A001 - TF's public name
    return _unary("Abs", x, name)


def maximum(x, y, name=None) -> Tensor:
    return _binary("Maximum", x, y, name)


def minimum(x, y, name=None) -> Tensor:
    return _binary("Minimum", x, y, name)


def pow(x, y, name=None) -> Tensor:  # noqa: A001 - TF's public name
    """x ** y element-wise (op Pow); integer x to a negative power fails at run time."""
    return _binary("Pow", x, y, name)


def equal(x, y, name=None) -> Tensor:
    """x == y element-wise, a bool Tensor (op Equal); also for bool and string."""
    return _binary("Equal", x, y, name)


def not_equal(x, y, name=None) -> Tensor:
    return _binary("NotEqual", x, y, name)


def less(x, y, name=None) -> Tensor:
    return _binary("Less", x, y, name)


def less_equal(x, y, name=None) -> Tensor:
    return _binary("LessEqual", x, y, name)


def greater(x, y, name=None) -> Tensor:
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name=None) -> Tensor:
    return _binary("GreaterEqual", x, y, name)


def sign(x, name=None) -> Tensor:
    """-1, 0 or 1 by the sign of each element (op Sign)."""
    return _unary("Sign", x, name)


# -- add_n and select -------------------------------------------------------------
@register_op("AddN")
def _add_n_shape(op):
    dtype = check_same_dtype(op, tuple(f"inputs_{i}" for i in range(len(op.inputs))))
    check_dtype(dtype, NUMERIC, "inputs")
    shape = unknown_shape()
    for t in op.inputs:
        shape = merge_shapes(op, shape, t.shape)
    return [(dtype, shape)]


def add_n(inputs, name=None) -> Tensor:
    """The element-wise sum of a list of same-shaped tensors (op AddN).

    Args: inputs: a non-empty list of Tensors of one numeric dtype and shape.
      name: op name.
    Returns: a Tensor; the one input itself when the list holds one Tensor.
    Raises: ValueError for an empty list or shapes known to differ; TypeError
      for mixed dtypes.

    Example:
      >>> add_n([constant([1., 2.]), constant([3., 4.])]).shape
      TensorShape([2])
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"inputs must be a non-empty list of Tensors, got {inputs!r}")
    if len(inputs) == 1 and isinstance(as_tensor_or_op(inputs[0]), Tensor):
        return as_tensor_or_op(inputs[0])
    graph = graph_of(*inputs)
    dtype = tensor_dtype(inputs)
    with graph.as_default(), graph.name_scope(name or "AddN") as scope:
        tensors = [to_tensor(v, dtype, f"inputs_{i}", graph) for i, v in enumerate(inputs)]
        attrs = {"N": len(tensors), "T": tensors[0].dtype}
        return graph.create_op("AddN", tensors, attrs, name=scope).outputs[0]


@register_op("SelectV2")
def _select_v2_shape(op):
    cond, t, e = op.inputs
    check_dtype(cond.dtype, (dtypes.bool,), "condition")
    if t.dtype != e.dtype:
        raise TypeError(f"Input 'e' of 'SelectV2' Op has type {e.dtype.name} that does not "
                        f"match type {t.dtype.name} of argument 't'.")
    shape = broadcast(broadcast(cond.shape, t.shape, op.name), e.shape, op.name)
    return [(t.dtype, shape)]


def where_v2(condition, x, y, name=None) -> Tensor:
    """x where `condition` holds, else y; all three broadcast (op SelectV2).

    Raises: TypeError when condition is not bool or x, y dtypes differ;
      ValueError when the shapes do not broadcast.
    """
    graph = graph_of(condition, x, y)
    dtype = tensor_dtype([x, y])
    with graph.as_default(), graph.name_scope(name or "SelectV2") as scope:
        cond = to_tensor(condition, dtypes.bool, "condition", graph)
        x, y = to_tensor(x, dtype, "t", graph), to_tensor(y, dtype, "e", graph)
        return graph.create_op("SelectV2", [cond, x, y], {"T": x.dtype}, name=scope).outputs[0]


# -- cast -------------------------------------------------------------------------
@register_op("Cast")
def _cast_shape(op):
    x = op.inputs[0]
    if x.dtype != op.get_attr("SrcT"):
        raise TypeError(f"Cast '{op.name}': SrcT {op.get_attr('SrcT').name} does not match "
                        f"input dtype {x.dtype.name}")
    for dt in (x.dtype, op.get_attr("DstT")):
        check_dtype(dt, NUMERIC + (dtypes.bool,))
    return [(op.get_attr("DstT"), x.shape)]


def cast(x, dtype, name=None) -> Tensor:
    """`x` as `dtype` (op Cast); a Tensor already of `dtype` is returned as is.

    Floats cast to integers truncate toward zero; complex to real drops the
    imaginary part.

    Example:
      >>> cast(constant([1.7, -1.7]), dtypes.int32).dtype
      tf.int32
    """
    dtype = dtypes.as_dtype(dtype)
    if isinstance(as_tensor_or_op(x), Tensor) and as_tensor_or_op(x).dtype == dtype:
        return as_tensor_or_op(x)
    graph = graph_of(x)
    with graph.as_default(), graph.name_scope(name or "Cast") as scope:
        x = convert_to_tensor(x, name="x", graph=graph)
        if x.dtype == dtype:
            return x
        attrs = {"SrcT": x.dtype, "DstT": dtype, "Truncate": False}
        return graph.create_op("Cast", [x], attrs, name=scope).outputs[0]


# -- Python operators on Tensors (TF1 names the ops "add", "mul", ...) ----------
def _forward(fn, scope: str):
    return lambda x, y: fn(x, y, name=scope)


def _reflected(fn, scope: str):
    return lambda y, x: fn(x, y, name=scope)


for _name, _fn, _scope in (("add", add, "add"), ("sub", subtract, "sub"),
                           ("mul", multiply, "mul"), ("truediv", truediv, "truediv")):
    register_operator(f"__{_name}__", _forward(_fn, _scope))
    register_operator(f"__r{_name}__", _reflected(_fn, _scope))
register_operator("__pow__", _forward(pow, "pow"))
for _name, _fn, _scope in (("floordiv", floordiv, "floordiv"), ("mod", floormod, "mod")):
    register_operator(f"__{_name}__", _forward(_fn, _scope))
    register_operator(f"__r{_name}__", _reflected(_fn, _scope))
register_operator("__neg__", lambda x: negative(x))
register_operator("__abs__", lambda x: abs(x))
for _name, _fn in (("__lt__", less), ("__le__", less_equal), ("__gt__", greater),
                   ("__ge__", greater_equal)):
    register_operator(_name, _fn)
