"""Summary ops: TF's op types, names and tags; the Summary protos their kernels make; bad values."""
import io
import wave

import numpy as np
import pytest
from op_checks import run

import nbcluster as tf
from nbcluster.kernels.summary import bucket_limits

pytestmark = pytest.mark.timeout(60)

Summary = tf.summary.Summary


def values_of(serialized) -> list:
    return list(Summary.FromString(serialized).value)


def test_scalar_is_a_ScalarSummary_named_and_tagged_by_its_scope():
    loss = tf.constant(2.5)
    first = tf.summary.scalar("loss", loss)
    second = tf.summary.scalar("loss", loss * 2)
    with tf.name_scope("train"):
        scoped = tf.summary.scalar("loss", loss)
    family = tf.summary.scalar("lr", 0.1, family="opt")
    assert (first.op.type, first.op.name, first.dtype) == ("ScalarSummary", "loss", tf.string)
    assert (second.op.name, scoped.op.name, family.op.name) == ("loss_1", "train/loss", "opt/lr")
    got = [values_of(v)[0] for v in run([first, second, scoped, family])]
    assert [(v.tag, v.simple_value) for v in got] == [
        ("loss", 2.5), ("loss_1", 5.0), ("train/loss", 2.5), ("opt/opt/lr", pytest.approx(0.1))]
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [first, second, scoped, family]


def test_collections_choose_where_a_summary_is_kept():
    kept = tf.summary.scalar("a", 1.0, collections=["mine"])
    tf.summary.scalar("b", 1.0, collections=[])
    assert tf.get_collection("mine") == [kept]
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == []
    assert tf.summary.merge_all() is None


def test_illegal_tag_characters_are_replaced():
    s = tf.summary.scalar("loss (train)", 1.0)
    assert values_of(run(s))[0].tag == "loss__train_"


def test_scalar_of_a_non_scalar_is_invalid_argument_naming_it():
    s = tf.summary.scalar("weights", tf.zeros([2, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"not the same shape: \[\] != \[2, 2\] \(tag 'weights'\)"):
        run(s)


def test_histogram_counts_every_value_in_tfs_buckets():
    x = np.array([-3.0, 0.0, 0.5, 0.5, 1.0, 250.0], np.float32)
    h = values_of(run(tf.summary.histogram("x", tf.constant(x))))[0].histo
    assert (h.min, h.max, h.num) == (-3.0, 250.0, 6)
    assert h.sum == pytest.approx(x.sum()) and h.sum_squares == pytest.approx((x * x).sum())
    assert sum(h.bucket) == 6 and len(h.bucket) == len(h.bucket_limit)
    limits = bucket_limits()
    assert limits[0] == -limits[-1] == -np.finfo(np.float64).max and 0.0 in limits
    full = np.zeros(len(limits))
    np.add.at(full, np.searchsorted(limits, x, side="right"), 1)
    # each non-empty bucket is kept with its own limit; empty runs collapse to one entry
    nonempty = [(limits[i], c) for i, c in enumerate(full) if c]
    assert [(lim, c) for lim, c in zip(h.bucket_limit, h.bucket) if c] == nonempty
    assert all(b > a for a, b in zip(h.bucket_limit, h.bucket_limit[1:]))


def test_histogram_of_nan_is_invalid_argument_naming_the_tag():
    s = tf.summary.histogram("grads", tf.constant([1.0, np.nan]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: grads"):
        run(s)


def _png_pixels(encoded: bytes) -> np.ndarray:
    from PIL import Image  # tensorboard depends on pillow
    return np.asarray(Image.open(io.BytesIO(encoded)))


def test_image_writes_png_of_each_image_up_to_max_outputs():
    pixels = np.arange(3 * 2 * 4 * 3, dtype=np.uint8).reshape(3, 2, 4, 3)
    got = values_of(run(tf.summary.image("img", tf.constant(pixels), max_outputs=2)))
    assert [v.tag for v in got] == ["img/image/0", "img/image/1"]
    for i, v in enumerate(got):
        assert (v.image.height, v.image.width, v.image.colorspace) == (2, 4, 3)
        np.testing.assert_array_equal(_png_pixels(v.image.encoded_image_string), pixels[i])
    one = values_of(run(tf.summary.image("one", tf.constant(pixels[:, :, :, :1]),
                                         max_outputs=1)))
    assert [v.tag for v in one] == ["one/image"]
    np.testing.assert_array_equal(_png_pixels(one[0].image.encoded_image_string),
                                  pixels[0, :, :, 0])


def test_float_images_are_rescaled_as_tf_does():
    positive = np.array([0.0, 0.5, 1.0, 2.0], np.float32).reshape(1, 1, 4, 1)
    signed = np.array([-1.0, 0.0, 1.0, np.nan], np.float32).reshape(1, 1, 4, 1)
    got = run([tf.summary.image("p", positive), tf.summary.image("s", signed)])
    p, s = (_png_pixels(values_of(v)[0].image.encoded_image_string) for v in got)
    np.testing.assert_array_equal(p.reshape(-1), [0, 63, 127, 255])
    np.testing.assert_array_equal(s.reshape(-1), [1, 128, 255, 255])  # NaN: bad_color's red


def test_image_of_the_wrong_rank_is_refused():
    with pytest.raises(ValueError, match=r"4-D.*got shape \(2, 2\)"):
        tf.summary.image("flat", tf.zeros([2, 2]))
    p = tf.placeholder(tf.float32)
    s = tf.summary.image("fed", p)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2, 2, 2, 2\] \(tag 'fed'\)"):
        run(s, {p: np.zeros([2, 2, 2, 2], np.float32)})


def test_audio_writes_wav_clips():
    clip = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 4, 2)
    got = values_of(run(tf.summary.audio("voice", tf.constant(clip), 8000, max_outputs=1)))
    (v,) = got
    assert s_op_type("voice") == "AudioSummaryV2"
    assert (v.tag, v.audio.sample_rate, v.audio.num_channels, v.audio.length_frames,
            v.audio.content_type) == ("voice/audio", 8000, 2, 4, "audio/wav")
    with wave.open(io.BytesIO(v.audio.encoded_audio_string)) as w:
        assert (w.getnchannels(), w.getframerate(), w.getnframes()) == (2, 8000, 4)
        samples = np.frombuffer(w.readframes(4), "<i2").reshape(4, 2)
    np.testing.assert_allclose(samples / 32767.0, clip[0], atol=1e-4)


def s_op_type(name: str) -> str:
    return tf.get_default_graph().get_operation_by_name(name).type


def test_text_is_a_tensor_summary_for_the_text_plugin():
    s = tf.summary.text("note", tf.constant(["hello", "world"]))
    assert s.op.type == "TensorSummaryV2"
    (v,) = values_of(run(s))
    assert v.tag == "note" and v.metadata.plugin_data.plugin_name == "text"
    assert list(v.tensor.string_val) == [b"hello", b"world"]
    with pytest.raises(ValueError, match="dtype string, got float32"):
        tf.summary.text("number", tf.constant(1.0))


def test_merge_all_merges_every_summary_and_refuses_duplicate_tags():
    tf.summary.scalar("a", 1.0)
    tf.summary.histogram("b", [1.0, 2.0])
    merged = tf.summary.merge_all()
    assert merged.op.type == "MergeSummary"
    assert [v.tag for v in values_of(run(merged))] == ["a", "b"]
    dup = tf.summary.merge([tf.summary.scalar("c", 1.0, collections=[]),
                            tf.constant(Summary(value=[Summary.Value(tag="c")])
                                        .SerializeToString())])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate tag c found"):
        run(dup)
    with pytest.raises(TypeError, match="input 0 must be a string"):
        tf.summary.merge([tf.constant(1.0)])


def test_summaries_run_on_a_remote_server(server_target):
    x = tf.placeholder(tf.float32, [3])
    merged = tf.summary.merge([tf.summary.scalar("mean", tf.reduce_mean(x)),
                               tf.summary.histogram("x", x)])
    with tf.Session(server_target) as sess:
        got = values_of(sess.run(merged, {x: np.array([1.0, 2.0, 6.0], np.float32)}))
    assert got[0].simple_value == 3.0 and got[1].histo.num == 3
