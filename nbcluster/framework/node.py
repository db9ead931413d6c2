"""The runtime's view of one graph node: a plain value, no graph attached.

Sessions hand these to the master; the wire converts them to and from
NodeDef protos (`graph_def.py`). Input strings follow TF: "op" for output 0,
"op:1" for others, "^op" for a control input.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Node:
    name: str
    op: str
    inputs: tuple = ()
    device: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def data_inputs(self) -> list:
        return [i for i in self.inputs if not i.startswith("^")]

    def control_inputs(self) -> list:
        return [i[1:] for i in self.inputs if i.startswith("^")]

    def with_changes(self, **changes) -> "Node":
        values = dict(name=self.name, op=self.op, inputs=self.inputs,
                      device=self.device, attrs=self.attrs)
        values.update(changes)
        return Node(**values)


def parse_input(ref: str) -> tuple:
    """'op:1' -> ('op', 1); 'op' -> ('op', 0); '^op' -> ('op', -1)."""
    if ref.startswith("^"):
        return ref[1:], -1
    name, sep, index = ref.rpartition(":")
    if sep and index.isdigit():
        return name, int(index)
    return ref, 0


def tensor_name(op_name: str, index: int) -> str:
    """The canonical name a fetch or feed uses: always with the index."""
    return f"{op_name}:{index}"


def input_ref(op_name: str, index: int) -> str:
    return op_name if index == 0 else f"{op_name}:{index}"
