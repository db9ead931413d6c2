"""The dashboard's polling thread: stops on request, on False, when its owner goes, at exit."""
from __future__ import annotations

import gc
import threading
import time

import pytest

from nbcluster.jupyter.widgets import status_poller
from nbcluster.jupyter.widgets.status_poller import StatusPoller

pytestmark = pytest.mark.timeout(30)


class Owner:
    """Stands in for a dashboard: counts polls; answers `keep_going`."""

    def __init__(self, keep_going=True, fail=False) -> None:
        self.calls = 0
        self.keep_going = keep_going
        self.fail = fail
        self.threads: set = set()

    def poll(self):
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise RuntimeError("poll failed")
        return self.keep_going


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def pollers():
    started: list = []
    yield started
    for poller in started:
        poller.stop()


def test_polls_on_its_own_daemon_thread_until_stopped(pollers):
    owner = Owner()
    poller = StatusPoller(owner.poll, 0.02, "test-poller").start()
    pollers.append(poller)
    assert poller._thread.daemon
    assert wait_for(lambda: owner.calls >= 3)
    assert owner.threads == {"test-poller"}
    poller.stop()
    assert not poller.alive
    calls = owner.calls
    time.sleep(0.1)
    assert owner.calls == calls


def test_a_poll_that_returns_false_ends_the_thread(pollers):
    owner = Owner(keep_going=False)
    poller = StatusPoller(owner.poll, 0.01, "p").start()
    pollers.append(poller)
    assert wait_for(lambda: not poller.alive)
    assert owner.calls == 1 and poller.polls == 1


def test_a_failing_poll_is_counted_and_polling_goes_on(pollers):
    owner = Owner(fail=True)
    poller = StatusPoller(owner.poll, 0.01, "p").start()
    pollers.append(poller)
    assert wait_for(lambda: poller.errors >= 2)
    assert poller.alive and isinstance(poller.last_exception, RuntimeError)


def test_a_collected_owner_ends_the_thread(pollers):
    owner = Owner()
    poller = StatusPoller(owner.poll, 0.01, "p").start()
    pollers.append(poller)
    assert wait_for(lambda: poller.polls >= 1)
    del owner
    gc.collect()
    assert wait_for(lambda: not poller.alive)


def test_exit_hook_stops_every_live_poller(pollers):
    owners = [Owner(), Owner()]
    started = [StatusPoller(o.poll, 0.01, "p").start() for o in owners]
    pollers.extend(started)
    assert wait_for(lambda: all(o.calls for o in owners))
    status_poller._stop_all()
    assert wait_for(lambda: not any(p.alive for p in started))


def test_stop_from_the_poll_itself_does_not_deadlock(pollers):
    box: list = []

    class SelfStopper:
        def poll(self):
            box[0].stop()  # what close() does when called from the thread
            return True

    owner = SelfStopper()
    poller = StatusPoller(owner.poll, 0.01, "p")
    box.append(poller)
    pollers.append(poller.start())
    assert wait_for(lambda: not poller.alive)
