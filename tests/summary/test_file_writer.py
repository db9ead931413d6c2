"""FileWriter: event files TensorBoard's own reader (EventAccumulator) reads back; bad log dirs."""
import os
import threading

import numpy as np
import pytest

import nbcluster as tf

pytestmark = pytest.mark.timeout(60)


def accumulator(logdir):
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={kind: 0 for kind in (
        "scalars", "histograms", "images", "tensors")})
    acc.Reload()
    return acc


def writer_threads() -> list:
    """The live writing threads of tensorboard's EventFileWriters."""
    return [t for t in threading.enumerate()
            if t.is_alive() and type(t).__name__ == "_AsyncWriterThread"]


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph


def test_tensorboard_reads_scalars_histograms_images_text_graph_and_steps(tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    tf.summary.image("picture", tf.reshape(x, [1, 2, 2, 1]), max_outputs=1)
    tf.summary.text("note", tf.constant("step notes"))
    merged = tf.summary.merge_all()
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
        for step in (1, 2, 5):
            feed = {x: np.array([step, 0, 1, 2], np.float32)}
            writer.add_summary(sess.run(merged, feed), global_step=step)
        metadata = tf.RunMetadata()
        sess.run(merged, {x: np.zeros(4, np.float32)},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=metadata)
        writer.add_run_metadata(metadata, "step5", global_step=5)
        writer.close()
    (name,) = os.listdir(tmp_path)
    assert name.startswith("events.out.tfevents.")
    acc = accumulator(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(1, 1.0), (2, 1.25), (5, 2.0)]
    histos = acc.Histograms("values")
    assert [h.step for h in histos] == [1, 2, 5]
    assert (histos[-1].histogram_value.num, histos[-1].histogram_value.max) == (4, 5.0)
    assert [(i.step, i.width, i.height) for i in acc.Images("picture/image")] == \
        [(1, 2, 2), (2, 2, 2), (5, 2, 2)]
    texts = acc.Tensors("note")
    assert texts[0].tensor_proto.string_val == [b"step notes"]
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"
    nodes = {n.name: n.op for n in acc.Graph().node}
    assert nodes["x"] == "Placeholder" and nodes["loss"] == "ScalarSummary"
    assert acc.Tags()["run_metadata"] == ["step5"]
    assert len(acc.RunMetadata("step5").step_stats.dev_stats) >= 1


def test_plugin_metadata_goes_with_the_first_value_of_a_tag_only(tmp_path):
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    text = tf.summary.text("note", tf.constant("x"))
    with tf.Session() as sess:
        value = sess.run(text)
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(value, 1)
        writer.add_summary(value, 2)
    (name,) = os.listdir(tmp_path)
    events = [e for e in EventFileLoader(str(tmp_path / name)).Load() if e.HasField("summary")]
    assert [e.summary.value[0].HasField("metadata") for e in events] == [True, False]


def test_add_graph_needs_exactly_one_graph_and_run_metadata_tags_are_unique(tmp_path):
    tf.constant(1.0, name="c")
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(ValueError, match="not both"):
            writer.add_graph(tf.get_default_graph(), graph_def=tf.GraphDef())
        writer.add_graph(None, graph_def=tf.get_default_graph().as_graph_def())
        writer.add_run_metadata(tf.RunMetadata(), "t")
        with pytest.raises(ValueError, match="already used.*'t'"):
            writer.add_run_metadata(tf.RunMetadata(), "t")
        with pytest.raises(TypeError, match="summary must be a protocol buffer"):
            writer.add_summary(3.0)
    assert [n.name for n in accumulator(tmp_path).Graph().node] == ["c"]


def test_close_ends_the_writer_thread_and_reopen_writes_a_new_file(tmp_path):
    before = set(writer_threads())
    writer = tf.summary.FileWriter(str(tmp_path))
    assert set(writer_threads()) - before
    writer.close()
    assert not set(writer_threads()) - before
    writer.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(
        tag="dropped", simple_value=1.0)]))  # a no-op once closed, as in TF
    writer.reopen()
    kept = tf.summary.Summary(value=[tf.summary.Summary.Value(tag="kept", simple_value=2.0)])
    writer.add_summary(np.array(kept.SerializeToString(), dtype=object), 3)  # as fetched
    writer.close()
    assert len(os.listdir(tmp_path)) == 2
    assert accumulator(tmp_path).Tags()["scalars"] == ["kept"]


def test_a_logdir_that_cannot_be_made_is_tfs_error_naming_it(tmp_path):
    before = set(writer_threads())
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(tf.errors.FailedPreconditionError, match=str(blocker / "logs")):
        tf.summary.FileWriter(str(blocker / "logs"))
    # /sys refuses new entries even to root, so this holds under any user
    with pytest.raises(tf.errors.PermissionDeniedError, match="/sys/nbcluster-logs"):
        tf.summary.FileWriter("/sys/nbcluster-logs")
    assert not set(writer_threads()) - before


def test_file_writer_cache_shares_one_writer_per_logdir(tmp_path):
    a = tf.summary.FileWriterCache.get(str(tmp_path / "a"))
    assert tf.summary.FileWriterCache.get(str(tmp_path / "a")) is a
    assert tf.summary.FileWriterCache.get(str(tmp_path / "b")) is not a
    tf.summary.FileWriterCache.clear()
    assert tf.summary.FileWriterCache.get(str(tmp_path / "a")) is not a
    tf.summary.FileWriterCache.clear()
    assert a.get_logdir() == str(tmp_path / "a")


def test_event_protos_are_tensorboards():
    from tensorboard.compat.proto import event_pb2
    assert tf.summary.Event is event_pb2.Event and tf.summary.SessionLog is event_pb2.SessionLog
