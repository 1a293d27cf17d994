"""The command line's progress line: drawn by rich on a terminal, nothing otherwise, gone when the run ends."""

from __future__ import annotations

import io

from rich.console import Console

import spcakit
from spcakit.cli.common import Progress


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=80), out


def test_the_progress_line_shows_the_component_and_iteration_then_clears():
    console, out = _terminal()
    progress = Progress(True, console=console)
    spcakit.fit("builtin:pitprops", "tpower", r=2, k=4, on_step=progress)
    progress.close()
    text = out.getvalue()
    assert "component 2/2, iteration" in text  # the last step drawn
    assert progress._display is None  # stopped: the transient line is erased


def test_no_progress_when_stderr_is_not_a_terminal():
    console, out = _terminal()
    progress = Progress(False, console=console)
    progress(0, 2, 1)
    progress.show("1 level(s) done")
    progress.close()
    assert out.getvalue() == ""
