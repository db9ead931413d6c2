"""Peers' streams written by the thread that lands their tensors (a StepRendezvous's part).

Rule: a stream's batches are written by whichever thread lands its tensors
(a Send's, at the moment it would wake the stream's serving thread), never
blocking it; the serving thread acts only on what that thread cannot do (a
write left over, a failure, an abort, the caller gone). All state here is
guarded by the rendezvous lock (`_lock`, `_cond`, `_values`, `error` are the
StepRendezvous's own).
"""
from __future__ import annotations

import threading
from typing import Callable, Optional


class PushedStreams:
    """The pushed streams of one step's rendezvous (mixed into StepRendezvous,
    whose `__init__` sets `_pushes` to [])."""

    def add_push(self, keys: list, deliver: Callable,
                 wakeup: Optional[Callable[[], None]] = None) -> "Push":
        """A peer's stream of `keys` (in that order), written by whichever
        thread lands them: the Send's thread, at the moment it would wake
        the stream's serving thread, calls `deliver(batch)` ([(key, value)],
        this lock released). `deliver` must not block: it returns None when
        the batch is written, else a callable that writes what is left,
        which `await_push` hands to the serving thread. The serving thread
        then wakes once per stream, at its end, instead of once per batch
        (and never for another key's send). Writes what has landed already,
        on this thread.

        `wakeup`, if given, is called (lock held: it must only signal) for
        what the serving thread must act on: a leftover, a failure, an
        abort or `wake`; not at the stream's end, unless that thread waits
        for it (`await_push`'s `idle`)."""
        push = Push(keys, deliver, self._lock, wakeup)
        with self._cond:
            self._pushes.append(push)
        self._run_push(push)
        return push

    def remove_push(self, push: "Push") -> Optional[Callable]:
        """Ends `push`'s stream: no landing thread writes to it from now on.
        Returns what a `deliver` under way at that moment left unwritten (a
        callable), else None; the connection's next bytes must be those.

        Waits for that `deliver` (it never blocks): a stream failed by an
        abort or a deadline is removed between `await_push`'s raise and the
        error frame, and a Send may land a key just then."""
        with self._cond:
            push.removed = True  # a landing thread that picked it just before writes nothing
            while push.delivering:
                push.draining = True
                push.cond.wait()
            push.draining = False
            if push in self._pushes:
                self._pushes.remove(push)
            leftover, push.leftover = push.leftover, None
        return leftover

    def await_push(self, push: "Push", deadline: Optional[float] = None,
                   stopped: Callable[[], bool] = lambda: False,
                   idle: Optional[Callable[[Optional[float]], bool]] = None):
        """Waits for `push`'s stream: None once every key was written (or
        `stopped()`, checked on every `wake`), else a callable writing what
        a `deliver` could not (call it, then `resume_push`).

        `idle(timeout)`, if given, is how the serving thread waits (lock
        released) until `wakeup` fired, or something else it watches
        happened (True: e.g. its connection's next request, which comes
        only once the stream was read to its end), or `timeout` passed. The
        stream's end then wakes nobody: its thread learns of it from that
        next request. After a True it waits on the lock's condition.

        Raises:
          what a `deliver` raised; the step's error once it is aborted
          while keys are left; DeadlineExceededError.
        """
        with self._cond:
            while True:
                if push.failure is not None:
                    raise push.failure
                if push.leftover is not None:
                    leftover, push.leftover = push.leftover, None
                    push.writing = True  # no deliver overtakes it: `resume_push` ends it
                    return leftover
                if push.writing:
                    # Whatever ends the stream waits for that write (it never
                    # blocks): an error frame must not interleave with it.
                    push.draining = True
                    push.cond.wait()
                    continue
                push.draining = False
                if not push.left:
                    return None
                go_on, timeout = self._may_wait(deadline, stopped, push.left)
                if not go_on:
                    return None
                if idle is None or push.waiting:
                    push.waiting = True  # the stream's end wakes it
                    push.cond.wait(timeout)
                    continue
                self._cond.release()
                try:
                    push.waiting = idle(timeout)
                finally:
                    self._cond.acquire()

    def resume_push(self, push: "Push") -> None:
        """The serving thread wrote `await_push`'s leftover: writes what
        landed meanwhile, here, and lets the landing threads write again."""
        with self._cond:
            push.writing = False
        self._run_push(push)

    def _due_locked(self) -> list:
        values = self._values
        return [push for push in self._pushes if not push.writing and push.leftover is None
                and push.failure is None and any(key in values for key in push.left)]

    def _push_all(self, due: list) -> None:
        for push in due:
            self._run_push(push)

    def _run_push(self, push: "Push") -> None:
        """Delivers `push`'s landed keys, batch after batch, unless another
        thread writes it (lock not held on entry)."""
        with self._cond:
            while not (push.writing or push.removed) and push.leftover is None \
                    and push.failure is None:
                values = self._values
                batch = [(key, values[key]) for key in push.left if key in values]
                if not batch:
                    break
                push.left = [key for key in push.left if key not in values]
                push.writing = push.delivering = True
                self._cond.release()
                leftover, failure = None, None
                try:
                    leftover = push.deliver(batch)
                except BaseException as e:  # noqa: BLE001 - the serving thread re-raises it
                    failure = e
                finally:
                    self._cond.acquire()
                    push.writing = push.delivering = False
                push.leftover, push.failure = leftover, failure
                if leftover is not None or failure is not None:
                    push.notify()  # the serving thread: write, or fail
                elif push.draining or (push.waiting and not push.left):
                    push.cond.notify()  # the serving thread waits for this write, or the end


class Push:
    """A peer's stream of tensors of this task, written by the threads that land
    them (`StepRendezvous.add_push`); its state is guarded by the rendezvous lock."""

    def __init__(self, keys: list, deliver: Callable, lock,
                 wakeup: Optional[Callable[[], None]] = None) -> None:
        self.left = list(keys)  # not delivered yet, in the stream's order
        self.deliver = deliver
        self.cond = threading.Condition(lock)  # wakes only the stream's serving thread
        self.wakeup = wakeup
        self.waiting = wakeup is None  # the serving thread waits on `cond` for the end
        self.writing = False  # a thread is in `deliver` or writes a leftover
        self.delivering = False  # a thread is in `deliver` (not the serving thread's leftover)
        self.draining = False  # the serving thread waits for that write to end
        self.removed = False  # its stream ended: nothing more is written to it
        self.leftover: Optional[Callable] = None  # for the serving thread to write
        self.failure: Optional[BaseException] = None  # what a `deliver` raised

    def notify(self) -> None:
        """Wakes the serving thread to look at the push again (lock held)."""
        self.cond.notify()
        if self.wakeup is not None:
            self.wakeup()
