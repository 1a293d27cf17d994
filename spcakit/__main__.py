"""``python -m spcakit`` and the ``spcakit`` console script.

The command line's modules (typer, numpy, scipy, the plugins) are imported
inside :func:`main`, so that Ctrl-C during those first fractions of a second
ends like Ctrl-C during a run: "interrupted", exit code 130, no traceback.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from spcakit.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()


if __name__ == "__main__":
    main()
