"""Static snapshots of live widgets: each display is replaced by the widget's last state,
as plain HTML, when the widget closes or the kernel stops.

Rules: a widget shows itself under a display id of its own (`_ipython_display_`),
its usual bundle (the widget view plus text/html and text/plain fallbacks);
`leave_snapshot` then replaces every such display with a bundle holding no widget
view, so a notebook saved afterwards, closed and reopened shows the last state
instead of "Error displaying widget: model not found". The update goes out as an
output of the running request: JupyterLab routes an update_display_data by its
display id to the cell that showed it, and nbclient takes only the running
cell's messages. At kernel shutdown the snapshots are sent when the kernel is
asked to stop (the shell's `exit_now` turns True, before ipykernel replies and
while the front end still listens), else from atexit; they never raise.
"""
from __future__ import annotations

import atexit
import html
import sys
import threading
import time
import uuid
import weakref

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNEL_STOPPED = "kernel stopped"
CLOSED = "closed"

_shown: "weakref.WeakSet" = weakref.WeakSet()
_lock = threading.Lock()
_hooked = False


def _shell():
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _bundle_of(widget) -> tuple:
    bundle = widget._repr_mimebundle_()
    return bundle if isinstance(bundle, tuple) else (bundle or {}, {})


def note(reason: str, when: float = None) -> str:
    """'snapshot: closed at 14:02:07 UTC; the last state seen, no longer updated'."""
    stamp = time.strftime("%H:%M:%S UTC", time.gmtime(time.time() if when is None else when))
    return f"snapshot: {reason} at {stamp}; the last state seen, no longer updated"


def note_html(text: str) -> str:
    return f"<div class='nbc-snapshot-note'><i>{html.escape(text)}</i></div>"


class Snapshotted:
    """Mixin (listed before the widget class) for an ipywidgets widget: displays under
    its own display ids and leaves a static snapshot in each when closed or at exit.

    The snapshot is the widget's own text/html and text/plain fallbacks under a note
    saying when and why; a widget may override `_snapshot_bundle(reason)`, `reason`
    being CLOSED or KERNEL_STOPPED.
    """

    def close(self) -> None:
        if self.__dict__.get("_snapshot_displays"):
            self.leave_snapshot(CLOSED)
        super().close()

    def _snapshot_bundle(self, reason: str) -> dict:
        data, _ = _bundle_of(self)
        text = note(reason)
        return {"text/html": f"{note_html(text)}{data.get('text/html', '')}",
                "text/plain": f"{data.get('text/plain', '')}\n({text})"}

    def _display_marker(self) -> dict:
        """What the labextension reads in the output's metadata ("nbcluster") to freeze
        this display itself when the kernel goes away from the page (a restart there
        drops whatever the kernel sends): the widget's kind, and optionally "freeze",
        the CSS selector of the part of its view worth keeping."""
        return {"widget": type(self).__name__}

    def _ipython_display_(self) -> None:
        from IPython.display import display
        data, metadata = _bundle_of(self)
        metadata = {**(metadata or {}), "nbcluster": self._display_marker()}
        display_id = uuid.uuid4().hex
        display(data, metadata=metadata, raw=True, display_id=display_id)
        self.__dict__.setdefault("_snapshot_displays", []).append(display_id)
        _track(self)

    @property
    def displays(self) -> list:
        """The display ids this widget is shown under (and not yet replaced)."""
        return list(self.__dict__.get("_snapshot_displays", []))

    def leave_snapshot(self, reason: str = CLOSED) -> dict:
        """Replaces every display of this widget with its static snapshot; returns the
        snapshot bundle ({} if the widget was never displayed). Once only: later
        displays are live again until the next snapshot."""
        displays = self.__dict__.pop("_snapshot_displays", [])
        if not displays:
            return {}
        bundle = self._snapshot_bundle(reason)
        assert WIDGET_VIEW not in bundle, "a snapshot must not need the widget"
        from IPython.display import update_display
        metadata = {"nbcluster": {**self._display_marker(), "snapshot": reason}}
        for display_id in displays:
            update_display(bundle, raw=True, display_id=display_id, metadata=metadata)
        return bundle


def _track(widget) -> None:
    global _hooked
    with _lock:
        _shown.add(widget)
        if _hooked:
            return
        _hooked = True
    atexit.register(snapshot_all)
    shell = _shell()
    if shell is not None and shell.has_trait("exit_now"):
        shell.observe(_on_exit_now, names="exit_now")


def _on_exit_now(change) -> None:
    if change["new"]:
        snapshot_all()


def snapshot_all(reason: str = KERNEL_STOPPED) -> int:
    """Leaves a snapshot of every widget still displayed; how many. Never raises (it
    runs at exit): a failing widget is reported on stderr and the rest go on."""
    with _lock:
        widgets = list(_shown)
    done = 0
    for widget in widgets:
        try:
            done += bool(widget.leave_snapshot(reason))
        except Exception as e:  # noqa: BLE001 - at exit, keep snapshotting the others
            print(f"nbcluster: no snapshot of {type(widget).__name__}: {e}", file=sys.stderr)
    return done
