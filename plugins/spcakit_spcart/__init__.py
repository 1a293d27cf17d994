"""Built-in plugin: the parts and methods of the SPCArt paper.

Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis via Rotation and
Truncation*. Registered through the ``spcakit`` entry-point group, exactly
like a third-party plugin. The generic parts its methods share with the others
(starts, power step, truncations, Hotelling's and projection deflation,
stoppers) are the core's (:mod:`spcakit.parts`); this plugin adds SPCArt's
rotation, GPower's step, penalty and support re-fit, and the methods.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.plugin_api import hookimpl, specs_root
from spcakit_spcart import refiners, truncations, updaters

PAPER = updaters.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(truncations.TRUNCATORS + updaters.UPDATERS + refiners.REFINERS)


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "spcart")
