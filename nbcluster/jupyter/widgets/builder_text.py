"""The builder's text: the `%%tfserver cluster` cell and the Python code that start a
design, and the design as text and HTML for the widget's fallbacks.

Rule: pure, like builder_model: text from a Design, or the ValueError /
TypeError of `builder_model.validate` naming what is wrong with it. The cell
and the code make the same call as `builder_model.cluster_call`, so what the
user copies starts the cluster the Launch button would.
"""
from __future__ import annotations

import html
import json
import shlex

from nbcluster.jupyter.widgets import builder_model as model


def _options(design: model.Design) -> list:
    """The magic line's options after `cluster NAME`: ssh's, --env and --timeout,
    each only where it is not the magic's default."""
    words = []
    if design.launcher == "ssh":
        ssh = design.ssh
        words.append("--ssh")
        for option, value, default in (("--user", ssh.user, ""), ("--key", ssh.key, ""),
                                       ("--ssh-port", str(ssh.port), "22"),
                                       ("--python", ssh.python, "python3")):
            if value != default:
                words += [option, shlex.quote(value)]
        for option in ssh.options:
            words += ["-o", shlex.quote(option)]
    for variable, value in design.env.items():
        words += ["--env", shlex.quote(f"{variable}={value}")]
    if design.timeout != 60.0:
        words += ["--timeout", f"{design.timeout:g}"]
    return words


def _body(design: model.Design, spec, devices: dict) -> list:
    """The cell body's lines: `job: N` (or its addresses when `spec` gives them),
    or a block with the job's devices when it has some."""
    lines = []
    for job in design.jobs:
        tasks = json.dumps(spec[job.name]) if spec else str(job.tasks)
        if job.name not in devices:
            lines.append(f"{job.name}: {tasks}")
            continue
        lines += [f"{job.name}:", f"  {'addresses' if spec else 'tasks'}: {tasks}"]
        lines += [f"  {key}: {json.dumps(value)}" for key, value in devices[job.name].items()]
    return lines


def cell_text(design: model.Design, name: str = "cluster") -> str:
    """The `%%tfserver cluster NAME ...` cell that starts the same cluster.

    Args:
      design: the builder's design.
      name: the variable the cell binds the cluster to.
    Returns:
      The magic line, the body (one job a line, or a block with its devices)
      and a final newline.
    Raises:
      ValueError, TypeError: the design is not valid (see builder_model.validate).
    """
    method, args, kwargs = model.cluster_call(design)
    spec = args[0] if method == "from_spec" else None
    line = ["%%tfserver", "cluster", name, *_options(design)]
    body = _body(design, spec, kwargs.get("devices") or {})
    return " ".join(line) + "\n" + "\n".join(body) + "\n"


def python_code(design: model.Design, name: str = "cluster") -> str:
    """Python that starts the same cluster and binds it to `name`.

    Args:
      design: the builder's design.
      name: the variable the code binds the cluster to.
    Returns:
      An import line and one `Cluster.local(...)` or `Cluster.from_spec(...)` call.
    Raises:
      ValueError, TypeError: the design is not valid (see builder_model.validate).
    """
    method, args, kwargs = model.cluster_call(design)
    words = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return (f"from nbcluster.launch import Cluster\n\n"
            f"{name} = Cluster.{method}({', '.join(words)})\n")


def _rows(design: model.Design):
    for job in design.jobs:
        for i in range(job.tasks):
            yield (job.name, i, job.hosts[i], job.cpus[i] or "default",
                   job.gpus[i] or "not set")


def design_text(design: model.Design, state: str, cell: str) -> str:
    """The design as text (a widget's text/plain fallback): one line per task, the cell.

    Args:
      design: the builder's design (valid or not: the fallback shows it anyway).
      state: what the builder runs, e.g. "not launched".
      cell: the equivalent cell (or its "# not valid yet" line).
    """
    lines = [f"ClusterBuilder ({design.launcher} launcher, {state})"]
    lines += [f"  {job}:{i}  host={host}  cpus={cpus}  gpus={gpus}"
              for job, i, host, cpus, gpus in _rows(design)]
    return "\n".join(lines) + "\n\n" + cell


def design_html(design: model.Design, state: str, cell: str, css_class: str) -> str:
    """The design as an HTML table and the cell (the text/html fallback).

    Args:
      design, state, cell: as for `design_text`.
      css_class: the class of the outer div (the builder's root class).
    """
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in _rows(design))
    return (f"<div class=\"{css_class}\"><b>ClusterBuilder</b> "
            f"({html.escape(design.launcher)} launcher, {html.escape(state)})<table><tr>"
            f"<th>job</th><th>task</th><th>host</th><th>CPUs</th><th>GPUs</th></tr>{rows}"
            f"</table><pre>{html.escape(cell)}</pre></div>")
