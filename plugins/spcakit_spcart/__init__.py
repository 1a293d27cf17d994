"""Built-in plugin: the parts and methods of the SPCArt paper.

Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis via Rotation and
Truncation*. Registered through the ``spcakit`` entry-point group, exactly
like a third-party plugin.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.hookspecs import hookimpl
from spcakit.specs import specs_root
from spcakit_spcart import deflators, initializers, refiners, stoppers, truncations, updaters

PAPER = truncations.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(
        truncations.TRUNCATORS + updaters.UPDATERS + initializers.INITIALIZERS + stoppers.STOPPERS + deflators.DEFLATORS
        + refiners.REFINERS
    )


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "spcart")
