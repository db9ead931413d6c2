"""Byte counts and durations as every widget prints them ('1.5 KiB', '8.1 ms')."""
from __future__ import annotations

from typing import Optional

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(count: Optional[int]) -> str:
    """`count` bytes in binary units, 3 significant digits: '512 B', '1.5 KiB', '24 GiB'.

    Args:
      count: a byte count, or None when it is not known ('? B').

    Raises:
      ValueError: `count` is negative.
    """
    if count is None:
        return "? B"
    if count < 0:
        raise ValueError(f"a byte count cannot be negative, not {count!r}")
    value, unit = float(count), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    if unit == 0:
        return f"{int(count)} B"
    text = f"{value:.3g}" if value < 1000 else f"{value:.0f}"
    return f"{text} {_UNITS[unit]}"


def format_us(us: float) -> str:
    """A duration in microseconds: '812 µs', '8.1 ms', '2.35 s'."""
    if us < 1000:
        return f"{us:.0f} µs"
    if us < 1e6:
        return f"{us / 1e3:.1f} ms"
    return f"{us / 1e6:.2f} s"
