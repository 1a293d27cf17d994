"""The generic parts: the ones every method may name, registered as a plugin like every other.

Each paper's plugin adds only what its paper adds; the parts many methods share live here, so a
method of one plugin never depends on another plugin being installed or enabled.

* :mod:`~spcakit.parts.initializers`: ``pca``, ``max-diagonal``, ``max-norm-column``, ``random``;
* :mod:`~spcakit.parts.updaters`: ``power``, ``identity``;
* :mod:`~spcakit.parts.truncators`: ``none``, ``hard``, ``soft``, ``sparsity``, ``energy``;
* :mod:`~spcakit.parts.nonnegative`: ``nonnegative`` (wraps another truncation: loadings of one sign);
* :mod:`~spcakit.parts.deflators`: ``hotelling``, ``projection``;
* :mod:`~spcakit.parts.stoppers`: ``max-iterations``, ``relative-change``, ``objective-change``, ``any-of``.

The drivers (``block``, ``deflation``) are :mod:`spcakit.core.drivers`. :mod:`~spcakit.parts.plugin` registers
them, these parts and the generic metrics; every plugin session loads it first.

What may be imported here: :mod:`spcakit.core`, :mod:`spcakit.numerics`, :mod:`spcakit.inputs` (the problem) and
:mod:`spcakit.analysis` (the metrics the built-in plugin registers).
"""

from __future__ import annotations

from spcakit.parts import (
    deflators,
    initializers,
    nonnegative,
    stoppers,
    truncators,
    updaters,
)

#: Every generic part class, as the core plugin registers them.
PARTS: list[type] = [
    *initializers.INITIALIZERS, *updaters.UPDATERS, *truncators.TRUNCATORS, *nonnegative.TRUNCATORS, *deflators.DEFLATORS, *stoppers.STOPPERS,
]

__all__ = ["PARTS", "deflators", "initializers", "nonnegative", "stoppers", "truncators", "updaters"]
