r"""Built-in plugin: certifiably optimal sparse loadings by branch and bound (issue 26).

Registered through the ``spcakit`` entry-point group like any third-party plugin. The method ``exact``
(``specs/methods/exact/``) runs the ``branch-and-bound`` solver once per loading under any deflation (the
core's projection deflation by default, so that the plugin needs no other) and the ``certified`` stopper, which states for each loading whether it is
proven optimal or, when the time limit stopped the search, its bound and gap. Mackey's ``exhaustive``
stays as the brute-force reference.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.plugin_api import hookimpl, specs_root
from spcakit_exact import parts

PAPER = parts.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(parts.PARTS)


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "exact")
