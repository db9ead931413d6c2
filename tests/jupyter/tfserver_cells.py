"""Running `%%tfserver` cells and lines in a test's IPython shell, as a notebook would."""
from __future__ import annotations

from IPython.utils.capture import capture_output

from nbcluster.jupyter.failures import TfServerError

from process_checks import error_lines


def cell(ip, line: str, body: str):
    """Runs `%%tfserver <line>` with `body`; (stdout, stderr, rich outputs). A failure
    raises TfServerError (the cell goes red): its rendered lines stand in for stderr."""
    return run(ip.run_cell_magic, "tfserver", line, body)


def line(ip, line: str):
    return run(ip.run_line_magic, "tfserver", line)


def run(magic, *args):
    with capture_output() as cap:
        try:
            magic(*args)
        except TfServerError as e:
            assert not cap.stderr, cap.stderr  # raised, not printed as well
            return cap.stdout, "\n".join(e._render_traceback_()), cap.outputs
    return cap.stdout, cap.stderr, cap.outputs


def one_error(err: str) -> str:
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("tfserver: error: "), err
    return lines[0]
