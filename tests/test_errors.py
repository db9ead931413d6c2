"""Unit tests for nbcluster.errors: codes, classes, table and OpError fields."""
import traceback
import warnings

import pytest

from nbcluster import errors

pytestmark = pytest.mark.timeout(30)

# TensorFlow's error_codes.proto, name -> (code, class name).
TF_CODES = {
    "CANCELLED": (1, "CancelledError"),
    "UNKNOWN": (2, "UnknownError"),
    "INVALID_ARGUMENT": (3, "InvalidArgumentError"),
    "DEADLINE_EXCEEDED": (4, "DeadlineExceededError"),
    "NOT_FOUND": (5, "NotFoundError"),
    "ALREADY_EXISTS": (6, "AlreadyExistsError"),
    "PERMISSION_DENIED": (7, "PermissionDeniedError"),
    "RESOURCE_EXHAUSTED": (8, "ResourceExhaustedError"),
    "FAILED_PRECONDITION": (9, "FailedPreconditionError"),
    "ABORTED": (10, "AbortedError"),
    "OUT_OF_RANGE": (11, "OutOfRangeError"),
    "UNIMPLEMENTED": (12, "UnimplementedError"),
    "INTERNAL": (13, "InternalError"),
    "UNAVAILABLE": (14, "UnavailableError"),
    "DATA_LOSS": (15, "DataLossError"),
    "UNAUTHENTICATED": (16, "UnauthenticatedError"),
}


def test_ok_constant():
    assert errors.OK == 0


@pytest.mark.parametrize("name", sorted(TF_CODES))
def test_code_constant_and_class(name):
    code, class_name = TF_CODES[name]
    cls = getattr(errors, class_name)
    assert getattr(errors, name) == code
    assert issubclass(cls, errors.OpError)
    assert errors.exception_type_from_error_code(code) is cls
    assert errors.error_code_from_exception_type(cls) == code
    e = cls(None, None, "msg for %s" % name)  # TF's three-argument signature
    assert isinstance(e, errors.OpError) and isinstance(e, Exception)
    assert e.error_code == code
    assert e.message == "msg for %s" % name
    assert e.op is None and e.node_def is None and e.node_name is None


def test_table_covers_every_code_once():
    assert sorted(errors.CODE_TO_EXCEPTION_CLASS) == list(range(1, 17))
    assert len(set(errors.CODE_TO_EXCEPTION_CLASS.values())) == 16


def test_unknown_code_lookup_raises_key_error():
    with pytest.raises(KeyError):
        errors.exception_type_from_error_code(errors.OK)
    with pytest.raises(KeyError):
        errors.exception_type_from_error_code(99)


def test_error_code_from_unrelated_class_warns_and_gives_unknown():
    with pytest.warns(UserWarning, match="ValueError"):
        assert errors.error_code_from_exception_type(ValueError) == errors.UNKNOWN


def test_error_code_from_user_subclass_uses_nearest_base():
    class MyNotFound(errors.NotFoundError):
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert errors.error_code_from_exception_type(MyNotFound) == errors.NOT_FOUND


def test_op_error_base_takes_code_and_payloads():
    e = errors.OpError(None, None, "boom", errors.ABORTED, {"k": b"v"})
    assert e.error_code == errors.ABORTED
    assert e.experimental_payloads == {"k": b"v"}
    assert errors.OpError(None, None, "x").error_code == errors.UNKNOWN
    assert errors.OpError(None, None, "x").experimental_payloads == {}


def test_subclass_extra_arg_is_payloads():
    e = errors.InternalError(None, None, "m", {"trace": b"remote"})
    assert e.error_code == errors.INTERNAL
    assert e.experimental_payloads == {"trace": b"remote"}


def test_unknown_error_keeps_a_foreign_code():
    assert errors.UnknownError(None, None, "m").error_code == errors.UNKNOWN
    assert errors.UnknownError(None, None, "m", 42).error_code == 42


def test_str_is_message_without_op():
    e = errors.NotFoundError(None, None, "no such file 'x'")
    assert str(e) == "no such file 'x'"
    with pytest.raises(errors.OpError, match="no such file"):
        raise e


def test_node_name_explicit():
    e = errors.FailedPreconditionError(None, None, "uninit", node_name="w/read")
    assert e.node_name == "w/read"
    assert e.op is None and e.node_def is None


class _Named:
    def __init__(self, name, frames=None):
        self.name = name
        if frames is not None:
            self.traceback = frames


def test_node_name_from_node_def_then_op():
    assert errors.AbortedError(_Named("from_def"), _Named("from_op"), "m").node_name == "from_def"
    assert errors.AbortedError(None, _Named("from_op"), "m").node_name == "from_op"
    assert errors.AbortedError(_Named(""), _Named("from_op"), "m").node_name == "from_op"


def test_str_with_op_traceback_shows_creation_site():
    frames = [traceback.FrameSummary("model.py", 12, "build", line="w = Variable()")]
    e = errors.InvalidArgumentError(None, _Named("w", frames), "bad shape")
    text = str(e)
    assert text.startswith("bad shape\n\nOriginal stack trace for 'w':\n")
    assert "model.py" in text and "line 12" in text


def test_str_with_op_without_traceback_is_message():
    assert str(errors.InternalError(None, _Named("w"), "oops")) == "oops"


def test_catch_by_base_class():
    with pytest.raises(errors.OpError) as info:
        raise errors.UnavailableError(None, None, "worker down")
    assert info.value.error_code == errors.UNAVAILABLE
