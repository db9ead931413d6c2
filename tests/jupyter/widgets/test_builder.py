"""Unit tier: ClusterBuilder's controls edit the design; the cell, code and errors follow."""
from __future__ import annotations

import ipywidgets as widgets
import pytest

from nbcluster.jupyter.widgets import ClusterBuilder
from nbcluster.launch import LaunchError

pytestmark = pytest.mark.timeout(30)


def _find(widget, kind, **attrs) -> list:
    """Every descendant of `widget` of type `kind` whose attributes equal `attrs`."""
    found = []
    if isinstance(widget, kind) and all(getattr(widget, k, None) == v for k, v in attrs.items()):
        found.append(widget)
    for child in getattr(widget, "children", ()):
        found += _find(child, kind, **attrs)
    return found


@pytest.fixture
def builder():
    b = ClusterBuilder(name="demo")
    yield b
    b.close()


def test_defaults_and_root_class(builder):
    assert "nbcluster-builder" in builder._dom_classes
    assert builder.cluster is None
    assert builder.spec == {"ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0", "127.0.0.1:0"]}
    assert builder.cell == "%%tfserver cluster demo\nps: 1\nworker: 2\n"
    assert "demo = Cluster.local(jobs={'ps': 1, 'worker': 2})" in builder.code
    assert [t.value for t in _find(builder, widgets.Text, description="job")] == ["ps", "worker"]
    assert len(_find(builder, widgets.Text, description="GPUs")) == 3


def test_add_and_remove_jobs_update_the_controls_and_the_cell(builder):
    builder.add_job("chief", tasks=1, cpus=2, gpus="0")
    assert [t.value for t in _find(builder, widgets.Text, description="job")] == [
        "ps", "worker", "chief"]
    assert builder.cell.endswith("chief:\n  tasks: 1\n  cpus: 2\n  gpus: \"0\"\n")
    builder.remove_job("worker")
    assert builder.spec == {"ps": ["127.0.0.1:0"], "chief": ["127.0.0.1:0"]}
    assert "worker" not in builder.cell and "worker" not in builder.code
    with pytest.raises(ValueError, match="no job 'worker'"):
        builder.remove_job("worker")


def test_panels_of_unchanged_jobs_are_kept_and_only_replaced_ones_closed(builder):
    # the page builds a box's children asynchronously: a box replaced meanwhile broke
    # ipywidgets' Box view, so a job keeps its panel until its task count changes
    ps, worker = builder._jobs.children
    builder.add_job("chief", tasks=1)
    assert builder._jobs.children[:2] == (ps, worker)
    tasks = _find(worker, widgets.BoundedIntText, description="tasks")[0]
    tasks.value = 3
    assert builder._jobs.children[0] is ps and builder._jobs.children[1] is not worker
    assert worker.comm is None and ps.comm is not None  # the old panel was closed
    assert len(_find(builder._jobs.children[1], widgets.Text, description="GPUs")) == 3
    builder.remove_job("ps")
    assert ps.comm is None and builder._jobs.children[0].comm is not None


@pytest.mark.parametrize("args, words", [(("bad name",), "bad job name 'bad name'"),
                                         (("w", 0), "task count must be &gt;= 1, not 0"),
                                         (("ps",), "job 'ps' is already in the design"),
                                         (("w", 1, "h:x"), "bad host 'h:x'")])
def test_a_bad_job_is_refused_and_shown_in_red(builder, args, words):
    before = builder.cell
    with pytest.raises(ValueError):
        builder.add_job(*args)
    assert "color:#c62828" in builder._message.value and \
        words.replace("'", "&#x27;") in builder._message.value
    assert builder.cell == before


def test_typing_in_the_controls_edits_the_design(builder):
    name = _find(builder, widgets.Text, description="job")[1]
    name.value = "trainer"
    assert builder.spec.keys() == {"ps", "trainer"} and "trainer: 2" in builder.cell
    tasks = _find(builder, widgets.BoundedIntText, description="tasks")[1]
    tasks.value = 3
    assert len(builder.spec["trainer"]) == 3
    assert len(_find(builder, widgets.Text, description="GPUs")) == 4  # rows re-rendered
    _find(builder, widgets.Text, description="CPUs")[0].value = "2"
    _find(builder, widgets.Text, description="task 2 host")[0].value = "local:2300"
    _find(builder, widgets.Text, description="GPUs")[0].value = "none"
    assert builder.design.job("ps").cpus == [2] and builder.design.job("ps").gpus == ["none"]
    assert builder.spec["trainer"][2] == "127.0.0.1:2300"
    assert "ps:\n  addresses: [\"127.0.0.1:0\"]\n  cpus: 2\n  gpus: \"none\"" in builder.cell


def test_a_bad_edit_shows_red_and_the_cell_says_why(builder):
    _find(builder, widgets.Text, description="job")[0].value = "1ps"
    assert "bad job name &#x27;1ps&#x27;" in builder._message.value
    assert builder.cell.startswith("# not valid yet: bad job name '1ps'")
    _find(builder, widgets.Text, description="job")[0].value = "ps"
    assert builder._message.value == "" and builder.cell.startswith("%%tfserver")
    _find(builder, widgets.Text, description="CPUs")[1].value = "two"
    assert "/job:worker/task:0: CPUs must be a whole number" in builder._message.value
    assert builder.design.job("worker").cpus == [None, None]  # its last good value
    _find(builder, widgets.Text, description="CPUs")[1].value = ""
    assert builder._message.value == "" and builder.cell.startswith("%%tfserver")


def test_each_task_shows_its_own_cpu_count(builder):
    builder.add_job("mixed", tasks=2, cpus=[1, 2])
    fields = _find(builder, widgets.Text, description="CPUs")
    assert [f.value for f in fields] == ["", "", "", "1", "2"]  # "": the default, 1
    assert fields[0].placeholder == "1 (default)"
    fields[1].value = "3"  # worker:0 only
    assert builder.design.job("worker").cpus == [3, None]
    assert "worker:\n  tasks: 2\n  cpus: [3, null]\n" in builder.cell  # null: the default
    assert builder.design.job("mixed").cpus == [1, 2]


def test_a_task_count_cannot_be_zero(builder):
    tasks = _find(builder, widgets.BoundedIntText, description="tasks")[1]
    assert tasks.min == 1
    tasks.value = 0  # what typing 0 does: the field holds its bound
    assert tasks.value == 1 and builder.design.job("worker").tasks == 1
    assert builder._message.value == "" and "worker: 1" in builder.cell


def test_launch_is_off_while_the_design_is_invalid_and_says_why(builder):
    launch = builder._launch_button
    assert not launch.disabled
    _find(builder, widgets.Text, description="job")[0].value = "my ps"
    assert launch.disabled and launch.tooltip == ("not valid yet: bad job name 'my ps': it "
                                                  "must start with a letter and hold only "
                                                  "letters, digits and '_'")
    _find(builder, widgets.Text, description="job")[0].value = "ps"
    assert not launch.disabled and launch.tooltip == "start the cluster"
    builder.set_launcher("ssh")  # 'local' hosts under SSH: invalid again
    assert launch.disabled and "with the SSH launcher" in launch.tooltip
    builder.set_launcher("local")
    assert not launch.disabled


def test_the_launcher_toggle_keeps_its_buttons_on_one_line(builder):
    toggle = builder._form.launcher
    assert toggle.style.button_width == "auto"  # not a fixed width per button
    assert toggle.layout.width == "auto" and toggle.layout.flex == "0 0 auto"
    row = builder._form.children[0]
    assert toggle in row.children and row.layout.flex_flow == "row nowrap"


def test_launching_a_bad_design_starts_nothing_and_shows_why(builder):
    _find(builder, widgets.Text, description="job")[0].value = "my ps"
    with pytest.raises(ValueError, match="bad job name 'my ps'"):
        builder.launch()
    assert builder.cluster is None and "color:#c62828" in builder._message.value
    _find(builder, widgets.Button, description="Launch")[0].click()  # shown, not raised
    assert "bad job name" in builder._message.value


def test_the_generated_areas_are_read_only(builder):
    cell, code = _find(builder, widgets.Textarea)
    cell.value = "%%tfserver cluster other\nps: 9\n"
    code.value = ""
    assert cell.value == builder.cell == "%%tfserver cluster demo\nps: 1\nworker: 2\n"
    assert code.value == builder.code


def test_the_ssh_launcher_shows_its_options_and_puts_them_in_the_cell(builder):
    ssh_box = builder._ssh_box
    assert ssh_box.layout.display == "none"
    builder.set_launcher("ssh", user="me", key="/k", port=2022,
                         options=["StrictHostKeyChecking=no"])
    assert ssh_box.layout.display == "flex"
    assert "host &#x27;local&#x27; with the SSH launcher" in builder._message.value
    builder.remove_job("ps")
    builder.remove_job("worker")
    builder.add_job("worker", tasks=2, hosts=["h1", "h2"])
    assert builder.cell.splitlines()[0] == ("%%tfserver cluster demo --ssh --user me --key /k "
                                            "--ssh-port 2022 -o StrictHostKeyChecking=no")
    assert "ssh_options=('-o', 'StrictHostKeyChecking=no')" in builder.code
    with pytest.raises(ValueError, match="bad launcher 'pbs'"):
        builder.set_launcher("pbs")


def test_restart_and_stop_before_launch(builder):
    with pytest.raises(LaunchError, match="nothing is launched"):
        builder.restart("worker", 0)
    builder.stop()  # nothing to stop: no error
    assert _find(builder, widgets.Button, description="Stop")[0].disabled


def test_fallback_reprs_show_the_design_and_the_cell(builder):
    builder.add_job("chief", cpus=2)
    bundle = builder._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    text, html = bundle["text/plain"], bundle["text/html"]
    assert text.startswith("ClusterBuilder (local launcher, not launched)")
    assert "chief:0  host=local  cpus=2" in text and builder.cell in text
    assert "<td>chief</td><td>0</td><td>local</td><td>2</td>" in html
    assert "%%tfserver cluster demo" in html and 'class="nbcluster-builder"' in html


def test_close_closes_every_control():
    b = ClusterBuilder()
    controls = _find(b, widgets.Widget)
    b.close()
    assert all(w.comm is None for w in controls)


def test_constructor_arguments():
    with pytest.raises(ValueError, match="not 'my cluster'"):
        ClusterBuilder(name="my cluster")
    with pytest.raises(ValueError, match="positive number of seconds, not 0"):
        ClusterBuilder(timeout=0)
    b = ClusterBuilder(timeout=30)
    assert b.cell.startswith("%%tfserver cluster cluster --timeout 30\n")
    assert "timeout=30.0" in b.code
    b.close()
