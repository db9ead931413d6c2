"""`DEAD`: the one value a dead tensor holds (a Switch's untaken output, and what
flows from it), shared by the frame executor, the control-flow kernels and the
Send/Recv of control-flow graphs. It lives here, below kernels/, so the
runtime never imports a kernel module."""
from __future__ import annotations


class _Dead:
    """The value of a tensor on an untaken branch."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()
