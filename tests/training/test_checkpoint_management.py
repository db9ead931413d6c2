"""The "checkpoint" state file: TF's text format, written atomically, parsed without eval."""
import os

import numpy as np
import pytest

import nbcluster as tf
from nbcluster.training import checkpoint_management as cm
from nbcluster.training.saver import Saver

pytestmark = pytest.mark.timeout(60)


def test_state_round_trip_with_odd_characters(tmp_path):
    odd = str(tmp_path / 'we"ird\\ p\u00e4th\n') + "model"
    cm.update_checkpoint_state(str(tmp_path), odd, [str(tmp_path / "old"), odd],
                               all_model_checkpoint_timestamps=[1.5, 2.25],
                               last_preserved_timestamp=0.5)
    text = (tmp_path / "checkpoint").read_text(encoding="utf-8")
    assert text.splitlines()[0].startswith('model_checkpoint_path: "')
    assert "\\n" in text and '\\"' in text  # escaped, one field a line
    state = cm.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == odd
    assert state.all_model_checkpoint_paths == [str(tmp_path / "old"), odd]
    assert state.all_model_checkpoint_timestamps == [1.5, 2.25]
    assert state.last_preserved_timestamp == 0.5
    assert not [n for n in os.listdir(tmp_path) if n != "checkpoint"]  # no temp left


def test_reads_what_tensorflow_writes(tmp_path):
    (tmp_path / "ckpt_state").write_bytes(
        b'model_checkpoint_path: "model.ckpt-20"\n'
        b'all_model_checkpoint_paths: "model.ckpt-10"\n'
        b'all_model_checkpoint_paths: "model.ckpt-20"\n'
        b'all_model_checkpoint_timestamps: 1700000000.5\n'
        b'all_model_checkpoint_timestamps: 1.7e9\n'
        b'last_preserved_timestamp: 1699999999.25\n'
        b'# a comment\n')
    state = cm.get_checkpoint_state(str(tmp_path), "ckpt_state")
    assert state.model_checkpoint_path == str(tmp_path / "model.ckpt-20")  # made absolute
    assert state.all_model_checkpoint_timestamps == [1700000000.5, 1.7e9]
    assert cm.latest_checkpoint(str(tmp_path), "ckpt_state") is None  # files absent
    (tmp_path / "model.ckpt-20.index").write_text("{}")
    assert cm.latest_checkpoint(str(tmp_path), "ckpt_state") == str(tmp_path / "model.ckpt-20")


def test_octal_and_hex_escapes(tmp_path):
    (tmp_path / "checkpoint").write_bytes(b'model_checkpoint_path: "a\\303\\244\\x41"\n')
    assert cm.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == \
        str(tmp_path / "a\u00e4A")


@pytest.mark.parametrize("content,why", [
    (b"model_checkpoint_path: unquoted\n", "quoted string"),
    (b'model_checkpoint_path: "x"\nbogus_field: "y"\n', "unknown field 'bogus_field'"),
    (b'model_checkpoint_path: "x\\q"\n', "unknown escape"),
    (b'all_model_checkpoint_paths: "x"\n', "no model_checkpoint_path"),
    (b"\x00\x01garbage", "expected 'field: value'"),
])
def test_corrupt_state_file_is_value_error_naming_it(tmp_path, content, why):
    (tmp_path / "checkpoint").write_bytes(content)
    with pytest.raises(ValueError, match=why) as info:
        cm.latest_checkpoint(str(tmp_path))
    assert str(tmp_path / "checkpoint") in str(info.value)


def test_no_state_file_or_directory_is_none(tmp_path):
    assert cm.get_checkpoint_state(str(tmp_path)) is None
    assert cm.latest_checkpoint(str(tmp_path)) is None
    assert cm.latest_checkpoint(str(tmp_path / "missing")) is None


def test_exists_and_remove(tmp_path):
    with tf.Graph().as_default():
        with tf.device("/device:CPU:0"):
            tf.Variable(np.zeros(3), name="a")
        tf.Variable(1, name="b")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = Saver().save(sess, str(tmp_path / "m-1"))
            other = Saver().save(sess, str(tmp_path / "m-10"))
    assert cm.checkpoint_exists(path) and cm.checkpoint_exists(other)
    assert not cm.checkpoint_exists(str(tmp_path / "m"))
    (tmp_path / "m-1.index").write_text("not json")  # removal still finds the shards
    cm.remove_checkpoint(path)
    assert not cm.checkpoint_exists(path)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-10-00000-of-00002.npz",
                                            "m-10-00001-of-00002.npz", "m-10.index"]
    cm.remove_checkpoint(path)  # already gone: nothing to do


def _checkpoint_state_class():
    """TF's CheckpointState message (same field names and numbers), built here."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="checkpoint_state.proto", package="t")
    message = proto.message_type.add(name="CheckpointState")
    for name, number, kind, label in [
            ("model_checkpoint_path", 1, field.TYPE_STRING, field.LABEL_OPTIONAL),
            ("all_model_checkpoint_paths", 2, field.TYPE_STRING, field.LABEL_REPEATED),
            ("all_model_checkpoint_timestamps", 3, field.TYPE_DOUBLE, field.LABEL_REPEATED),
            ("last_preserved_timestamp", 4, field.TYPE_DOUBLE, field.LABEL_OPTIONAL)]:
        message.field.add(name=name, number=number, type=kind, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.CheckpointState"))


def test_protobuf_text_format_reads_ours_and_we_read_its(tmp_path):
    from google.protobuf import text_format
    odd = str(tmp_path / 'a"b\\c\u00e9\n\x01d')
    cm.update_checkpoint_state(str(tmp_path), odd, [str(tmp_path / "old")],
                               all_model_checkpoint_timestamps=[1.5, 2.0],
                               last_preserved_timestamp=0.25)
    state_class = _checkpoint_state_class()
    parsed = text_format.Parse((tmp_path / "checkpoint").read_text(encoding="utf-8"),
                               state_class())
    assert parsed.model_checkpoint_path == odd
    assert list(parsed.all_model_checkpoint_paths) == [str(tmp_path / "old"), odd]
    assert list(parsed.all_model_checkpoint_timestamps) == [1.5, 2.0]
    parsed.model_checkpoint_path = str(tmp_path / "x\u00e9\x02\"y")
    (tmp_path / "checkpoint").write_text(text_format.MessageToString(parsed), encoding="utf-8")
    assert cm.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == \
        parsed.model_checkpoint_path
