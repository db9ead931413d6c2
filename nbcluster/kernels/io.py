"""Kernels for checkpoints: SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename.

Rule: nothing read from disk is unpickled. A checkpoint at prefix P is the
JSON index `P.index` plus data files `P-<k>-of-<n>.npz` (zip archives of
`.npy` members, one per tensor, read with `allow_pickle=False`); the index
is written last, so its presence means the data files are complete.
docs/checkpoint.md describes the format. Every file is opened only inside
the running device's root (`file_root.confine`): a served task touches
nothing outside its checkpoint directory.
"""
from __future__ import annotations

import json
import os
import secrets
import zipfile
from typing import Optional

import numpy as np

from nbcluster import errors
from nbcluster.framework import dtypes
from nbcluster.kernels.file_root import confine
from nbcluster.runtime.kernel_table import register_kernel

FORMAT = "nbcluster.checkpoint"
VERSION = 1


# ------------------------------------------------------------------ naming

def sharded_name(prefix: str, shard: int, num_shards: int) -> str:
    """TF's sharded file naming: `<prefix>-00001-of-00002`."""
    return "%s-%05d-of-%05d" % (prefix, shard, num_shards)


def index_file(prefix: str) -> str:
    return prefix + ".index"


def data_file(prefix: str, shard: int, num_shards: int) -> str:
    return sharded_name(prefix, shard, num_shards) + ".npz"


# ------------------------------------------------------------------ index

def read_index(prefix: str, root: Optional[str] = None) -> dict:
    """The parsed, checked index of the checkpoint at `prefix`.

    Raises:
      NotFoundError: there is no index file for `prefix`.
      DataLossError: the index is not one nbcluster wrote (the message names it).
      PermissionDeniedError: the index is outside `root`.
    """
    path = confine(index_file(prefix), root)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(
            None, None, f"Failed to find any checkpoint for prefix {prefix}: no index "
                        f"file {path}") from None
    except OSError as e:
        raise errors.NotFoundError(None, None, f"Cannot read checkpoint index {path}: {e}") \
            from None
    try:
        index = json.loads(raw.decode("utf-8"))
        _check_index(index)
    except (ValueError, TypeError, KeyError) as e:
        raise errors.DataLossError(
            None, None, f"Checkpoint index {path} is corrupt or not an nbcluster "
                        f"checkpoint: {e}") from None
    return index


def _check_index(index) -> None:
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise ValueError(f"format is not {FORMAT!r}")
    if index.get("version") != VERSION:
        raise ValueError(f"unsupported version {index.get('version')!r}")
    shards, tensors = index["shards"], index["tensors"]
    if not isinstance(shards, list) or not isinstance(tensors, dict):
        raise TypeError("'shards' must be a list and 'tensors' an object")
    for shard in shards:
        name = shard["file"]
        if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
            raise ValueError(f"shard file {name!r} is not a plain file name")
    for name, entry in tensors.items():
        shard = entry["shard"]
        if not isinstance(shard, int) or isinstance(shard, bool) or \
                not 0 <= shard < len(shards):
            raise ValueError(f"tensor {name!r} names shard {entry['shard']!r}")
        dtypes.as_dtype(entry["dtype"])
        if not all(isinstance(d, int) and d >= 0 for d in entry["shape"]):
            raise ValueError(f"tensor {name!r} has shape {entry['shape']!r}")


def write_index(prefix: str, shards: list, tensors: dict, root: Optional[str] = None) -> None:
    # One shard or tensor a line: readable, and diffable between checkpoints.
    lines = ['{"format": %s, "version": %d,' % (_json(FORMAT), VERSION),
             ' "shards": [',
             ",\n".join("  " + _json(shard) for shard in shards),
             ' ],',
             ' "tensors": {',
             ",\n".join(f"  {_json(name)}: {_json(tensors[name])}"
                        for name in sorted(tensors)),
             ' }}', '']
    _write_atomically(confine(index_file(prefix), root), "\n".join(lines).encode("utf-8"))


# Inside an index string only these stay as they are; anything else (quotes,
# `$`, backquotes, `;`, spaces, non-ASCII) is written as a JSON \\uXXXX escape,
# so a tensor name such as "$(rm -rf ~)" can never reach a shell, a grep or a
# copy-paste as live text. json.loads reads the escapes back exactly.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:-+,")


def _json_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _PLAIN:
            out.append(ch)
            continue
        code = ord(ch)
        if code > 0xFFFF:  # a surrogate pair, as JSON spells characters past the BMP
            code -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
        else:
            out.append("\\u%04x" % code)
    return '"' + "".join(out) + '"'


def _json(value) -> str:
    """`value` (dicts, lists, str, int, float, bool) as JSON with every string escaped."""
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json_string(str(k))}: {_json(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json(v) for v in value) + "]"
    return json.dumps(value)


def _write_atomically(path: str, data: bytes) -> None:
    temp = f"{path}.tempstate{secrets.token_hex(8)}"
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, path)


# ------------------------------------------------------------------ data files

def write_data_file(path: str, arrays: dict) -> dict:
    """Writes `arrays` (name -> ndarray) as one .npz; returns name -> index entry
    without its shard number. Strings go as their concatenated bytes (uint8)
    with the lengths in the entry, since numpy's fixed-width bytes would drop
    trailing NULs and object arrays would need pickle."""
    entries = {}
    temp = f"{path}.tempstate{secrets.token_hex(8)}"
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, array in arrays.items():
            entry = {"dtype": dtypes.as_dtype(array.dtype).name, "shape": list(array.shape)}
            if array.dtype == object:
                items = list(array.reshape(-1))
                entry["lengths"] = [len(b) for b in items]
                array = np.frombuffer(b"".join(items), dtype=np.uint8)
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                # not ascontiguousarray: it turns a scalar into a vector
                np.lib.format.write_array(member, np.asarray(array, order="C"),
                                          allow_pickle=False)
            entries[name] = entry
    os.replace(temp, path)
    return entries


def read_tensors(prefix: str, index: dict, names: list, root: Optional[str] = None) -> list:
    """The arrays saved under `names`, read from the data files that hold them.

    Raises:
      NotFoundError: a name is not in the checkpoint, or a data file is missing.
      DataLossError: a data file is unreadable or disagrees with the index.
      PermissionDeniedError: a data file is outside `root` (a symlink out of it).
    """
    tensors = index["tensors"]
    for name in names:
        if name not in tensors:
            raise errors.NotFoundError(
                None, None, f"Key {name} not found in checkpoint {prefix}")
    by_shard: dict = {}
    for i, name in enumerate(names):
        by_shard.setdefault(tensors[name]["shard"], []).append(i)
    out: list = [None] * len(names)
    directory = os.path.dirname(prefix)
    for shard, positions in sorted(by_shard.items()):
        path = confine(os.path.join(directory, index["shards"][shard]["file"]), root)
        for i, array in zip(positions, _read_members(path, [names[i] for i in positions])):
            out[i] = _decode(array, tensors[names[i]], names[i], path)
    return out


def _read_members(path: str, names: list) -> list:
    try:
        with zipfile.ZipFile(path) as zf:
            arrays = []
            for name in names:
                with zf.open(name + ".npy") as member:
                    arrays.append(np.lib.format.read_array(member, allow_pickle=False))
            return arrays
    except FileNotFoundError:
        raise errors.NotFoundError(
            None, None, f"Checkpoint data file {path} is missing") from None
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError) as e:
        raise errors.DataLossError(
            None, None, f"Checkpoint data file {path} is corrupt: {e}") from None


def _decode(array: np.ndarray, entry: dict, name: str, path: str) -> np.ndarray:
    dtype = dtypes.as_dtype(entry["dtype"])
    shape = tuple(entry["shape"])
    if dtype == dtypes.string:
        lengths = entry.get("lengths")
        if array.dtype != np.uint8 or not isinstance(lengths, list) or \
                len(lengths) != int(np.prod(shape)) or sum(lengths) != array.size:
            raise errors.DataLossError(
                None, None, f"String tensor {name} in {path} disagrees with its index entry")
        ends = np.cumsum([0] + lengths)
        raw = array.tobytes()
        out = np.empty(len(lengths), dtype=object)
        out[:] = [raw[a:b] for a, b in zip(ends[:-1], ends[1:])]
        return out.reshape(shape)
    if array.dtype != np.dtype(dtype.as_numpy_dtype) or array.shape != shape:
        raise errors.DataLossError(
            None, None, f"Tensor {name} in {path} is {array.dtype}{list(array.shape)} but "
                        f"the index says {dtype.name}{list(shape)}")
    return array


# ------------------------------------------------------------------ kernels

def _text(value, what: str) -> str:
    value = np.asarray(value, dtype=object)
    if value.shape != ():
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be a scalar string, got shape {list(value.shape)}")
    value = value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _texts(value, what: str) -> list:
    value = np.asarray(value, dtype=object)
    if value.ndim != 1:
        raise errors.InvalidArgumentError(
            None, None, f"{what} must be a vector of strings, got shape {list(value.shape)}")
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value]


def _names_and_slices(names, slices, count: int) -> list:
    names, slices = _texts(names, "tensor_names"), _texts(slices, "shape_and_slices")
    if len(names) != count or len(slices) != count:
        raise errors.InvalidArgumentError(
            None, None, f"Expected {count} tensor_names and shape_and_slices, got "
                        f"{len(names)} and {len(slices)}")
    for name, spec in zip(names, slices):
        if spec:  # partitioned variables are not supported (yet)
            raise errors.UnimplementedError(
                None, None, f"Slice spec {spec!r} for tensor {name}: only whole tensors "
                            f"(an empty shape_and_slices entry) are supported")
    return names


@register_kernel("SaveV2", "CPU")
def _save_v2(node, device):
    root = device.file_root

    def save(ctx, prefix, names, slices, *tensors):
        prefix = _text(prefix, "prefix")
        names = _names_and_slices(names, slices, len(tensors))
        if not prefix:
            raise errors.InvalidArgumentError(None, None, "SaveV2: the prefix is empty")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise errors.InvalidArgumentError(None, None, f"Duplicate tensor names {dup}")
        prefix = confine(prefix, root)  # before any directory is made
        if os.path.dirname(prefix):
            os.makedirs(os.path.dirname(prefix), exist_ok=True)
        path = confine(data_file(prefix, 0, 1), root)
        arrays = {n: np.asarray(device.to_numpy(t)) for n, t in zip(names, tensors)}
        entries = {n: {"shard": 0, **e} for n, e in write_data_file(path, arrays).items()}
        write_index(prefix, [{"file": os.path.basename(path), "device": device.name}],
                    entries, root)
        return ()
    return save


@register_kernel("RestoreV2", "CPU")
def _restore_v2(node, device):
    wanted = [dtypes.as_dtype(d) for d in node.attrs.get("dtypes", [])]
    root = device.file_root

    def restore(ctx, prefix, names, slices):
        prefix = confine(_text(prefix, "prefix"), root)
        names = _names_and_slices(names, slices, len(wanted))
        index = read_index(prefix, root)
        for name, dtype in zip(names, wanted):
            stored = index["tensors"].get(name, {}).get("dtype")
            if stored is not None and dtypes.as_dtype(stored) != dtype:
                raise errors.InvalidArgumentError(
                    None, None, f"tensor {name} is {stored} in checkpoint {prefix}, but "
                                f"{dtype.name} was asked for")
        return tuple(read_tensors(prefix, index, names, root))
    return restore


@register_kernel("MergeV2Checkpoints", "CPU")
def _merge_v2(node, device):
    delete_old_dirs = bool(node.attrs.get("delete_old_dirs", True))
    root = device.file_root

    def merge(ctx, prefixes, destination):
        sources = _texts(prefixes, "checkpoint_prefixes")
        merge_checkpoints(sources, _text(destination, "destination_prefix"), delete_old_dirs,
                          root)
        return ()
    return merge


def merge_checkpoints(sources: list, destination: str, delete_old_dirs: bool,
                      root: Optional[str] = None) -> None:
    """Moves the data files of the checkpoints at `sources` under `destination`
    and writes one index for them all; the sources' indexes are removed.

    Raises:
      InvalidArgumentError: no sources, or one tensor name in two of them.
      NotFoundError / DataLossError: a source is missing or corrupt.
      PermissionDeniedError: a source, data file or the destination is outside `root`.
    """
    if not sources:
        raise errors.InvalidArgumentError(None, None, "checkpoint_prefixes is empty")
    sources = [confine(src, root) for src in sources]
    destination = confine(destination, root)
    indexes = [read_index(src, root) for src in sources]  # all checked before anything moves
    total = sum(len(ix["shards"]) for ix in indexes)
    shards, tensors, moves = [], {}, []
    for src, ix in zip(sources, indexes):
        base = len(shards)
        for shard in ix["shards"]:
            target = data_file(destination, len(shards), total)
            moves.append((confine(os.path.join(os.path.dirname(src), shard["file"]), root),
                          confine(target, root)))
            shards.append(dict(shard, file=os.path.basename(target)))
        for name, entry in ix["tensors"].items():
            if name in tensors:
                raise errors.InvalidArgumentError(
                    None, None, f"Tensor {name} is in more than one of the checkpoints "
                                f"being merged into {destination}")
            tensors[name] = dict(entry, shard=entry["shard"] + base)
    if os.path.dirname(destination):
        os.makedirs(os.path.dirname(destination), exist_ok=True)
    for old, new in moves:
        try:
            os.replace(old, new)
        except FileNotFoundError:
            raise errors.NotFoundError(
                None, None, f"Checkpoint data file {old} is missing") from None
    write_index(destination, shards, tensors, root)
    for src in sources:
        if index_file(src) != index_file(destination):
            os.remove(index_file(src))
        if delete_old_dirs and os.path.dirname(src) != os.path.dirname(destination):
            try:
                os.rmdir(os.path.dirname(src))
            except OSError:  # not empty or already gone: TF leaves such dirs too
                pass


@register_kernel("ShardedFilename", "CPU")
def _sharded_filename(node, device):
    def sharded_filename(ctx, basename, shard, num_shards):
        name = sharded_name(_text(basename, "basename"), int(shard), int(num_shards))
        return (np.array(name.encode("utf-8"), dtype=object),)
    return sharded_filename
