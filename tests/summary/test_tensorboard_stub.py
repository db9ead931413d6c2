"""Writing and reading event files never imports TensorFlow, even where it is installed:
a task that writes summaries starts without TF's seconds of import and its thread pools."""
import subprocess
import sys

import pytest
from tensorflow_processes import requires_tensorflow

pytestmark = pytest.mark.timeout(120)

_PROGRAM = """
import glob, sys
import nbcluster as tf
writer = tf.summary.FileWriter(sys.argv[1])
writer.add_summary(tf.summary.Summary(value=[tf.summary.Summary.Value(
    tag="loss", simple_value=0.25)]), global_step=7)
writer.close()
(path,) = glob.glob(sys.argv[1] + "/events.out.tfevents.*")
last = list(tf.train.summary_iterator(path))[-1]
print(last.step, last.summary.value[0].simple_value, "tensorflow" in sys.modules)
"""


@requires_tensorflow
def test_event_files_are_written_and_read_without_importing_tensorflow(tmp_path):
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["7", "0.25", "False"]
