"""The datasets made from values: from_tensors, from_tensor_slices, range, from_generator,
each as the (variant, element_spec) pair of its op (Dataset's static methods wrap it).

from_generator's generator is a Python callable of the process that builds the
dataset; it is never pickled or sent anywhere. Its GeneratorDataset op names
it by a token of that process, so the op runs only on a task of that process
(an in-process Session, or a Server started there); a task in another process
fails with FailedPreconditionError naming the token. (TF's GeneratorDataset
calls its generator through init/next/finalize functions of PyFunc ops, whose
token has the same one-process rule; here the op names the token itself.)
"""
from __future__ import annotations

from typing import Callable, Optional

from nbcluster.data import structure
from nbcluster.data.dataset_value import add_dataset_op, int64_input
from nbcluster.framework import dtypes
from nbcluster.framework.tensor_shape import TensorShape
from nbcluster.kernels.data_transforms import register_generator


def from_tensors(tensors, name: Optional[str] = None) -> tuple:
    """A dataset of one element, `tensors`.

    Raises:
      TypeError: a leaf that does not convert to a tensor.
    """
    element = structure.to_tensors(tensors, "`tensors`")
    leaves = structure.flatten(element)
    return add_dataset_op("TensorDataset", leaves, structure.spec_of(element), name=name,
                        types_attr="Toutput_types")


def from_tensor_slices(tensors, name: Optional[str] = None) -> tuple:
    """A dataset of the rows of `tensors` (all leaves cut along their first dimension).

    Raises:
      ValueError: a scalar leaf, or leaves whose first dimensions differ.
      TypeError: a leaf that does not convert to a tensor.
    """
    element = structure.to_tensors(tensors, "`tensors`")
    leaves = structure.flatten(element)
    if not leaves:
        raise ValueError("Invalid `element`. `element` should not be empty.")
    first = None
    for t in leaves:
        if t.shape.rank == 0:
            raise ValueError(f"Unbatching a tensor is only supported for rank >= 1, but "
                             f"{t.name} has shape {t.shape}")
        rows = t.shape[0] if t.shape.rank else None
        if rows is not None and first is not None and rows != first:
            raise ValueError(f"Dimensions {first} and {rows} are not compatible: the "
                             f"components of from_tensor_slices must share their first "
                             f"dimension ({t.name} has shape {t.shape})")
        first = rows if rows is not None else first
    spec = structure.pack_as(element, [structure.TensorSpec(
        TensorShape(t.shape.as_list()[1:]) if t.shape.rank is not None else TensorShape(None),
        t.dtype) for t in leaves])
    return add_dataset_op("TensorSliceDataset", leaves, spec,
                        {"is_files": False, "replicate_on_split": False}, name,
                        types_attr="Toutput_types")


def range_(*args, output_type=dtypes.int64, name: Optional[str] = None) -> tuple:
    """`range(stop)`, `range(start, stop)`, `range(start, stop, step)` as a dataset."""
    if not 1 <= len(args) <= 3:
        raise ValueError(f"Invalid `args`. The length of `args` should be between 1 and 3 "
                         f"but was {len(args)}.")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else \
        (args[0], args[1], 1) if len(args) == 2 else args
    inputs = [int64_input(start, "start"), int64_input(stop, "stop"), int64_input(step, "step")]
    spec = structure.TensorSpec([], dtypes.as_dtype(output_type))
    return add_dataset_op("RangeDataset", inputs, spec, name=name)


def from_generator(generator: Callable, output_types=None, output_shapes=None, args=None,
                   output_signature=None, name: Optional[str] = None) -> tuple:
    """A dataset of what `generator()` yields, converted to `output_types`.

    The generator runs in this process (see the module docstring).
    Raises:
      TypeError: `generator` is not callable, or neither output_types nor
        output_signature is given.
    """
    if not callable(generator):
        raise TypeError("`generator` must be a Python callable.")
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError("The `output_types` and `output_shapes` arguments can only be "
                            "used without `output_signature`.")
        spec = output_signature
    else:
        if output_types is None:
            raise TypeError("The `output_types` argument can not be None when "
                            "`output_signature` is None.")
        types = structure.nested_map(output_types, dtypes.as_dtype)
        shapes = output_shapes if output_shapes is not None else \
            structure.pack_as(types, [TensorShape(None)] * len(structure.flatten(types)))
        shape_leaves = structure.shape_leaves(shapes)
        if len(shape_leaves) != len(structure.flatten(types)):
            raise TypeError(f"`output_shapes` {output_shapes!r} does not match the "
                            f"structure of `output_types` {output_types!r}")
        spec = structure.pack_as(types, [structure.TensorSpec(s, t) for t, s in
                                         zip(structure.flatten(types), shape_leaves)])
    call_args = tuple(args or ())
    template = spec

    def flat_generator():
        for element in generator(*call_args):
            yield _flat_values(element, template)

    token = register_generator(flat_generator)
    return add_dataset_op("GeneratorDataset", [], spec, {"token": token}, name)


def _flat_values(element, spec) -> list:
    n = len(structure.flatten(spec))
    if n == 1 and not isinstance(spec, (tuple, dict)):
        return [element]
    values = structure.flatten_element(element)
    if len(values) != n:
        raise TypeError(f"`generator` yielded an element that did not match the expected "
                        f"structure. The expected structure was {spec}, but the yielded "
                        f"element was {element!r}.")
    return values
