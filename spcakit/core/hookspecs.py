"""The hooks a spcakit plugin may implement: parts, methods, metrics, and the pieces experiments name.

A plugin is any module or object with functions marked
``@spcakit.hookimpl``; packages announce theirs through the ``spcakit``
entry-point group (the built-in plugins do exactly the same)::

    [project.entry-points.spcakit]
    firm = "spcakit_firm"

A hook registers by calling ``register`` and returns nothing. A hook that
returns a value (what it should have registered), calls ``register`` with
something it does not take (``register(42)``), or raises, fails its plugin:
the plugin is listed as failed with that reason, everything it registered is
removed, and every other plugin keeps working (:mod:`spcakit.core.plugins`).
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
    """Register methods: ``register(spec)`` with a :class:`~spcakit.core.specs.MethodSpec`,
    a spec dictionary, a path to a TOML spec file, or a folder of them."""


@hookspec
def spcakit_register_metrics(register: Callable[..., Any]) -> None:
    """Register metrics: ``register(metric)`` or ``register([metric, ...])`` with
    :class:`spcakit.core.protocols.Metric` records, computed for every run."""


@hookspec
def spcakit_register_experiment_pieces(register: Callable[..., Any]) -> None:
    """Register what experiment specs (``specs/experiments/``, ``spcakit reproduce``) name besides methods:
    ``register(kind, name, function)``, ``kind`` one of :data:`spcakit.core.registry.PIECE_KINDS`:

    * ``"generator"``: the random problems of a ``realizations`` case, ``function(rng, **parameters)``
      returning a covariance matrix (``generator = { name = ..., <parameter> = ... }``);
    * ``"start"``: a row's given start, ``function(covariance, m, keywords)`` returning the ``p x m``
      matrix passed to :func:`spcakit.fit` as ``w0`` (``start = NAME``);
    * ``"score"``: how a ``curve`` row is scored instead of by the spec's metric,
      ``function(result, *, covariance, eigenvalues, m, r, value)`` returning a number, with the
      covariance matrix, its eigenvalues, the spec's ``r`` (``m``), the row's ``r`` and the swept value
      (``score = NAME``).

    A paper's plugin registers its experiments' pieces, so that the experiment itself is data.
    """
