"""DynamicPartition and DynamicStitch (ParallelDynamicStitch) kernels on numpy (CPU) and cupy (GPU).

Rule: every partition and index value is checked before it is used; a bad one
is an InvalidArgumentError naming its position and value, as TF words it.
"""
from __future__ import annotations

from nbcluster.kernels.array import invalid, shape_str
from nbcluster.kernels.indexing import first_out_of_range, position_str
from nbcluster.kernels.math import DEVICES
from nbcluster.runtime.kernel_table import register_kernel


def _check_prefix(node, data, prefix, names: tuple) -> None:
    if tuple(data.shape[:prefix.ndim]) != tuple(prefix.shape):
        raise invalid(f"{names[0]}.shape = {shape_str(data.shape)} does not start with "
                      f"{names[1]}.shape = {shape_str(prefix.shape)}", node)


@register_kernel("DynamicPartition", *DEVICES)
def _dynamic_partition(node, device):
    xp = device.xp
    count = int(node.attrs["num_partitions"])

    def compute(ctx, data, partitions):
        _check_prefix(node, data, partitions, ("data", "partitions"))
        bad = first_out_of_range(device, xp, partitions, count)
        if bad is not None:
            raise invalid(f"{position_str('partitions', bad[0])} = {bad[1]} is not in "
                          f"[0, {count})", node)
        return tuple(data[partitions == i] for i in range(count))
    return compute


@register_kernel("ParallelDynamicStitch", *DEVICES)
@register_kernel("DynamicStitch", *DEVICES)
def _dynamic_stitch(node, device):
    xp = device.xp
    n = int(node.attrs["N"])

    def compute(ctx, *inputs):
        indices, data = inputs[:n], inputs[n:]
        for m, (index, values) in enumerate(zip(indices, data)):
            _check_prefix(node, values, index, (f"data[{m}]", f"indices[{m}]"))
            if bool((index < 0).any()):
                bad = first_out_of_range(device, xp, index, 1 << 62)
                raise invalid(f"{position_str(f'indices[{m}]', bad[0])} = {bad[1]} is not in "
                              f"[0, inf)", node)
        rest = data[0].shape[indices[0].ndim:]
        for m, (index, values) in enumerate(zip(indices, data)):
            if tuple(values.shape[index.ndim:]) != tuple(rest):
                raise invalid(f"Need data[0].shape[{indices[0].ndim}:] = data[{m}].shape"
                              f"[{index.ndim}:], got data[0].shape = {list(data[0].shape)}, "
                              f"data[{m}].shape = {list(values.shape)}, indices[0].shape = "
                              f"{list(indices[0].shape)}, indices[{m}].shape = "
                              f"{list(index.shape)}", node)
        rows = 1 + max((int(index.max()) for index in indices if index.size), default=-1)
        merged = xp.zeros((rows,) + tuple(rest), dtype=data[0].dtype)
        for index, values in zip(indices, data):  # later data overwrite earlier
            merged[index.reshape(-1)] = values.reshape((-1,) + tuple(rest))
        return (merged,)
    return compute
