r"""The two generic drivers: pure loops with explicit state.

``block`` runs one alternating scheme on all ``r`` loadings at once:

.. math::

    X_0 = \mathrm{init}(C),\quad
    Z_t = \mathrm{update}(X_{t-1}),\quad
    X_t = T_\lambda(Z_t),

until the stopper returns a reason. ``deflation`` runs ``block`` with
``r = 1`` on the problem, removes the found loading with the deflator, and
repeats ``r`` times. Neither driver knows any method: a method is the
parts it is given.
"""

from __future__ import annotations

import math
import time

from typing import TYPE_CHECKING

import attrs
import numpy as np

from spcakit.core.errors import BadPartResult, ZeroLoadingError
from spcakit.core.protocols import Deflator, Driver, Initializer, Refiner, Stopper, StepCallback, Truncator, Updater, part
from spcakit.core.records import COMPONENT, LOADING_PRODUCT, TRUNCATION_KEEPS, Carry, IterState, Outcome, nonzero_column_norms

if TYPE_CHECKING:  # the problem a run is given (spcakit.inputs.problem): parts and drivers only read it
    from spcakit.inputs.problem import Problem

__all__ = ["Parts", "StepCallback", "BlockDriver", "DeflationDriver", "block_step", "checked_matrix", "frobenius_distance", "prepare", "run_block"]


@attrs.frozen(kw_only=True)
class Parts:
    """The built parts of a method."""

    initializer: Initializer
    updater: Updater
    truncator: Truncator
    stopper: Stopper
    deflator: Deflator | None = None
    refiner: Refiner | None = None


def frobenius_distance(a: np.ndarray, b: np.ndarray, a_scale: np.ndarray | float = 1.0,
                       b_scale: np.ndarray | float = 1.0) -> float:
    """:math:`\\|A D_a^{-1} - B D_b^{-1}\\|_F` for column divisors ``a_scale`` and ``b_scale`` (1: none), a block
    of rows at a time (for ``A`` in Fortran order, a column at a time): no temporary the size of ``A``."""
    if a.flags.f_contiguous and not a.flags.c_contiguous:  # a column at a time
        a_div, b_div = np.broadcast_to(a_scale, a.shape[1:]), np.broadcast_to(b_scale, a.shape[1:])
        total = 0.0
        for j in range(a.shape[1]):
            difference = a[:, j] / a_div[j]
            difference -= b[:, j] / b_div[j]
            total += float(np.vdot(difference, difference))
        return float(np.sqrt(total))
    rows = max(1, (1 << 15) // max(1, a[:1].size))  # blocks of 256 KiB
    total = 0.0
    for start in range(0, a.shape[0], rows):
        difference = a[start : start + rows] / a_scale
        difference -= b[start : start + rows] / b_scale
        total += float(np.vdot(difference, difference))
    return float(np.sqrt(total))


#: :func:`unit_change` takes a change above this from the columns' cosines alone: twice the loosest tolerance of
#: the built-in stopping rules (SPCArt's 0.01), so that their decisions are taken on the measured difference.
COSINE_CHANGE = 0.02


def unit_change(x: np.ndarray, previous: np.ndarray, norms: np.ndarray, previous_norms: np.ndarray) -> float:
    r"""The relative change of the unit columns, :math:`\|X D^{-1} - X' D'^{-1}\|_F / \sqrt r` for ``x`` and
    ``previous`` (``p x r``) with their columns' exact lengths :math:`D`, :math:`D'` (the drivers' stopping rules read
    it as ``relative_change``).

    Each unit column's squared change is :math:`2 - 2\cos\theta_j`: one product of ``x`` with ``previous`` (a pass
    over both, no temporary), where measuring the difference makes and reads a block of it. The cosines' rounding
    (at most :math:`p\epsilon` each, about :math:`\sqrt p\,\epsilon` in practice) cancels in :math:`2 - 2\cos`:
    above :data:`COSINE_CHANGE` it leaves the change accurate to :math:`3 \cdot 10^{-8}` relative at
    ``p = 100 000`` (:math:`10^{-10}` in practice). Below it the difference itself is measured
    (:func:`frobenius_distance`), which has no cancellation.
    """
    r = x.shape[1]
    cosines = np.einsum("ij,ij->j", x, previous) / (norms * previous_norms)
    squared = float(np.sum(2.0 - 2.0 * cosines))
    if squared > COSINE_CHANGE**2 * r:
        return math.sqrt(squared / r)
    return frobenius_distance(x, previous, norms, previous_norms) / math.sqrt(r)


def checked_matrix(part: object, value: object, shape: tuple[int, int], what: str, *, finite: bool = False) -> np.ndarray:
    """``value`` as a float array of ``shape`` (and finite, if asked), or :class:`BadPartResult` naming ``part``."""
    if np.iscomplexobj(value):
        raise BadPartResult(part, f"{what} is complex; loadings are real")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise BadPartResult(part, f"{what} is not a numeric array (got {type(value).__name__})") from None
    if arr.shape != shape:
        raise BadPartResult(part, f"{what} has shape {arr.shape}; expected {shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise BadPartResult(part, f"{what} has NaN or infinite values")
    return arr


def block_step(problem: Problem, parts: Parts, state: IterState) -> IterState:
    """One update + truncation step: a pure function of the state."""
    proposal = parts.updater.propose(problem, state.x, state.updater_state)
    if not (isinstance(proposal, tuple) and len(proposal) == 3):
        raise BadPartResult(parts.updater, "propose must return (z, objective, state)")
    z, objective, updater_state = proposal
    del proposal  # z is released once truncated (see below)
    z = checked_matrix(parts.updater, z, state.x.shape, "the proposal z")
    empty = _empty_columns(z)
    if empty.size:
        raise ZeroLoadingError(
            f"the update direction of loading {int(empty[0]) + 1} is zero: the (deflated) covariance has no "
            "variance left in that direction, so r is larger than the rank of the data"
        )
    x = _truncated(parts, z)
    del z  # p x r: not held while the change is measured
    norms = nonzero_column_norms(x)
    # the change of the unit loadings, from x and the previous x (unit_change: their columns' cosines, or the
    # difference a block at a time): the state holds x alone (its loadings are made when asked for), so a step
    # holds four p x r arrays at most (the previous x, the updater's state, z and x)
    change = unit_change(x, state.x, norms, state.column_norms())
    return attrs.evolve(
        state,
        iteration=state.iteration + 1,
        x=x,
        norms=norms,
        loadings=None,
        relative_change=change,
        objective_history=state.objective_history + (float(objective),),
        updater_state=updater_state,
    )


def _empty_columns(z: np.ndarray) -> np.ndarray:
    """The indices of ``z``'s zero columns, or :class:`ZeroLoadingError` for a non-finite entry, from the columns'
    sums of squares (one pass, no temporary): a sum that is not finite is checked entry by entry (it may
    overflow from finite entries), and a zero sum column by column (it may underflow from tiny ones)."""
    squares = np.einsum("ij,ij->j", z, z)
    if not np.all(np.isfinite(squares)) and not np.all(np.isfinite(z)):
        raise ZeroLoadingError("the update produced non-finite values; the problem may be degenerate")
    zero = np.flatnonzero(squares == 0)
    return zero[~np.any(z[:, zero], axis=0)] if zero.size else zero


def _truncated(parts: Parts, z: np.ndarray) -> np.ndarray:
    """The truncation of ``z``: in place when the updater made ``z`` fresh and the truncation only selects entries
    (:meth:`~spcakit.core.protocols.Truncator.kept`), so that no second ``p x r`` array is made; else a new array."""
    if parts.updater.fresh_proposal and z.flags.writeable and z.flags.owndata:
        kept = parts.truncator.kept(z)
        if kept is not None:
            if not (isinstance(kept, np.ndarray) and kept.dtype == bool and kept.shape == z.shape):
                raise BadPartResult(parts.truncator, f"kept(z) must return a boolean array of z's shape {z.shape}")
            keep_only(z, kept)
            return z
    return checked_matrix(parts.truncator, parts.truncator(z), z.shape, "the truncated z", finite=True)


#: :func:`keep_only` zeroes by putting back the kept entries when they are at most this share of ``z``.
SCATTER_SHARE = 0.02


def keep_only(z: np.ndarray, kept: np.ndarray) -> None:
    """Zero the entries of ``z`` outside the boolean ``kept``, in place.

    When ``z`` and ``kept`` are both in C order (or both in Fortran order: the same entries, transposed) and
    ``kept`` holds at most :data:`SCATTER_SHARE` of the entries, the kept values are gathered, ``z`` is filled
    with zeros and they are put back (a memset and two passes over the kept ones); otherwise
    ``numpy.putmask``. On 100 000 x 20 in one thread: 100 entries kept per column 2.8 ms scattered (3.3 ms by
    ``putmask``), 15 000 per column 5.0 ms by ``putmask`` (9.3 ms scattered, 7.4 ms by ``numpy.copyto``
    through the mask). The same numbers either way, signs of zeros included.
    """
    if z.flags.f_contiguous and kept.flags.f_contiguous and not z.flags.c_contiguous:
        z, kept = z.T, kept.T  # the same entries, laid out in C order
    if z.flags.c_contiguous and kept.flags.c_contiguous and np.count_nonzero(kept) <= SCATTER_SHARE * z.size:
        flat = np.flatnonzero(kept)
        values = z.ravel()[flat]
        z.fill(0.0)
        z.ravel()[flat] = values
        return
    np.putmask(z, ~kept, 0.0)


def run_block(
    problem: Problem,
    r: int,
    parts: Parts,
    rng: np.random.Generator,
    carry: Carry,
    on_step: StepCallback | None = None,
    component: int = 0,
    n_components: int = 1,
    started: float | None = None,
) -> tuple[IterState, str]:
    """Iterate :func:`block_step` from the initializer until the stopper stops; the updater's ``init`` is told the
    component, the count and the run's start (:data:`~spcakit.core.records.COMPONENT`; ``started`` defaults to now)."""
    x0 = checked_matrix(parts.initializer, parts.initializer(problem, r, rng, carry), (problem.p, r), "the start X0",
                        finite=True)
    nonzero_column_norms(x0)  # a zero column of the start has no unit loading
    keeps = parts.truncator.keeps(problem.p)
    told = carry if keeps is None else carry.set(TRUNCATION_KEEPS, int(keeps))
    told = told.set(COMPONENT, (component, n_components, time.perf_counter() if started is None else started))
    state = IterState(iteration=0, x=x0, updater_state=parts.updater.init(problem, x0, told))
    del x0  # the state holds what is needed of the start
    while True:
        state = block_step(problem, parts, state)
        if on_step is not None:
            on_step(component, n_components, state.iteration)
        reason = parts.stopper(state)
        if reason is not None and not isinstance(reason, str):
            raise BadPartResult(parts.stopper, f"a stopper returns a reason (str) or None; got {reason!r}")
        if reason:
            return state, reason


def prepare(problem: Problem, r: int, parts: Parts, rng: np.random.Generator) -> Carry:
    """The run's first carry: the initializer's one-off ``prepare`` step on an empty one."""
    return parts.initializer.prepare(problem, r, rng, Carry())


@part("block")
class BlockDriver(Driver):
    """all r loadings updated together"""

    def __call__(
        self, problem: Problem, r: int, parts: Parts, rng: np.random.Generator, on_step: StepCallback | None = None
    ) -> Outcome:
        carry = prepare(problem, r, parts, rng)
        state, reason = run_block(problem, r, parts, rng, carry, on_step)
        return Outcome(
            loadings=state.loadings,
            iterations=state.iteration,
            stopping_reasons=(reason,),
            objective_history=state.objective_history,
        )


@part("deflation")
class DeflationDriver(Driver):
    """one loading at a time, deflating in between"""

    deflates = True

    def __call__(
        self, problem: Problem, r: int, parts: Parts, rng: np.random.Generator, on_step: StepCallback | None = None
    ) -> Outcome:
        if parts.deflator is None:
            raise ValueError("the deflation driver needs a deflator")
        # filled a column per round (contiguous: the deflator reads them, the last one as x), no copies per round
        loadings = np.zeros((problem.p, r), order="F")
        reasons: list[str] = []
        history: tuple[float, ...] = ()
        iterations = 0
        current = problem
        started = time.perf_counter()
        carry = prepare(problem, r, parts, rng)
        for k in range(r):
            try:
                state, reason = run_block(current, 1, parts, rng, carry, on_step, component=k, n_components=r,
                                          started=started)
            except ZeroLoadingError as exc:
                raise ZeroLoadingError(f"component {k + 1} of {r}: {exc}") from None
            loadings[:, k] = state.loadings[:, 0]
            x = loadings[:, k]
            product = parts.updater.loading_product(current, x, state.updater_state) if k + 1 < r else None
            reasons.append(reason)
            history += state.objective_history
            iterations += state.iteration
            if k + 1 < r:
                previous = loadings[:, : k + 1]
                previous.flags.writeable = False  # a view: a deflator reads it
                handed = carry if product is None else carry.set(LOADING_PRODUCT, (x, product))
                deflated = parts.deflator(current, x, previous, handed)
                if not (isinstance(deflated, tuple) and len(deflated) == 2 and isinstance(deflated[0], type(problem))
                        and isinstance(deflated[1], Carry)):
                    raise BadPartResult(parts.deflator, "a deflator returns (problem, carry)")
                current, carry = deflated[0], deflated[1].without(LOADING_PRODUCT)  # this loading's alone
        # the chain of deflated operators (p-vectors at every level) goes before the loadings' copy below
        current = carry = state = deflated = handed = product = None  # type: ignore[assignment]
        return Outcome(
            loadings=np.ascontiguousarray(loadings),
            iterations=iterations,
            stopping_reasons=tuple(reasons),
            objective_history=history,
        )
