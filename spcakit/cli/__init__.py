"""The ``spcakit`` command line (typer).

Method, part and role choices are read from the registry after plugins load,
so a third-party plugin's parts appear here exactly like the built-ins.
Bad input gets one clear line on stderr and exit code 2; nothing is written
to ``--out`` unless the run succeeded.

The package's modules: :mod:`~spcakit.cli.common` (the app, errors, input, output, progress),
:mod:`~spcakit.cli.options` (the options the commands share and their parsing), :mod:`~spcakit.cli.fitting`
(``run``, ``compose``, ``transform``), :mod:`~spcakit.cli.levels` (``path``, ``cv``), :mod:`~spcakit.cli.listing`
(``methods``, ``parts``, ``plugins``, ``reproduce``, ``plot``), :mod:`~spcakit.cli.stability` (``stability``),
:mod:`~spcakit.cli.helpformat` (the layout of the help screens) and :mod:`~spcakit.cli.boundary` (:func:`main`,
the one error boundary).
"""

from __future__ import annotations

import contextlib
import errno
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from spcakit.cli import boundary, fitting, levels, stability, listing  # noqa: F401 - importing them registers their commands, in the order `spcakit --help` lists them
from spcakit.cli.boundary import EXIT_INTERNAL, EXIT_INTERRUPTED
from spcakit.cli.common import EXIT_BAD_INPUT, app, render_text
from spcakit.cli.options import NOT_PART_PARAMETERS, BadInput, parse_k, parse_lam, parse_params, parse_value
from spcakit.core.protocols import MetricWarning
from spcakit.output.stdout import GuardedStdout, stdout_failure


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the error boundary (:func:`spcakit.cli.boundary.main`) behind a guarded standard output.

    Everything printed goes through a :class:`~spcakit.output.stdout.GuardedStdout`: characters the output's encoding
    cannot hold are written as ``\\uXXXX`` escapes with one warning, and a standard output that cannot be
    written (a full device, a closed descriptor) ends the command with a message on stderr and exit 2, saying
    whether the result is in ``--out``; a pipe whose reader stopped reading (``| head``) ends the output quietly,
    as the reader asked. A plugin metric's warning
    (:class:`~spcakit.core.protocols.MetricWarning`) is one ``warning: ...`` line on stderr.
    """
    args = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    guard = GuardedStdout(sys.stdout, on_escape=_escaping)
    previous, sys.stdout = sys.stdout, guard  # type: ignore[assignment]
    code: Any = 0
    try:
        with _metric_warnings():
            boundary.main(args)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdout = previous
    guard.flush()
    if guard.failure is not None and guard.failure.errno != errno.EPIPE:  # a reader that stopped reading chose to
        sys.stderr.write(f"Error: {stdout_failure(guard.failure, _out_option(args))}\n")
        code = code or EXIT_BAD_INPUT
    sys.exit(code)


def _escaping(character: str, encoding: str) -> None:
    sys.stderr.write(
        f"warning: the standard output's encoding ({encoding}) cannot write {character!r}; such characters are "
        "written as \\uXXXX escapes (JSON reads them back as the same characters); set PYTHONIOENCODING=utf-8 "
        "to write them as they are, or use --out FILE (always UTF-8)\n"
    )


@contextlib.contextmanager
def _metric_warnings() -> Iterator[None]:
    """Within it, a :class:`~spcakit.core.protocols.MetricWarning` is one ``warning: ...`` line on stderr."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="SPCAKIT_(LOAD|DISABLE)_PLUGINS names")  # echoed as notes instead
        show = warnings.showwarning

        def on_stderr(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            if issubclass(category, MetricWarning):
                sys.stderr.write(f"warning: {message}\n")
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = on_stderr
        yield


def _out_option(args: list[str]) -> str | None:
    """The value of ``--out``/``-o`` among ``args`` (``None`` without one)."""
    for i, arg in enumerate(args):
        if arg in ("--out", "-o") and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--out="):
            return arg.split("=", 1)[1]
    return None

__all__ = [
    "app",
    "main",
    "render_text",
    "parse_k",
    "parse_lam",
    "parse_params",
    "parse_value",
    "NOT_PART_PARAMETERS",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "BadInput",
]
