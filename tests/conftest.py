"""Shared fixtures: real data sets from ../shared/data (skipped cleanly when absent)."""

from __future__ import annotations

import contextlib
import io
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import settings
from typer.testing import CliRunner, Result

# Property tests draw the same examples on every run and machine (a test that passes in review passes
# in CI); SPCAKIT_HYPOTHESIS_EXPLORE=1 draws new random examples to look for counterexamples.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("explore" if os.environ.get("SPCAKIT_HYPOTHESIS_EXPLORE") == "1" else "deterministic")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def load_shared():
    """``load_shared("name.npz")`` returns the archive's arrays, or skips when absent."""

    def load(name: str) -> dict[str, np.ndarray]:
        path = SHARED_DATA / name
        if not path.exists():
            pytest.skip(f"{path} is absent")
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}

    return load


# -- the shared_data marker: which tests read ../shared/data, and how many of them ran ---------------------
_SHARED_FIXTURES = {"shared_data", "load_shared"}
_shared_outcomes: dict[str, str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that reads ../shared/data (through the fixtures above) with ``shared_data``."""
    for item in items:
        if _SHARED_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.shared_data)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "shared_data" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _shared_outcomes[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _shared_outcomes:
        return
    counts = Counter(_shared_outcomes.values())
    where = SHARED_DATA if SHARED_DATA.is_dir() else f"{SHARED_DATA} (absent)"
    terminalreporter.write_line(
        f"shared data ({where}): {len(_shared_outcomes)} tests read it: {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['skipped']} skipped"
    )


@pytest.fixture(scope="module")
def holes_csv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """``(path, missing)``: a CSV of planted data (one support of 3 of 6 variables) with a tenth of its cells empty or
    ``NA``, and the mask of those cells."""
    from spcakit.inputs.datasets import planted_support

    x = planted_support(80, 6, [3], [4.0], seed=5).matrix
    missing = np.random.default_rng(0).random(x.shape) < 0.1
    cells = [["" if m and (i + j) % 2 else "NA" if m else repr(float(v)) for j, (v, m) in enumerate(zip(row, flags))]
             for i, (row, flags) in enumerate(zip(x, missing))]  # fmt: skip
    path = tmp_path_factory.mktemp("missing") / "holes.csv"
    path.write_text("\n".join([",".join("abcdef")] + [",".join(row) for row in cells]) + "\n")
    return path, missing


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch):
    """``count_calls(owner, name)``: ``{"n": ...}``, the number of calls of ``owner.name`` (a function or method)
    from then on, counted by a wrapper set with ``monkeypatch`` (undone after the test)."""

    def start(owner: object, name: str) -> dict[str, int]:
        calls = {"n": 0}
        original = getattr(owner, name)

        def counted(*args, **kwargs):
            calls["n"] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
        return calls

    return start


# -- the command line, run in-process ----------------------------------------------------------------------
class Ran(NamedTuple):
    """What :meth:`CommandLine.main` saw: the exit code and the two streams (unpacks as ``code, out, err``)."""

    code: Any
    out: str
    err: str

    @property
    def output(self) -> str:
        """Everything printed: standard output, then standard error."""
        return self.out + self.err

    @property
    def code_and_output(self) -> tuple[Any, str]:
        """``(code, output)``."""
        return self.code, self.output


class CommandLine:
    """The ``spcakit`` command line in-process, two ways (see :func:`cli`)."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def invoke(self, *args: object, input: str | bytes | None = None, env: Mapping[str, str | None] | None = None,
               **kwargs: Any) -> Result:
        """Typer's :class:`~typer.testing.CliRunner` on :data:`spcakit.cli.app`, each argument ``str()``-ed: its
        ``Result`` (``exit_code``, ``output``, ``stdout``, ``stderr``, ``exception``). ``kwargs`` go to
        ``CliRunner.invoke`` (``catch_exceptions``, ``terminal_width``, ...)."""
        from spcakit.cli import app

        return self.runner.invoke(app, [str(a) for a in args], input=input, env=env, **kwargs)

    def main(self, *args: object) -> Ran:
        """The console entry point, the error boundary :func:`spcakit.cli.main`, with standard output and error
        captured (``contextlib.redirect_stdout``/``redirect_stderr``); it must end in ``SystemExit``, whose code
        is returned with the two streams."""
        from spcakit import cli

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as info:
            cli.main([str(a) for a in args])
        return Ran(info.value.code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def cli() -> CommandLine:
    """The ``spcakit`` command line, in-process: ``cli.invoke(*args)`` runs the Typer app under a ``CliRunner``
    (a ``Result``); ``cli.main(*args)`` runs the console entry point, the error boundary, with its output captured
    (a :class:`Ran`: ``code``, ``out``, ``err``, ``output``). Session-scoped (it holds no state), so property
    tests (``@given``) and module-scoped fixtures can use it."""
    return CommandLine()
