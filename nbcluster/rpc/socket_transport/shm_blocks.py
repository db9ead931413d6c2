"""Large tensors on the same-host data plane through reused shared-memory blocks
(memfd), whose file descriptors travel beside the frame (SCM_RIGHTS).

Rules: a block has no name anywhere (memfd_create: nothing in /dev/shm), so
when a process dies, even by SIGKILL, the kernel frees every block with its
last descriptor and mapping; nothing is left to clean. A block's size is
sealed when it is made, so a mapping of it can never fault on a shrunk file.
The consumer copies a tensor under IN_PLACE_BYTES out of its block before it
reads the next frame; a larger one it reads in place (a read-only array on
the block's mapping) and holds the block while any array views it. The
producer may reuse a block once the connection carries its next request (the
previous reply was then read to its end), except the blocks that request's
HELD frame names (`frames`): those stay lent until a later request leaves
them out. A block lent on a connection that ends is never reused. Frames
stay those of `frames`: a tensor sent this way has form 2 (form 0's header;
its bytes are in the block that the batch's next descriptor names, from
offset 0).

Why: through the socket, a tensor's bytes go through the kernel's buffers in
small pieces (a syscall and two copies per piece); a block is one copy in and,
for smaller tensors, one out, and reusing it avoids the page faults of fresh
memory each step. A 64 MiB tensor's copy out into fresh memory cost more than
its copy in (14 against 9 ms), so a large one is not copied out at all.
`NBCLUSTER_DATA_PLANE_SHM=0` on the producer's side turns blocks off.
"""
from __future__ import annotations

import array
import collections
import mmap
import os
import socket
import threading
import weakref
from typing import Optional

import numpy as np

from nbcluster import errors

try:
    import fcntl
except ImportError:  # not a POSIX host: no memfd either, so no blocks
    fcntl = None

MIN_BYTES = 512 << 10  # smaller tensors go through the socket (a PS MLP's 800 KB weights gain)
# Larger ones too: a block is a second copy of its tensor, kept for reuse.
MAX_BYTES = 256 << 20
MAX_PER_BATCH = 32  # descriptors in one frame (the reader's control buffer holds this many)
_KEEP_FREE = 4  # free blocks a producer keeps for its next replies ...
_KEEP_FREE_BYTES = 256 << 20  # ... up to this many bytes in all
_KEEP_MAPPED = 8  # blocks a consumer process keeps mapped, the most recently used ...
_KEEP_MAPPED_BYTES = 256 << 20  # ... up to this many bytes in all
# From here up a consumer reads a tensor in its block: a 64 MiB pull went from 2.4 to
# 6.3 GB/s. Smaller ones are copied out (the MLP's 0.8 MB tied in place: docs/performance.md).
IN_PLACE_BYTES = 4 << 20
_SIZE_SEALS = sum(getattr(fcntl, name, 0) for name in
                  ("F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL"))
MAX_HELD = 1 << 16  # blocks one HELD frame may name
FD_SPACE = socket.CMSG_SPACE(MAX_PER_BATCH * array.array("i").itemsize)


def enabled() -> bool:
    """Whether this process sends large tensors through blocks."""
    return hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS") and \
        os.environ.get("NBCLUSTER_DATA_PLANE_SHM") != "0"


class _Block:
    def __init__(self, size: int) -> None:
        self.fd = os.memfd_create("nbcluster-tensor", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, _SIZE_SEALS)
            self.map = mmap.mmap(self.fd, size)
        except OSError:
            os.close(self.fd)
            raise
        self.size = size
        self.ino = os.fstat(self.fd).st_ino  # how a consumer's HELD frame names it

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)


class BlockPool:
    """A producer's blocks, shared by its connections: each block is lent to
    one reply and comes back when that connection carries its next request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list = []
        self._closed = False

    def lender(self) -> "Lender":
        """What one connection lends from this pool."""
        return Lender(self)

    def take(self, nbytes: int) -> Optional[_Block]:
        with self._lock:
            # A free block up to twice the size is reused; memory it wastes is bounded.
            fits = [b for b in self._free if nbytes <= b.size <= 2 * nbytes]
            if fits:
                block = min(fits, key=lambda b: b.size)
                self._free.remove(block)
                return block
        try:
            return _Block(nbytes)
        except OSError:
            return None  # no memory for a block now: the socket still works

    def give_back(self, blocks: list) -> None:
        with self._lock:
            if self._closed:
                old = blocks
            else:
                self._free += blocks
                old = []
                while self._free and (len(self._free) > _KEEP_FREE or
                                      sum(b.size for b in self._free) > _KEEP_FREE_BYTES):
                    old.append(self._free.pop(0))
        for block in old:
            block.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        for block in free:
            block.close()


class Lender:
    """One producer connection's blocks out on loan (one thread at a time uses it)."""

    def __init__(self, pool: BlockPool) -> None:
        self._pool = pool
        self._lent: list = []
        self._unsent: list = []  # descriptors of blocks lent since the last `take_fds`

    def share(self, arr: np.ndarray) -> bool:
        """Copies `arr` (C-order, little-endian) into a block for the next frame;
        False when it should go through the socket instead."""
        if not MIN_BYTES <= arr.nbytes <= MAX_BYTES or len(self._unsent) >= MAX_PER_BATCH:
            return False
        block = self._pool.take(arr.nbytes)
        if block is None:
            return False
        np.frombuffer(block.map, np.uint8, arr.nbytes)[:] = arr.reshape(-1).view(np.uint8)
        self._lent.append(block)
        self._unsent.append(block.fd)
        return True

    def take_fds(self) -> list:
        """The descriptors the next frame must carry, in the order of its form-2 tensors."""
        fds, self._unsent = self._unsent, []
        return fds

    def reclaim(self, held=()) -> None:
        """The previous reply was read to its end: its blocks may be reused, except
        those the consumer still reads in place (`held`: their inode numbers)."""
        lent, self._unsent = self._lent, []
        self._lent = [block for block in lent if block.ino in held]
        back = [block for block in lent if block.ino not in held]
        if back:
            self._pool.give_back(back)

    def close(self) -> None:
        """The connection ended: its consumer may still read any of its blocks in
        place and can no longer say when it stops, so none of them is reused."""
        lent, self._lent, self._unsent = self._lent, [], []
        for block in lent:
            block.close()


class _Mapped:
    """The blocks this process keeps mapped (the most recently used): a block a
    producer reuses is read again without faulting its pages in afresh."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._maps: "collections.OrderedDict" = collections.OrderedDict()

    def view(self, fd: int, nbytes: int) -> tuple:
        """(the block's read-only mapping, its inode number)."""
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        with self._lock:
            block = self._maps.pop(key, None)
            if block is None or len(block) < nbytes:
                if info.st_size < nbytes:
                    raise errors.DataLossError(
                        None, None, f"Malformed data-plane frame: a shared-memory block of "
                                    f"{info.st_size} bytes for a tensor of {nbytes}")
                block = mmap.mmap(fd, info.st_size, prot=mmap.PROT_READ)
            self._maps[key] = block
            old = []
            while len(self._maps) > 1 and (len(self._maps) > _KEEP_MAPPED or sum(
                    len(m) for m in self._maps.values()) > _KEEP_MAPPED_BYTES):
                old.append(self._maps.popitem(last=False)[1])
        for stale in old:
            try:
                stale.close()
            except BufferError:
                pass  # an array still views it; it closes when collected
        return block, info.st_ino

    def __len__(self) -> int:
        return len(self._maps)


MAPPED = _Mapped()


class Received:
    """A consumer connection's descriptors not yet read, and the blocks its
    arrays read in place (by inode number, with how many arrays)."""

    def __init__(self) -> None:
        self.fds: collections.deque = collections.deque()
        # Only the thread using the connection touches `_held`; a finalizer, which
        # runs on whichever thread frees the last view (inside a GC pass, perhaps
        # while that thread is in here), only appends to `_let_go` (atomic), so no
        # lock is taken where a finalizer could find it held.
        self._held: collections.Counter = collections.Counter()
        self._let_go: collections.deque = collections.deque()

    def held(self) -> tuple:
        """The blocks some array still reads in place: the next request's HELD frame."""
        while self._let_go:
            ino = self._let_go.popleft()
            self._held[ino] -= 1
            if self._held[ino] <= 0:
                del self._held[ino]
        return tuple(self._held)

    def add(self, ancdata: list, flags: int) -> None:
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                self.fds.extend(fds)
        if flags & socket.MSG_CTRUNC:
            raise errors.DataLossError(None, None, "Malformed data-plane frame: more shared-"
                                                   "memory descriptors than one frame carries")

    def read(self, nbytes: int, dtype: np.dtype, shape: tuple, out_factory) -> np.ndarray:
        """The tensor in the next descriptor's block: from IN_PLACE_BYTES up a
        read-only array on the block, which stays held until the array and every
        view of it are freed; else copied into `out_factory(shape, dtype)`."""
        if not self.fds:
            raise errors.DataLossError(None, None, "Malformed data-plane frame: a shared-"
                                                   "memory tensor without its descriptor")
        fd = self.fds.popleft()
        try:
            block, ino = MAPPED.view(fd, nbytes)
            in_place = nbytes >= IN_PLACE_BYTES and _size_sealed(fd)
        finally:
            os.close(fd)
        if in_place:
            # numpy makes `flat` the base of every view taken from it, so its
            # finalizer runs once the last array reading the block is gone
            flat = np.frombuffer(block, dtype, nbytes // dtype.itemsize)
            self._held[ino] += 1
            weakref.finalize(flat, self._let_go.append, ino)
            return flat.reshape(shape)
        arr = out_factory(shape, dtype)
        if nbytes:
            arr.reshape(-1).view(np.uint8)[:] = np.frombuffer(block, np.uint8, nbytes)
        return arr

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.popleft())

    def __del__(self) -> None:
        try:
            self.close()
        except (OSError, ValueError):
            pass


def _size_sealed(fd: int) -> bool:
    """Whether the block's size is sealed (a producer that could shrink it would
    make a mapping fault): only then is it read in place."""
    try:
        return fcntl.fcntl(fd, fcntl.F_GET_SEALS) & _SIZE_SEALS == _SIZE_SEALS
    except (OSError, AttributeError):  # AttributeError: no seals on this host
        return False


def fd_message(fds: list) -> list:
    """The ancillary data of a sendmsg carrying `fds`."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
