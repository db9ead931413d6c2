"""Unit tests for nbcluster.framework.device_spec: parse, print, merge, match."""
import dataclasses

import pytest

from nbcluster.errors import InvalidArgumentError
from nbcluster.framework.device_spec import (
    DeviceSpec,
    canonical_name,
    is_compatible,
    is_valid_job_name,
)

pytestmark = pytest.mark.timeout(30)

PARSE_CASES = [
    # string, (job, replica, task, device_type, device_index), canonical string
    ("/job:ps/replica:0/task:1/device:CPU:0", ("ps", 0, 1, "CPU", 0),
     "/job:ps/replica:0/task:1/device:CPU:0"),
    ("/cpu:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("/gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("/CPU:3", (None, None, None, "CPU", 3), "/device:CPU:3"),
    ("/device:GPU:0", (None, None, None, "GPU", 0), "/device:GPU:0"),
    ("/device:gpu:2", (None, None, None, "GPU", 2), "/device:GPU:2"),
    ("CPU:0", (None, None, None, "CPU", 0), "/device:CPU:0"),
    ("gpu:1", (None, None, None, "GPU", 1), "/device:GPU:1"),
    ("GPU", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/job:worker/task:1", ("worker", None, 1, None, None), "/job:worker/task:1"),
    ("job:worker/task:1", ("worker", None, 1, None, None), "/job:worker/task:1"),
    ("", (None, None, None, None, None), ""),
    ("/", (None, None, None, None, None), ""),
    ("/device:CPU:*", (None, None, None, "CPU", None), "/device:CPU:*"),
    ("/device:CPU", (None, None, None, "CPU", None), "/device:CPU:*"),
    ("/gpu:*", (None, None, None, "GPU", None), "/device:GPU:*"),
    ("/job:*/replica:*/task:*", (None, None, None, None, None), ""),
    ("/job:ps//task:2", ("ps", None, 2, None, None), "/job:ps/task:2"),
    ("/job:ps/device:XLA_CPU:0", ("ps", None, None, "XLA_CPU", 0), "/job:ps/device:XLA_CPU:0"),
    ("/task:3/job:w", ("w", None, 3, None, None), "/job:w/task:3"),
    ("/job:localhost/replica:0/task:0/device:CPU:0", ("localhost", 0, 0, "CPU", 0),
     "/job:localhost/replica:0/task:0/device:CPU:0"),
]


@pytest.mark.parametrize("text,parts,canonical", PARSE_CASES)
def test_from_string(text, parts, canonical):
    spec = DeviceSpec.from_string(text)
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == parts
    assert spec.to_string() == canonical
    assert str(spec) == canonical
    assert DeviceSpec.from_string(canonical) == spec  # round trip


def test_from_string_none_and_spec():
    assert DeviceSpec.from_string(None) == DeviceSpec()
    spec = DeviceSpec(job="ps")
    assert DeviceSpec.from_string(spec) is spec


BAD_STRINGS = [
    ("/job:", "''"),
    ("/job:my-job", "my-job"),
    ("/job:1ps", "1ps"),
    ("/task:x", "'x'"),
    ("/task:-1", "-1"),
    ("/replica:1.5", "1.5"),
    ("/gpu:zero", "zero"),
    ("/foo:1", "foo:1"),
    ("/device:CPU:0:1", "device:CPU:0:1"),
    ("/device:C-PU:0", "C-PU"),
    ("/device:", "''"),
    ("/job:ps:1", "job:ps:1"),
    ("/cpu:0/gpu:1", "device type"),
    ("/job:a/job:b", "job"),
    ("/task:99999999999", "99999999999"),
]


@pytest.mark.parametrize("text,named", BAD_STRINGS)
def test_malformed_strings(text, named):
    with pytest.raises(InvalidArgumentError) as info:
        DeviceSpec.from_string(text)
    assert repr(text) in info.value.message
    assert named in info.value.message


def test_from_string_non_string_is_type_error():
    with pytest.raises(TypeError, match="42"):
        DeviceSpec.from_string(42)


def test_constructor_normalises_and_validates():
    spec = DeviceSpec(job="w", replica="0", task=1, device_type="cpu", device_index=0)
    assert spec == DeviceSpec("w", 0, 1, "CPU", 0)
    assert DeviceSpec(device_type="TPU").device_type == "TPU"
    for kwargs, named in [({"job": "a b"}, "a b"), ({"job": 3}, "3"),
                          ({"task": -1}, "-1"), ({"task": True}, "True"),
                          ({"replica": 1.0}, "1.0"), ({"device_index": "x"}, "'x'"),
                          ({"device_type": "C:PU"}, "C:PU"), ({"device_type": 0}, "0")]:
        with pytest.raises(InvalidArgumentError) as info:
            DeviceSpec(**kwargs)
        assert named in info.value.message


def test_frozen_hashable_and_equality():
    a = DeviceSpec.from_string("/job:ps/cpu:0")
    b = DeviceSpec(job="ps", device_type="CPU", device_index=0)
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != DeviceSpec(job="ps")
    assert a != "/job:ps/device:CPU:0"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.job = "worker"


def test_make_merged_spec_other_overrides():
    base = DeviceSpec(job="train", device_type="CPU", device_index=0)
    merged = base.make_merged_spec(DeviceSpec(device_type="GPU", device_index=1))
    assert merged.to_string() == "/job:train/device:GPU:1"
    assert base.to_string() == "/job:train/device:CPU:0"  # unchanged
    assert base.make_merged_spec("/task:3").to_string() == "/job:train/task:3/device:CPU:0"
    assert base.make_merged_spec(DeviceSpec()) == base


def test_merge_keeps_own_index_when_other_sets_only_type():
    # As in TF: parts are merged one by one, so the index survives a type change.
    merged = DeviceSpec.from_string("/gpu:1").make_merged_spec(DeviceSpec(device_type="CPU"))
    assert merged.to_string() == "/device:CPU:1"


def test_replace():
    spec = DeviceSpec(job="ps", task=0, device_type="CPU", device_index=0)
    assert spec.replace(device_type="GPU").to_string() == "/job:ps/task:0/device:GPU:0"
    assert spec.replace(device_index=None).to_string() == "/job:ps/task:0/device:CPU:*"
    assert spec.replace(job=None, task=None).to_string() == "/device:CPU:0"
    with pytest.raises(InvalidArgumentError, match="bad job"):
        spec.replace(job="bad job")
    with pytest.raises(TypeError):
        spec.replace(device="GPU")


def test_parse_from_string_returns_new_spec():
    spec = DeviceSpec(job="ps")
    other = spec.parse_from_string("/gpu:0")
    assert other.to_string() == "/device:GPU:0"
    assert spec.to_string() == "/job:ps"


def test_is_fully_specified():
    assert DeviceSpec.from_string("/job:a/replica:0/task:0/device:CPU:0").is_fully_specified
    assert not DeviceSpec.from_string("/job:a/replica:0/task:0/device:CPU:*").is_fully_specified


def test_canonical_name():
    assert canonical_name("w", 0, 1, "CPU", 0) == "/job:w/replica:0/task:1/device:CPU:0"
    assert canonical_name("localhost", 0, 0, "gpu", 3) == \
        "/job:localhost/replica:0/task:0/device:GPU:3"
    with pytest.raises(InvalidArgumentError, match="bad-job"):
        canonical_name("bad-job", 0, 0, "CPU", 0)
    with pytest.raises(InvalidArgumentError, match="/job:w/task:0/device:CPU:0"):
        canonical_name("w", None, 0, "CPU", 0)


FULL = "/job:ps/replica:0/task:1/device:CPU:0"


@pytest.mark.parametrize("constraint,expected", [
    ("", True),
    ("/job:ps", True),
    ("/job:ps/task:1", True),
    ("/job:ps/task:1/device:CPU:*", True),
    ("/cpu:0", True),
    ("CPU", True),
    (FULL, True),
    ("/job:worker", False),
    ("/task:0", False),
    ("/replica:1", False),
    ("/gpu:0", False),
    ("/device:CPU:1", False),
    (DeviceSpec(job="ps", task=1), True),
])
def test_is_compatible(constraint, expected):
    assert is_compatible(constraint, FULL) is expected
    assert is_compatible(constraint, DeviceSpec.from_string(FULL)) is expected


def test_is_compatible_partial_device_lacks_constrained_part():
    assert not is_compatible("/task:1", "/job:ps/device:CPU:0")
    assert is_compatible("/job:ps", "/job:ps/device:CPU:0")


def test_is_compatible_bad_string():
    with pytest.raises(InvalidArgumentError, match="/foo:1"):
        is_compatible("/foo:1", FULL)


def test_is_valid_job_name():
    assert is_valid_job_name("worker") and is_valid_job_name("W_2")
    for bad in ["", "2w", "a-b", "a b", "_x", None, 3, b"ps"]:
        assert not is_valid_job_name(bad)
