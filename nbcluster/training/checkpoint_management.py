"""The "checkpoint" state file of a directory, and finding or removing checkpoints.

The state file is TensorFlow's CheckpointState in protobuf text format
(`model_checkpoint_path: "model.ckpt-3"`, one field a line), so TF's own
`tf.train.latest_checkpoint` reads it too. It is parsed by hand: nothing
here evaluates or unpickles what it reads.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import secrets
from typing import Optional

from nbcluster import errors
from nbcluster.kernels import io as checkpoint_files

DEFAULT_STATE_FILE = "checkpoint"


@dataclasses.dataclass
class CheckpointState:
    """TF's CheckpointState fields: the latest prefix and the ones still kept."""

    model_checkpoint_path: str = ""
    all_model_checkpoint_paths: list = dataclasses.field(default_factory=list)
    all_model_checkpoint_timestamps: list = dataclasses.field(default_factory=list)
    last_preserved_timestamp: float = 0.0


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a complete checkpoint is at `checkpoint_prefix` (its index exists;
    the index is written after every data file)."""
    return os.path.isfile(checkpoint_files.index_file(os.fspath(checkpoint_prefix)))


def _state_path(checkpoint_dir: str, latest_filename: Optional[str]) -> str:
    return os.path.join(checkpoint_dir, latest_filename or DEFAULT_STATE_FILE)


def get_checkpoint_state(checkpoint_dir: str, latest_filename: Optional[str] = None
                         ) -> Optional[CheckpointState]:
    """The state file of `checkpoint_dir`, with relative paths made absolute to it.

    Returns: a CheckpointState, or None when the directory has no state file.
    Raises:
      ValueError: the state file exists but cannot be parsed (the message names it).
    """
    path = _state_path(os.fspath(checkpoint_dir), latest_filename)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    state = _parse(text, path)
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state file {path}: no model_checkpoint_path")

    def absolute(p: str) -> str:
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
    state.model_checkpoint_path = absolute(state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [absolute(p) for p in state.all_model_checkpoint_paths]
    return state


def latest_checkpoint(checkpoint_dir: str, latest_filename: Optional[str] = None
                      ) -> Optional[str]:
    """The prefix of the newest checkpoint recorded in `checkpoint_dir`, or None
    when there is none (or its files are gone).

    Example:
      >>> saver.restore(sess, latest_checkpoint("/tmp/train"))
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path


def update_checkpoint_state(save_dir: str, model_checkpoint_path: str,
                            all_model_checkpoint_paths: Optional[list] = None,
                            latest_filename: Optional[str] = None,
                            all_model_checkpoint_timestamps: Optional[list] = None,
                            last_preserved_timestamp: Optional[float] = None,
                            save_relative_paths: bool = False) -> None:
    """Writes the state file of `save_dir` (atomically: a reader sees the old or
    the new one). `model_checkpoint_path` is kept last among all the paths."""
    paths = [p for p in (all_model_checkpoint_paths or []) if p != model_checkpoint_path]
    paths.append(model_checkpoint_path)
    if save_relative_paths:
        paths = [os.path.relpath(p, save_dir) if os.path.isabs(p) else p for p in paths]
    lines = [f"model_checkpoint_path: {_quote(paths[-1])}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in paths]
    lines += [f"all_model_checkpoint_timestamps: {float(t)!r}"
              for t in all_model_checkpoint_timestamps or []]
    if last_preserved_timestamp is not None:
        lines.append(f"last_preserved_timestamp: {float(last_preserved_timestamp)!r}")
    path = _state_path(os.fspath(save_dir), latest_filename)
    temp = f"{path}.tmp{secrets.token_hex(8)}"
    with open(temp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(temp, path)


def remove_checkpoint(checkpoint_prefix: str) -> None:
    """Deletes the checkpoint's index first (so it stops counting as one), then
    its data files; files already gone are skipped."""
    prefix = os.fspath(checkpoint_prefix)
    try:
        listed = [os.path.join(os.path.dirname(prefix), s["file"])
                  for s in checkpoint_files.read_index(prefix)["shards"]]
    except errors.OpError:  # no readable index: the naming rule still finds the data
        listed = []
    pattern = glob.escape(prefix) + "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].npz"
    for path in [checkpoint_files.index_file(prefix), prefix + ".meta",
                 *listed, *glob.glob(pattern)]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


# -- protobuf text format, the subset CheckpointState uses -----------------------

_FIELD = re.compile(rb'^\s*([a-z_]+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|([^\s"]+))\s*$')
_ESCAPE = re.compile(rb'\\([0-7]{1,3}|x[0-9a-fA-F]{1,2}|.)')
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"a": b"\a", b"b": b"\b", b"f": b"\f",
           b"v": b"\v", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?"}


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quote(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)  # non-ASCII stays UTF-8, which protobuf's parser accepts
    return '"' + "".join(out) + '"'


def _unescape(raw: bytes) -> bytes:
    def one(m):
        code = m.group(1)
        if code[:1].isdigit():
            return bytes([int(code, 8) & 0xFF])
        if code[:1] == b"x":
            return bytes([int(code[1:], 16)])
        if code in _SIMPLE:
            return _SIMPLE[code]
        raise ValueError(f"unknown escape \\{code.decode('latin-1')}")
    return _ESCAPE.sub(one, raw)


def _parse(text: bytes, path: str) -> CheckpointState:
    state = CheckpointState()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith(b"#"):
            continue
        m = _FIELD.match(line)
        try:
            if m is None:
                raise ValueError("expected 'field: value'")
            key, quoted, number_text = m.group(1).decode(), m.group(2), m.group(3)
            if key in ("model_checkpoint_path", "all_model_checkpoint_paths"):
                if quoted is None:
                    raise ValueError(f"{key} must be a quoted string")
                value = _unescape(quoted).decode("utf-8")
                if key == "model_checkpoint_path":
                    state.model_checkpoint_path = value
                else:
                    state.all_model_checkpoint_paths.append(value)
            elif key in ("all_model_checkpoint_timestamps", "last_preserved_timestamp"):
                if number_text is None:
                    raise ValueError(f"{key} must be a number")
                value = float(number_text)
                if key == "last_preserved_timestamp":
                    state.last_preserved_timestamp = value
                else:
                    state.all_model_checkpoint_timestamps.append(value)
            else:
                raise ValueError(f"unknown field {key!r}")
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"Unable to parse checkpoint state file {path}, line {number}: "
                             f"{e}") from None
    return state
