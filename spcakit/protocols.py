r"""The five kinds of parts every sparse PCA method here is assembled from.

A method alternates two steps on a ``p x r`` iterate :math:`X`:

1. an **Updater** proposes a dense direction :math:`Z` from :math:`X`
   (a rotation of the PCA loadings, a power step :math:`Z = CX`, ...);
2. a **Truncator** zeroes small entries of each column of :math:`Z`,
   giving the next :math:`X`;

starting from the **Initializer**'s :math:`X_0` and until a **Stopper** says
so. A **Deflator** removes a found component from the problem between the
rounds of the deflation driver. Parts are pure: they never mutate their
inputs, and randomness comes only through an explicit
``numpy.random.Generator``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from spcakit.problem import Problem
    from spcakit.state import IterState

#: The roles a part can play, in the order a method spec lists them.
ROLES = ("driver", "initializer", "updater", "truncator", "deflator", "stopper")


@runtime_checkable
class Initializer(Protocol):
    """Return the starting iterate :math:`X_0` (``p x r``).

    An initializer may also define ``prepare(problem, r, rng) -> Problem``:
    the drivers call it once, before the first iteration (SPCA-SP computes
    its initial subspace projection there).
    """

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray: ...


@runtime_checkable
class Updater(Protocol):
    """Propose the dense matrix :math:`Z` that the truncation acts on.

    ``init`` computes whatever the updater carries through the iterations
    (for SPCArt, the PCA loadings :math:`V`); ``propose`` returns
    :math:`Z` and the updater's objective at the current :math:`X`.
    """

    def init(self, problem: Problem, x0: np.ndarray) -> Any: ...

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]: ...


@runtime_checkable
class Truncator(Protocol):
    """Zero small entries of each column of :math:`Z`.

    ``check(p)`` raises :class:`~spcakit.errors.InvalidParameterError` when
    the truncation parameter is outside its valid range for dimension ``p``.
    The driver normalises the returned columns to unit length.
    """

    def __call__(self, z: np.ndarray) -> np.ndarray: ...

    def check(self, p: int) -> None: ...


@runtime_checkable
class Deflator(Protocol):
    """Return the problem with the unit loading ``x`` removed.

    ``previous`` holds the loadings found so far (``p x t``, ``x`` last).
    """

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray) -> Problem: ...


@runtime_checkable
class Stopper(Protocol):
    """Return a reason to stop (a short sentence) or ``None`` to go on."""

    def __call__(self, state: IterState) -> str | None: ...
