"""A Cluster displays as its live dashboard once registered: in a shell and in a real kernel."""
from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest
from IPython.display import display as ipython_display
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

import nbcluster.jupyter.display as display

pytestmark = pytest.mark.timeout(180)

WIDGET = "application/vnd.jupyter.widget-view+json"


def _shown(obj):
    """The one output displaying `obj` makes (data, transient display id, ...)."""
    with capture_output() as cap:
        ipython_display(obj)
    [output] = cap.outputs
    return output


@pytest.fixture
def registered(ip):
    """`ip` with Cluster displaying as a dashboard; unregistered (dashboards closed) after."""
    display.register(ip)
    yield ip
    display.unregister(ip)


def test_display_of_a_cluster_is_the_dashboard_bundle(registered, cluster_factory):
    cluster = cluster_factory({"worker": 2})
    shown = _shown(cluster)
    data = shown.data
    assert {WIDGET, "text/html", "text/plain"} <= set(data)
    dashboard = display.dashboard_for(cluster)
    assert dashboard.displays == [shown.transient["display_id"]]  # to put a snapshot in
    assert data[WIDGET]["model_id"] == dashboard.model_id
    assert data["text/html"].count('class="nbc-task nbc-state-up"') == 2
    assert data["text/plain"].splitlines()[0] == f"Cluster {cluster.name!r}"
    assert dashboard.polling


def test_displaying_again_reuses_the_dashboard_until_it_is_closed(registered, cluster_factory):
    cluster = cluster_factory({"worker": 1})
    first, again = _shown(cluster).data, _shown(cluster).data
    assert first[WIDGET]["model_id"] == again[WIDGET]["model_id"]
    old = display.dashboard_for(cluster)
    old.close()
    fresh = _shown(cluster).data
    assert fresh[WIDGET]["model_id"] != first[WIDGET]["model_id"]
    assert not old.polling and display.dashboard_for(cluster).polling


def test_unregister_brings_back_the_cluster_table_and_closes_dashboards(registered,
                                                                     cluster_factory):
    cluster = cluster_factory({"worker": 1})
    dashboard = display.dashboard_for(cluster)
    assert dashboard.polling
    display.unregister(registered)
    assert not dashboard.polling
    data = _shown(cluster).data
    assert WIDGET not in data
    assert "nbcluster-cluster" in data["text/html"]  # Cluster._repr_html_


def test_register_refuses_what_is_not_a_shell():
    with pytest.raises(TypeError, match="str"):
        display.register("shell")


def test_register_current_needs_a_kernel(ip):
    assert display.register_current() is False  # a plain InteractiveShell has no kernel


def test_registering_imports_neither_widgets_nor_the_launcher():
    code = ("import sys; from IPython.core.interactiveshell import InteractiveShell; "
            "import nbcluster.jupyter.display as display; "
            "display.register(InteractiveShell.instance()); "
            "print([m for m in ('ipywidgets', 'nbcluster.launch.cluster', 'grpc') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.strip()
    assert out == "[]"


def test_in_a_kernel_import_nbcluster_then_display_gives_the_dashboard(tmp_path):
    """A real ipykernel: the registered formatter gives the widget and its fallbacks."""
    cells = [
        "import nbcluster.jupyter.display as display\n"
        "assert display.register_current()\n"
        "from nbcluster.launch import Cluster\n"
        "cluster = Cluster.local(jobs={'worker': 1})",
        "cluster",
        "dashboard = display.dashboard_for(cluster)\n"
        "cluster.stop()\n"
        "import time\n"
        "t = time.monotonic()\n"
        "while dashboard.polling and time.monotonic() - t < 10: time.sleep(0.05)\n"
        "print(dashboard.polling, sorted(dashboard.states.values()))",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    (shown,) = notebook.cells[1].outputs
    assert shown.output_type == "display_data"  # under a display id: a snapshot replaces it
    assert {WIDGET, "text/html", "text/plain"} <= set(shown.data)
    assert 'class="nbc-task nbc-state-up" data-task="/job:worker/task:0"' in \
        shown.data["text/html"]
    assert notebook.cells[2].outputs[0].text.strip() == "False ['stopped']"
