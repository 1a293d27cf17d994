r"""Built-in plugin: the deflations and rank-one solvers of Mackey, *Deflation Methods for Sparse PCA*.

Registered through the ``spcakit`` entry-point group like any third-party plugin.
Hotelling's and projection deflation come with the SPCArt plugin; this one adds
the Schur complement, orthogonalized Hotelling, orthogonalized projection and
generalized deflations, the ``greedy`` and ``exhaustive`` solvers (with ``enumerated``, the exhaustive method's
stopper that reports its optimum), the ``swap``
refiner (block coordinate ascent on CPEV by support swaps), the ``orthogonal`` and ``uncorrelated`` refiners
(non-redundant components, :mod:`spcakit_deflation.nonredundant`), and spcakit's default
method ``auto`` (the ``best-of`` driver over a ``portfolio`` of methods, :mod:`spcakit_deflation.portfolio`). The
generalized deflation keeps its constraint :math:`B = I - QQ^\top` in the run's
carry under :data:`spcakit.core.records.CONSTRAINT`, where the solvers read it.
"""

from __future__ import annotations

from collections.abc import Callable

from spcakit.plugin_api import hookimpl, specs_root
from spcakit_deflation import deflators, nonredundant, portfolio, restarts, solvers, swap

PAPER = deflators.PAPER


@hookimpl
def spcakit_register_parts(register: Callable[..., None]) -> None:
    register(deflators.DEFLATORS + solvers.UPDATERS + solvers.STOPPERS + restarts.UPDATERS + portfolio.UPDATERS + portfolio.DRIVERS + swap.REFINERS
             + nonredundant.REFINERS)


@hookimpl
def spcakit_register_methods(register: Callable[..., None]) -> None:
    register(specs_root() / "methods" / "deflation")
