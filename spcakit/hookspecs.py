"""The three hooks a spcakit plugin may implement: parts, methods and metrics.

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
#: Marks a plugin's hook implementations: ``@spcakit.hookimpl`` on a function named as one of the hooks.
hookimpl = pluggy.HookimplMarker("spcakit")


@hookspec
def spcakit_register_parts(register: Callable[..., Any]) -> None:
    """Register parts: ``register(PartClass)`` or ``register([PartClass, ...])``.

    A part class is made with :func:`spcakit.part` and derives from the base
    class of its role (:class:`spcakit.Truncator`, ...); it says its name,
    summary, paper and λ field itself.
    """


@hookspec
def spcakit_register_methods(register: Callable[..., Any]) -> None:
    """Register methods: ``register(spec)`` with a :class:`~spcakit.specs.MethodSpec`,
    a spec dictionary, a path to a TOML spec file, or a folder of them."""


@hookspec
def spcakit_register_metrics(register: Callable[..., Any]) -> None:
    """Register metrics: ``register(metric)`` or ``register([metric, ...])`` with
    :class:`spcakit.metrics.Metric` records, computed for every run."""
