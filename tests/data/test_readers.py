"""TFRecordDataset and TextLineDataset on local files; the TFRecord format (masked crc32c)
against TensorFlow's own writer and reader; the file root that confines a task's reads."""
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from data_checks import elements
from tensorflow_processes import requires_tensorflow

import nbcluster as tf
from nbcluster.kernels.data_records import crc32c, masked_crc32c

pytestmark = pytest.mark.timeout(120)


def test_crc32c_matches_the_published_check_values():
    # RFC 3720's crc32c test vectors, and the standard "123456789" check value.
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    crc = crc32c(b"abc")
    assert masked_crc32c(b"abc") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _write(path, records, options=None):
    with tf.io.TFRecordWriter(str(path), options) as w:
        for r in records:
            w.write(r)


def test_tfrecord_dataset_reads_what_the_writer_wrote(tmp_path):
    records = [b"first", b"", bytes(range(256)) * 40, "ü".encode()]
    _write(tmp_path / "a.tfrecord", records[:2])
    _write(tmp_path / "b.tfrecord", records[2:])
    ds = tf.data.TFRecordDataset([str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")])
    assert ds._variant.op.type == "TFRecordDataset"
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    assert elements(ds) == records
    assert list(tf.python_io.tf_record_iterator(str(tmp_path / "b.tfrecord"))) == records[2:]


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_tfrecords(tmp_path, compression):
    path = str(tmp_path / "c.tfrecord")
    _write(path, [b"x" * 1000, b"y"], tf.io.TFRecordOptions(compression))
    assert elements(tf.data.TFRecordDataset(path, compression_type=compression)) == \
        [b"x" * 1000, b"y"]


def test_a_corrupted_record_is_data_loss(tmp_path):
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"hello world", b"second"])
    raw = bytearray(path.read_bytes())
    raw[14] ^= 0xFF  # inside the first record's data
    path.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match="corrupted record data at 0"):
        elements(tf.data.TFRecordDataset(str(path)))
    path.write_bytes(bytes(raw[:-3]))
    with pytest.raises(tf.errors.DataLossError):
        elements(tf.data.TFRecordDataset(str(path)))


def test_text_line_dataset_strips_line_ends(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\r\n\nlast")
    with gzip.open(tmp_path / "b.txt.gz", "wb") as f:
        f.write(b"g1\ng2\n")
    ds = tf.data.TextLineDataset(str(tmp_path / "a.txt"))
    assert ds._variant.op.type == "TextLineDataset"
    assert elements(ds) == [b"one", b"two", b"", b"last"]
    assert elements(tf.data.TextLineDataset(str(tmp_path / "b.txt.gz"), "GZIP")) == \
        [b"g1", b"g2"]


def test_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="nothing.txt"):
        elements(tf.data.TextLineDataset(str(tmp_path / "nothing.txt")))


def test_a_server_reads_only_inside_its_file_root(tmp_path):
    # The suite's servers may touch pytest's base temp dir only (tests/conftest.py).
    outside = tempfile.mkdtemp(prefix="nbcluster-data-outside-")
    server = tf.train.Server.create_local_server()
    try:
        inside = tmp_path / "in.txt"
        inside.write_text("ok\n")
        with open(os.path.join(outside, "secret.txt"), "w") as f:
            f.write("secret\n")
        with tf.Session(server.target) as sess:
            assert elements(tf.data.TextLineDataset(str(inside)), sess) == [b"ok"]
            with pytest.raises(tf.errors.PermissionDeniedError, match="secret.txt"):
                elements(tf.data.TextLineDataset(os.path.join(outside, "secret.txt")), sess)
    finally:
        server.stop()
        shutil.rmtree(outside)


_TF_SIDE = r"""
import sys
import tensorflow.compat.v1 as tf
mine, theirs, theirs_gz = sys.argv[1:4]
print([r.hex() for r in tf.io.tf_record_iterator(mine)])
with tf.io.TFRecordWriter(theirs) as w:
    for r in (b"tf-1", b"", b"\x00\xff" * 300):
        w.write(r)
with tf.io.TFRecordWriter(theirs_gz, tf.io.TFRecordOptions("GZIP")) as w:
    w.write(b"tf-gz")
"""


@requires_tensorflow
def test_tfrecord_files_are_compatible_with_tensorflow(tmp_path):
    mine = [b"nb-1", bytes(range(256)), b""]
    _write(tmp_path / "mine.tfrecord", mine)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", _TF_SIDE, str(tmp_path / "mine.tfrecord"),
                          str(tmp_path / "theirs.tfrecord"), str(tmp_path / "theirs.gz")],
                         capture_output=True, text=True, timeout=100, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == repr([r.hex() for r in mine])
    assert elements(tf.data.TFRecordDataset(str(tmp_path / "theirs.tfrecord"))) == \
        [b"tf-1", b"", b"\x00\xff" * 300]
    assert elements(tf.data.TFRecordDataset(str(tmp_path / "theirs.gz"), "GZIP")) == \
        [b"tf-gz"]
