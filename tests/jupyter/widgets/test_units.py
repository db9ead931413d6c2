"""Byte counts and durations, as every widget prints them."""
from __future__ import annotations

import pytest

from nbcluster.jupyter.widgets.units import format_bytes, format_us

pytestmark = pytest.mark.timeout(10)

GIB = 1 << 30


@pytest.mark.parametrize("count, text", [
    (None, "? B"), (0, "0 B"), (24, "24 B"), (1023, "1023 B"), (1024, "1 KiB"),
    (1536, "1.5 KiB"), (3 << 20, "3 MiB"), (10 * 1024 * 1024 + 300 * 1024, "10.3 MiB"),
    (24 * GIB, "24 GiB"), (int(15.54 * GIB), "15.5 GiB"), (1000 * 1024 * 1024, "1000 MiB"),
    (3 << 50, "3 PiB")])
def test_format_bytes_uses_binary_units(count, text):
    assert format_bytes(count) == text


def test_format_bytes_refuses_negative_counts():
    with pytest.raises(ValueError, match="-5"):
        format_bytes(-5)


@pytest.mark.parametrize(("us", "text"), [(0, "0 µs"), (812.4, "812 µs"), (8123, "8.1 ms"),
                                          (2_345_000, "2.35 s")])
def test_format_us(us, text):
    assert format_us(us) == text
