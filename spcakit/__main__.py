"""``python -m spcakit`` and the ``spcakit`` console script.

The command line's modules (typer, numpy, scipy, the plugins) are imported
inside :func:`main`, so that Ctrl-C during those first fractions of a second
ends like Ctrl-C during a run: "interrupted", exit code 130, no traceback.
"""

from __future__ import annotations

import gc
import os
import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    # The command line's imports (typer, numpy, spcakit) allocate objects by the hundred thousand, none of them
    # garbage, and every 700 allocations start a collection that scans the young ones again, now and then all of
    # them. With the collector paused during the imports and their objects frozen after (never scanned again) the
    # import took 0.374 s instead of 0.405 (medians of 15 processes). Cycles made later are collected as ever.
    gc.disable()
    try:
        from spcakit.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    finally:
        gc.freeze()
        gc.enable()
    try:
        cli_main()
    except SystemExit as exc:
        if exc.code != EXIT_INTERRUPTED and not _abandoned_work():
            raise
        # every finally block has run: end the process now, before the libraries' exit handlers (a decomposition
        # abandoned to Ctrl-C or to a time limit may still run in LAPACK, whose buffers they free: SIGSEGV instead of
        # the exit code; waiting for it instead would overrun the time limit by the rest of that decomposition)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status(exc.code))


def _abandoned_work() -> bool:
    linalg = sys.modules.get("spcakit.numerics.linalg")
    return bool(linalg is not None and linalg.abandoned_still_running())


def _exit_status(code: object) -> int:
    """The process's exit status for ``SystemExit(code)``, as Python gives it (a message: 1)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


if __name__ == "__main__":
    main()
