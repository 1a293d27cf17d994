"""The command line's one error boundary (:func:`main`): every command ends in 0, 2, 130 or 1."""

from __future__ import annotations

import os
import sys

import typer

from spcakit.cli.common import EXIT_BAD_INPUT, app
from spcakit.core.errors import PartFailure, SpcakitError

EXIT_INTERNAL = 1


EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the one error boundary of the command line.

    Every command ends in exactly one of: success (0); a user error with a message saying what is
    wrong and what would be valid (2); an interruption, "interrupted" (130, no traceback); or an
    internal error - a short message naming the failing part and its plugin when it is known,
    asking to report it, with the traceback only under ``--debug`` or ``SPCAKIT_DEBUG=1`` (1).
    """
    # click's base of usage errors, whether typer vendors click (>= 0.16) or depends on it
    click_error = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("SPCAKIT_DEBUG") == "1"
    args = [a for a in args if a != "--debug"]
    try:
        code = app(args=args, prog_name="spcakit", standalone_mode=False)
        if code == EXIT_INTERRUPTED:  # typer turns Ctrl-C into this exit code, silently
            typer.echo("interrupted", err=True)
    except typer.Exit as exc:
        code = exc.exit_code
    except click_error as exc:  # usage errors: unknown option, missing argument
        if type(exc).__name__ != "NoArgsIsHelpError":
            exc.show()
        elif exc.format_message():  # `spcakit` alone: its help (which typer's rich layout would have printed)
            typer.echo(exc.format_message())
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt) as exc:
        cause = exc.__cause__ if isinstance(exc, typer.Abort) else exc
        if isinstance(cause, EOFError):
            typer.echo("Error: unexpected end of input", err=True)
            code = EXIT_BAD_INPUT
        else:
            typer.echo("interrupted", err=True)
            code = EXIT_INTERRUPTED
    except SpcakitError as exc:
        typer.echo(f"Error: {exc}", err=True)
        code = EXIT_BAD_INPUT
    except Exception as exc:
        if debug:
            import traceback

            traceback.print_exc()
        what = str(exc) if isinstance(exc, PartFailure) else f"{type(exc).__name__}: {exc}"
        typer.echo(
            f"Internal error: {what}\n(this is a bug, not a problem with your input: please report it; "
            "run again with --debug or SPCAKIT_DEBUG=1 for the traceback)",
            err=True,
        )
        code = EXIT_INTERNAL
    sys.exit(code if isinstance(code, int) else 0)
