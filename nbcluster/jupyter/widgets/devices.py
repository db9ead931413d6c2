"""Device names as the widgets show them: job → task → device groups and one colour each."""
from __future__ import annotations

import hashlib
from typing import NamedTuple

from nbcluster import DeviceSpec

# Distinct, colour-blind-friendly hues (Okabe–Ito, then Tableau), light enough for black text.
_PALETTE = ("#56B4E9", "#E69F00", "#009E73", "#F0E442", "#CC79A7", "#D55E00",
            "#8CD17D", "#B6992D", "#86BCB6", "#FF9D9A", "#A0CBE8", "#FFBE7D")
UNPLACED = "#DDDDDD"  # a node with no device requested


class DevicePlace(NamedTuple):
    """Where a device sits in the job → task → device grouping."""

    job: str        # "" when the name has no job
    task: str       # "/job:ps/task:0", or "" when the name has no task
    device: str     # the name as given, canonical where it parses


def place_of(name: str) -> DevicePlace:
    """Splits a (possibly partial) device name into its job, task and device.

    Args:
      name: a device string such as "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:worker/task:1" or "" (unplaced).

    Returns:
      DevicePlace; a name that does not parse is kept whole as its own device.
    """
    if not name:
        return DevicePlace("", "", "")
    try:
        spec = DeviceSpec.from_string(name)
    except Exception:  # noqa: BLE001 - a foreign name (e.g. "/job:client") still gets a box
        return DevicePlace("", "", name)
    job = spec.job or ""
    task = f"/job:{job}/task:{spec.task}" if job and spec.task is not None else ""
    return DevicePlace(job, task, spec.to_string())


def color_of(name: str, known: list[str] | None = None) -> str:
    """A stable colour for a device: by its index in `known` when given (so a
    small cluster gets distinct colours), else by a hash of the name.

    Args:
      name: the device name ("" gives the unplaced grey).
      known: the sorted device names of the view, or None.

    Returns:
      a CSS colour "#RRGGBB".
    """
    if not name:
        return UNPLACED
    if known and name in known:
        return _PALETTE[known.index(name) % len(_PALETTE)]
    digest = hashlib.blake2s(name.encode(), digest_size=2).digest()
    return _PALETTE[int.from_bytes(digest, "big") % len(_PALETTE)]
