"""The `tasks` fixture: servers of nbcluster or real TensorFlow, each a process."""
from __future__ import annotations

import pytest
from tensorflow_processes import Tasks


@pytest.fixture
def tasks():
    started = Tasks()
    yield started
    started.stop()
