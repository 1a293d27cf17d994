"""Built-in plugin: SPCA-SP of Xu, Yang & Zhang, *Fast Deflation Sparse PCA via Subspace Projections*.

Registered through the ``spcakit`` entry-point group like any third-party plugin.

* :mod:`~spcakit_subspace.parts`: the initializer ``linear-time-svd``, the
  updater ``subspace-power`` and the deflator ``householder-subspace``;
* :mod:`~spcakit_subspace.subspace`: the search subspace they hand on in
  the run's carry (:data:`~spcakit_subspace.subspace.SUBSPACE`);
* :mod:`~spcakit_subspace.bounds`: Prop. 3.2's orthogonality of a truncated pair;
* the method ``spca-sp`` (``specs/methods/subspace/``).
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.plugin_api import hookimpl, specs_root
from spcakit_subspace import parts

PAPER = parts.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(parts.PARTS)


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "subspace")
