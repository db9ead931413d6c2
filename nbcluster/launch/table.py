"""A cluster's tasks as a plain-text or HTML table (Cluster's __repr__ and _repr_html_)."""
from __future__ import annotations

import html
from typing import Optional

COLUMNS = ("job", "task", "state", "address", "pid@host", "devices", "uptime", "last error")
_STATE_COLORS = {"up": "#1a7f37", "starting": "#9a6700", "down": "#cf222e",
                 "failed": "#cf222e", "stopped": "#57606a", "pending": "#9a6700"}


def _uptime(seconds: Optional[float]) -> str:
    if seconds is None:
        return ""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def _devices(names: tuple) -> str:
    """'CPU:0, GPU:0' from full device names."""
    return ", ".join(name.rsplit("/device:", 1)[-1] for name in names)


def rows(statuses: list) -> list:
    """One tuple of strings per TaskStatus, in COLUMNS' order."""
    out = []
    for s in statuses:
        where = f"{s.pid}@{s.host}" if s.pid and s.host else str(s.pid or "") or s.host
        error = s.last_error.splitlines()[0] if s.last_error else ""
        out.append((s.job, str(s.index), s.state, s.address, where, _devices(s.devices),
                    _uptime(s.uptime_s), error[:120]))
    return out


def text_table(title: str, statuses: list) -> str:
    """`title`, then the tasks as aligned columns."""
    table = [COLUMNS] + rows(statuses)
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = [title]
    for row in table:
        lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def html_table(title: str, statuses: list) -> str:
    """`title` and the tasks as an HTML table, each state in its colour."""
    head = "".join(f"<th style='text-align:left'>{html.escape(c)}</th>" for c in COLUMNS)
    body = []
    for row in rows(statuses):
        cells = []
        for column, cell in zip(COLUMNS, row):
            text = html.escape(cell)
            if column == "state":
                text = (f"<span style='color:{_STATE_COLORS.get(cell, 'inherit')}'>"
                        f"&#9679; {text}</span>")
            cells.append(f"<td style='text-align:left'>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<div class='nbcluster-cluster'><b>{html.escape(title)}</b>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f"</div>")
