"""spcakit.output.progress: reports reach the listener of the enclosing block only, and the command line's progress
line draws them on a terminal, a few times a second at most, and not at all otherwise."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from spcakit.output import progress
from spcakit.cli.common import Progress
from spcakit.output.progress import Report


def test_a_report_without_a_listener_does_nothing():
    assert not progress.listening()
    progress.report("search", 3, best=1.0, bound=2.0)  # no error, nowhere to go


def test_reports_reach_the_innermost_listener_and_the_outer_one_comes_back():
    outer: list[Report] = []
    inner: list[Report] = []
    with progress.listen(outer.append):
        progress.report("a", 1)
        with progress.listen(inner.append):
            assert progress.listening()
            progress.report("b", 2, unit="nodes", best=1, bound=4)
        progress.report("c", 3)
    assert not progress.listening()
    assert [r.task for r in outer] == ["a", "c"]
    assert inner == [Report(task="b", count=2, unit="nodes", best=1.0, bound=4.0)]


def test_the_listener_is_restored_after_an_error():
    with pytest.raises(ZeroDivisionError), progress.listen(lambda report: None):
        1 / 0  # noqa: B018
    assert not progress.listening()


@pytest.mark.parametrize(
    ("report", "gap", "text"),
    [
        (Report(task="branch and bound", count=1024, unit="nodes", best=3.0, bound=4.0), 0.25,
         "branch and bound: 1,024 nodes, best 3, bound 4, gap 25 %"),
        (Report(task="search", count=0), None, "search: 0 steps"),
        (Report(task="search", count=2, best=0.0, bound=0.0), 0.0, "search: 2 steps, best 0, bound 0, gap 0 %"),
        (Report(task="search", count=2, best=2.0, bound=1.9), 0.0, "search: 2 steps, best 2, bound 1.9, gap 0 %"),
    ],
)  # fmt: skip
def test_a_report_describes_itself(report, gap, text):
    assert report.gap == gap and report.describe() == text


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


def test_the_progress_line_draws_a_parts_report_after_the_last_level(monkeypatch):
    monkeypatch.setattr("spcakit.cli.common.time.monotonic", lambda: 5.0)  # both reports at once
    console, out = _terminal()
    line = Progress(True, console=console)
    shown: list[str] = []
    draw = line.show
    line.show = lambda text: (shown.append(text), draw(text))  # type: ignore[method-assign]
    line.level_done("2: CPEV 0.4000")
    with line.listening():
        progress.report("branch and bound", 7, unit="nodes", best=3.0, bound=3.5)
        progress.report("branch and bound", 8, unit="nodes", best=3.1, bound=3.4)  # within the interval: not drawn
    assert not progress.listening()
    line.close()
    assert shown == ["1 level(s) done, the last at 2: CPEV 0.4000",
                     "1 level(s) done, the last at 2: CPEV 0.4000; branch and bound: 7 nodes, best 3, bound 3.5, gap 14.3 %"]
    assert "branch and bound: 7 nodes" in out.getvalue()


def test_the_progress_line_redraws_a_report_once_the_interval_has_passed(monkeypatch):
    line = Progress(True, console=_terminal()[0])
    shown: list[str] = []
    line.show = shown.append  # type: ignore[method-assign]
    clock = iter([10.0, 10.1, 10.3])
    monkeypatch.setattr("spcakit.cli.common.time.monotonic", lambda: next(clock))
    for count in (1, 2, 3):
        line.report(Report(task="search", count=count))
    assert shown == ["search: 1 steps", "search: 3 steps"]


def test_no_listener_and_no_line_when_stderr_is_not_a_terminal():
    console, out = _terminal()
    line = Progress(False, console=console)
    with line.listening():
        assert not progress.listening()  # nothing installed: reports cost nothing
        progress.report("branch and bound", 1, unit="nodes", best=1.0, bound=2.0)
    line.report(Report(task="search", count=1))
    line.close()
    assert out.getvalue() == ""
