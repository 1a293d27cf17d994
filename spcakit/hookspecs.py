"""The two hooks a spcakit plugin may implement.

A plugin is any module or object with functions marked
``@spcakit.hookimpl``; packages announce theirs through the ``spcakit``
entry-point group (the built-in plugins do exactly the same)::

    [project.entry-points.spcakit]
    firm = "spcakit_firm"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("spcakit")
hookimpl = pluggy.HookimplMarker("spcakit")


@hookspec
def spcakit_register_parts(register: Callable[..., Any]) -> None:
    """Register parts: ``register(role, name, factory, *, summary="", paper="", lam=None)``.

    ``role`` is one of ``initializer``, ``updater``, ``truncator``,
    ``deflator``, ``stopper`` (or ``driver``); ``factory(**params)``
    returns the part. ``lam`` names the factory parameter ``--lam`` sets.
    """


@hookspec
def spcakit_register_methods(register: Callable[..., Any]) -> None:
    """Register methods: ``register(spec)`` with a :class:`~spcakit.specs.MethodSpec`,
    a spec dictionary, or a path to a TOML spec file."""
