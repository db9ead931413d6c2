"""tf.app.run and tf.flags: absl's parsing, TF1's calling convention; each program its own process."""
import subprocess
import sys
import textwrap

import pytest

from nbcluster.launch import child_env

pytestmark = pytest.mark.timeout(60)

PROGRAM = textwrap.dedent("""
    import sys
    import nbcluster as tf

    tf.app.flags.DEFINE_string("job_name", "", "ps or worker")
    tf.app.flags.DEFINE_integer("task_index", 0, "index of the task")
    tf.flags.DEFINE_float("learning_rate", 0.5, "step size")
    tf.flags.DEFINE_boolean("sync", False, "synchronous replicas")
    tf.app.flags.DEFINE_list("ps_hosts", ["localhost:2222"], "ps addresses")
    FLAGS = tf.app.flags.FLAGS

    def main(argv):
        print(repr((FLAGS.job_name, FLAGS.task_index, FLAGS.learning_rate, FLAGS.sync,
                    FLAGS.ps_hosts, argv[1:])))
        return 3 if "--fail" in argv else 0

    if __name__ == "__main__":
        if "--implicit" in sys.argv:   # TF1: reading FLAGS parses sys.argv by itself
            print(repr((FLAGS.task_index, FLAGS.sync)))
        else:
            tf.app.run()
""")


def run_program(tmp_path, *args):
    path = tmp_path / "trainer.py"
    path.write_text(PROGRAM)
    return subprocess.run([sys.executable, str(path), *args], env=child_env(),
                          capture_output=True, text=True, timeout=50)


def test_run_parses_flags_and_leaves_unknown_ones_for_main(tmp_path):
    done = run_program(tmp_path, "--job_name=worker", "--task_index", "2",
                       "--learning_rate=0.01", "--sync", "--ps_hosts=a:1,b:2", "extra",
                       "--not_a_flag=1")
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout) == ("worker", 2, 0.01, True, ["a:1", "b:2"],
                                 ["extra", "--not_a_flag=1"])


def test_defaults_and_main_return_value_is_the_exit_status(tmp_path):
    done = run_program(tmp_path, "--fail")
    assert done.returncode == 3
    assert eval(done.stdout) == ("", 0, 0.5, False, ["localhost:2222"], ["--fail"])


def test_reading_a_flag_before_run_parses_argv(tmp_path):
    # a Jupyter kernel's own arguments (-f kernel.json) are left alone
    done = run_program(tmp_path, "-f", "/run/kernel-1.json", "--implicit", "--task_index=7",
                       "--nosync")
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout) == (7, False)


def test_help_lists_the_defined_flags(tmp_path):
    done = run_program(tmp_path, "--help")
    assert done.returncode == 1  # absl's --help prints usage and exits 1, as under TF
    for name in ("--job_name", "--task_index", "--learning_rate", "--ps_hosts"):
        assert name in done.stdout
    assert "ps or worker" in done.stdout


@pytest.mark.parametrize("arg, value", [("--task_index=two", "two"),
                                        ("--learning_rate=fast", "fast")])
def test_a_value_of_the_wrong_type_is_named(tmp_path, arg, value):
    done = run_program(tmp_path, arg)
    assert done.returncode == 1
    assert f"{arg}: " in done.stderr and repr(value) in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_wrong_default_is_refused_at_definition():
    from absl import flags as absl_flags

    import nbcluster as tf
    values = absl_flags.FlagValues()
    with pytest.raises(absl_flags.IllegalFlagValueError, match="many"):
        tf.flags.DEFINE_integer("count", "many", "a count", flag_values=values)


def test_app_and_flags_are_absl_and_lazy():
    code = ("import sys, nbcluster as tf; before = 'absl' in sys.modules; "
            "from absl import flags; "
            "print(before, tf.app.flags is tf.flags, tf.flags.DEFINE_string is "
            "flags.DEFINE_string)")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                         text=True, timeout=50, check=True).stdout.split()
    assert out == ["False", "True", "True"]
