"""A task's `--cluster` and `--config` values: JSON text, or the path of a JSON file.

The server's command line and the `%tfserver` magics take them the same way.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from google.protobuf import json_format

from nbcluster.proto import config_pb2


def _text(option: str, value: str) -> str:
    """`value` itself when it looks like JSON, else the contents of that file."""
    if value.lstrip().startswith(("{", "[")):
        return value
    if not os.path.isfile(value):
        raise ValueError(f"{option}: {value!r} is neither a JSON object nor a readable file")
    with open(value, encoding="utf-8") as f:
        return f.read()


def load_cluster(value: str) -> dict:
    """The cluster dict from `--cluster` (JSON text or a file path)."""
    text = _text("--cluster", value)
    try:
        cluster = json.loads(text)
    except json.JSONDecodeError as e:
        where = "" if text is value else f" in {value!r}"
        raise ValueError(f"--cluster: malformed cluster JSON{where}: {e.msg} at line "
                         f"{e.lineno} column {e.colno}") from None
    if not isinstance(cluster, dict):
        raise ValueError(f"--cluster: the cluster must be a JSON object mapping job names to "
                         f"addresses, not {type(cluster).__name__}")
    return cluster


def load_config(value: Optional[str]) -> Optional[config_pb2.ConfigProto]:
    """The ConfigProto from `--config` (protobuf's JSON mapping, as text or a file), or None."""
    if value is None:
        return None
    try:
        return json_format.Parse(_text("--config", value), config_pb2.ConfigProto())
    except json_format.ParseError as e:
        message = " ".join(str(e).split())  # protobuf's message spans lines
        raise ValueError(f"--config: malformed ConfigProto JSON: {message}") from None
