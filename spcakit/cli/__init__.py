"""The ``spcakit`` command line (typer).

Method, part and role choices are read from the registry after plugins load,
so a third-party plugin's parts appear here exactly like the built-ins.
Bad input gets one clear line on stderr and exit code 2; nothing is written
to ``--out`` unless the run succeeded.

The package's modules: :mod:`~spcakit.cli.common` (the app, errors, input, output, progress),
:mod:`~spcakit.cli.options` (the options the commands share and their parsing), :mod:`~spcakit.cli.fitting`
(``run``, ``compose``, ``transform``), :mod:`~spcakit.cli.levels` (``path``, ``cv``), :mod:`~spcakit.cli.listing`
(``methods``, ``parts``, ``plugins``, ``reproduce``, ``plot``) and :mod:`~spcakit.cli.boundary` (:func:`main`,
the one error boundary).
"""

from __future__ import annotations

from spcakit.cli import fitting, levels, listing  # noqa: F401 - importing them registers their commands
from spcakit.cli.boundary import EXIT_INTERNAL, EXIT_INTERRUPTED, main
from spcakit.cli.common import EXIT_BAD_INPUT, app, render_text
from spcakit.cli.options import NOT_PART_PARAMETERS, BadInput, parse_k, parse_lam, parse_params, parse_value

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
