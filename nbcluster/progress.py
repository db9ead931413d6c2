"""Progress: a counter shown as an ipywidgets bar in a kernel, a `\\r` line on a terminal.

Rules: nothing is shown before `delay` seconds have passed (so fast calls print
nothing); the view is refreshed at most every `min_interval` seconds, and once
more at `close()`; ipywidgets is imported only when a bar is shown in a kernel
(`import nbcluster` must not pay for it); outside a kernel and off a terminal
it is silent.
"""
from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
import time
from numbers import Integral, Real

__all__ = ["Progress", "hidden"]

_MODES = ("auto", "widget", "stream", "silent")


def _kernel_shell():
    """The IPython shell of a running Jupyter kernel, or None (not imported: no kernel)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    return shell if getattr(shell, "kernel", None) is not None else None


_hidden = threading.local()


@contextlib.contextmanager
def hidden():
    """Within this block, bars in "auto" mode on this thread stay silent: for a
    caller that shows its own progress (the ClusterBuilder's bar)."""
    depth = getattr(_hidden, "depth", 0)
    _hidden.depth = depth + 1
    try:
        yield
    finally:
        _hidden.depth = depth


def _auto_mode(stream) -> str:
    if getattr(_hidden, "depth", 0):
        return "silent"
    if _kernel_shell() is not None:
        if threading.current_thread() is not threading.main_thread():
            return "silent"  # a display from another thread lands in whichever cell runs
        return "widget" if importlib.util.find_spec("ipywidgets") is not None else "silent"
    isatty = getattr(stream, "isatty", None)
    return "stream" if isatty is not None and isatty() else "silent"


def _format_value(value) -> str:
    if isinstance(value, Real) and not isinstance(value, (bool, Integral)):
        return f"{float(value):.4g}"
    return str(value)


def _check_count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"Progress {what} must be an int, not {value!r}")
    if value < 0:
        raise ValueError(f"Progress {what} must be >= 0, not {value}")
    return int(value)


_MARKER = {"nbcluster": {"widget": "Progress"}}  # the labextension freezes it on a restart
_COLORS = {"success": "#1a7f37", "danger": "#cf222e", "": "#0969da"}


class _WidgetView:
    """An IntProgress and an HTML label in a kernel's output. Closed, the display turns
    into a static bar (text/html and text/plain with the final count, no widget view)
    and the widgets close: a saved, reopened notebook shows the bar as it ended, not
    "Error displaying widget", and nbconvert or GitHub show the final count."""

    def __init__(self, progress: "Progress") -> None:
        import ipywidgets
        from IPython.display import display
        self._bar = ipywidgets.IntProgress(min=0, max=max(progress.total, 1),
                                           description=progress.description,
                                           style={"description_width": "initial"})
        self._label = ipywidgets.HTML()
        self.box = ipywidgets.HBox([self._bar, self._label])
        self.refresh(progress)
        self._handle = display(self._bundle(progress), raw=True, display_id=True,
                               metadata=_MARKER)

    def _bundle(self, progress: "Progress") -> dict:
        return {"application/vnd.jupyter.widget-view+json": {
                    "version_major": 2, "version_minor": 0, "model_id": self.box.model_id},
                "text/plain": progress.text}

    def refresh(self, progress: "Progress") -> None:
        self._bar.max = max(progress.total, 1)
        self._bar.value = min(progress.value, self._bar.max)
        self._label.value = _html_escape(progress.text[len(progress.description):].strip())

    def close(self, progress: "Progress", failed: bool) -> None:
        self.refresh(progress)
        self._bar.bar_style = "danger" if failed else \
            "success" if progress.value >= progress.total else ""
        self._handle.update(self._static_bundle(progress), raw=True,
                            metadata={"nbcluster": {"widget": "Progress", "snapshot": "closed"}})
        self.box.close()
        self._bar.close()
        self._label.close()

    def _static_bundle(self, progress: "Progress") -> dict:
        done = min(progress.value, self._bar.max) / self._bar.max
        color = _COLORS.get(self._bar.bar_style, _COLORS[""])
        rest = _html_escape(progress.text[len(progress.description):].strip())
        html = (f"<div class='nbc-progress-snapshot' data-value='{progress.value}' "
                f"style='display:flex;align-items:center;gap:8px'>"
                f"<span>{_html_escape(progress.description)}</span>"
                f"<div style='width:240px;height:12px;background:#d0d7de;border-radius:2px'>"
                f"<div class='nbc-progress-fill' style='width:{100 * done:.1f}%;height:12px;"
                f"background:{color};border-radius:2px'></div></div><span>{rest}</span></div>")
        return {"text/html": html, "text/plain": progress.text}


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _StreamView:
    """One line on a terminal, rewritten in place with `\\r`."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self._width = 0

    def refresh(self, progress: "Progress") -> None:
        text = progress.text
        self._stream.write("\r" + text.ljust(self._width))
        self._stream.flush()
        self._width = len(text)

    def close(self, progress: "Progress", failed: bool) -> None:
        self.refresh(progress)
        self._stream.write("\n")
        self._stream.flush()


class Progress:
    """A progress counter: a bar in a Jupyter kernel, a line on a terminal, else silent.

    Args:
      total: the count that means done (an int >= 0; it may be raised later).
      description: what is counted, shown first ("training").
      unit: words after the count ("steps", "tasks up").
      delay: seconds before anything is shown; a progress closed sooner shows nothing.
      min_interval: the least seconds between two refreshes of the view.
      mode: "auto" (a widget in a kernel's main thread, a line when stderr is a
        terminal, else silent), or "widget", "stream" or "silent" to choose.
      stream: where the line goes in stream mode (default sys.stderr).
    Raises:
      TypeError: `total` is not an int, or `description`/`unit` not strings.
      ValueError: `total` < 0, a negative delay or interval, or an unknown mode.
    Example:
      >>> with Progress(3, "training", unit="steps", mode="silent") as bar:
      ...     for loss in (0.9, 0.5, 0.3):
      ...         bar.update(loss=loss)
      >>> bar.text
      'training 3/3 steps loss=0.3'
    """

    def __init__(self, total: int, description: str = "", unit: str = "", *,
                 delay: float = 0.0, min_interval: float = 0.1, mode: str = "auto",
                 stream=None) -> None:
        for what, text in (("description", description), ("unit", unit)):
            if not isinstance(text, str):
                raise TypeError(f"Progress {what} must be a str, not {text!r}")
        for what, seconds in (("delay", delay), ("min_interval", min_interval)):
            if isinstance(seconds, bool) or not isinstance(seconds, Real) or seconds < 0:
                raise ValueError(f"Progress {what} must be a number >= 0, not {seconds!r}")
        if mode not in _MODES:
            raise ValueError(f"Progress mode must be one of {', '.join(_MODES)}, not {mode!r}")
        self._lock = threading.Lock()
        self._total = _check_count(total, "total")
        self.description, self.unit = description, unit
        self._value = 0
        self.postfix: dict = {}
        self._stream = stream if stream is not None else sys.stderr
        self._mode = _auto_mode(self._stream) if mode == "auto" else mode
        self._start = time.monotonic()
        self._show_at = self._start + delay
        self._min_interval = min_interval
        self._last_refresh = float("-inf")
        self._view = None
        self.closed = False

    # -- state ---------------------------------------------------------------
    @property
    def value(self) -> int:
        return self._value

    @property
    def total(self) -> int:
        return self._total

    @total.setter
    def total(self, total: int) -> None:
        self._total = _check_count(total, "total")
        self._refresh(force=False)

    @property
    def mode(self) -> str:
        """"widget", "stream" or "silent": how this progress is shown."""
        return self._mode

    @property
    def shown(self) -> bool:
        """Whether a view (bar or line) was put up."""
        return self._view is not None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._start

    @property
    def text(self) -> str:
        """The one-line summary: "description value/total unit key=value ..."."""
        parts = [self.description] if self.description else []
        parts.append(f"{self._value}/{self._total}")
        if self.unit:
            parts.append(self.unit)
        parts += [f"{key}={_format_value(v)}" for key, v in self.postfix.items()]
        return " ".join(parts)

    # -- changes ---------------------------------------------------------------
    def update(self, n: int = 1, **postfix) -> None:
        """Adds `n` to the count; `postfix` values (loss=0.31) are shown after it.

        Raises:
          TypeError: `n` is not an int.
          ValueError: `n` < 0.
        """
        n = _check_count(n, "increment")
        with self._lock:
            self._value += n
            self.postfix.update(postfix)
        self._refresh(force=False)

    def set(self, value: int, **postfix) -> None:
        """Sets the count to `value` (it may go down: a retried task); `postfix` as in update.

        Raises:
          TypeError, ValueError: `value` is not an int >= 0.
        """
        value = _check_count(value, "value")
        with self._lock:
            self._value = value
            self.postfix.update(postfix)
        self._refresh(force=False)

    def refresh(self) -> None:
        """Shows the view now if `delay` has passed (for waits with no new counts)."""
        self._refresh(force=False)

    def close(self, failed: bool = False) -> None:
        """Shows the final count (if shown at all) and stops; idempotent.

        Args:
          failed: mark the bar as failed (red) rather than done.
        """
        if self.closed:
            return
        self.closed = True
        if self._view is not None:
            self._view.close(self, failed)

    def _refresh(self, force: bool) -> None:
        if self.closed or self._mode == "silent":
            return
        now = time.monotonic()
        if now < self._show_at or (not force and now - self._last_refresh < self._min_interval):
            return
        self._last_refresh = now
        if self._view is None:
            self._view = _WidgetView(self) if self._mode == "widget" else \
                _StreamView(self._stream)
        self._view.refresh(self)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(failed=exc_type is not None)

    def __repr__(self) -> str:
        return f"<Progress {self.text}{' (closed)' if self.closed else ''}>"
