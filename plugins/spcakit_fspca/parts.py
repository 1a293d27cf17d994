r"""Parts of Tian, Wang, Nie & Li, *Learning Feature Sparse Principal Subspace*
(FSPCA, NeurIPS 2020), for the drivers of :mod:`spcakit.drivers`.

* ``row-sparse`` (truncator, ``k``): the :math:`\ell_{2,0}` truncation - keep
  the ``k`` rows of :math:`Z` with the largest :math:`\ell_2` norms, so every
  loading shares one support of ``k`` variables. Usable with any updater:
  ``--updater rotation --truncator row-sparse`` is a row-sparse SPCArt.
* ``go`` (updater, ``k``, ``epsilon = 0``): Algorithm 1 on :math:`(A+\varepsilon I)_m`
  with the eigen-refinement on :math:`A`; one step, ignores its start.
* ``ipu`` (updater, ``k``, ``epsilon = 0.1``): one iteration of Algorithm 2
  per driver step; its objective :math:`\operatorname{tr}(W_{t+1}^\top A W_{t+1})`
  is recorded, and never decreases after the first step (Thm. 5.5).
* ``exhaustive-support`` (updater, ``k``): the global optimum by enumeration
  (small ``d``).
* ``subspace-start`` (initializer, ``start``, ``restarts``, ``w0``): the
  :math:`m` leading eigenvectors (``low-rank``: IPU's first step from them is
  Go on :math:`(A_\varepsilon)_m`), a random orthonormal subspace
  (``random``, ``restarts`` of them), or a given :math:`W_0` (``given``).
* ``support-fixed-point`` (stopper, ``max_iter``): stop when
  :math:`W_t = W_{t-1}` (Algorithm 2, line 8) or after ``max_iter`` steps.
* ``multistart`` (driver): the block driver once per start the initializer
  asks for (its ``restarts``), keeping the run with the largest final
  objective - "best of N random subspaces" of §6.1.

The FSPCA updaters return a feasible :math:`W` (orthonormal, ``k`` nonzero
rows) themselves, so their methods use the truncator ``none``: the
``row-sparse`` truncation of that :math:`W` with the same ``k`` would change
nothing, and ``--param k`` must name one part.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.drivers import Parts, StepCallback, prepare, run_block
from spcakit.errors import InvalidDataError, InvalidParameterError, ZeroLoadingError
from spcakit.problem import Problem
from spcakit.state import IterState, Outcome
from spcakit_fspca import algorithms as alg

STARTS = ("low-rank", "random", "given")


# -- parameter checks ------------------------------------------------------------
def _integer(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def check_row_sparsity(k: Any, d: int, m: int, what: str) -> int:
    """``k`` as an integer in ``[m, d]`` (problem (3.1) needs :math:`m \\le k \\le d`)."""
    if k is None:
        raise InvalidParameterError(
            f"{what} needs the row sparsity (number of selected variables): --param k=K with K an integer "
            f"in [m, d] = [{m}, {d}] (m = r, the number of loadings)"
        )
    value = _integer(k)
    if value is None or not m <= value <= d:
        raise InvalidParameterError(
            f"{what}: the row sparsity k must be an integer in [m, d] = [{m}, {d}] (m = r = {m} loadings "
            f"share k variables, d = {d} variables); got {k!r}"
        )
    return value


def check_epsilon(epsilon: Any, what: str, *, nonnegative: bool) -> float:
    """``epsilon`` as a finite float (non-negative for IPU: :math:`A_\\varepsilon` must stay PSD)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not math.isfinite(float(epsilon)):
        raise InvalidParameterError(f"{what}: epsilon (A + epsilon I, Remark 5.10) must be a finite number; got {epsilon!r}")
    value = float(epsilon)
    if nonnegative and value < 0:
        raise InvalidParameterError(
            f"{what}: epsilon must be >= 0 (A + epsilon I must stay positive semi-definite for the ascent of "
            f"Thm. 5.5; the paper uses 0.1); got {value:g}"
        )
    return value


# -- truncator ---------------------------------------------------------------------
@attrs.frozen
class RowSparseTruncation:
    r"""The :math:`\ell_{2,0}` truncation: keep the ``k`` rows of :math:`Z` of largest norm.

    :math:`X = \arg\min_{\|X\|_{2,0} \le k}\|Z - X\|_F`: row :math:`i` is kept
    when :math:`\|z_i\|_2` is among the ``k`` largest (ties: smaller index),
    so all loadings share one support - feature selection (FSPCA, §3). The
    driver then normalises each column; the columns are unit but, unlike the
    FSPCA solvers' output, not orthogonal in general.
    """

    k: int | None = None

    def check(self, p: int) -> None:
        if self.k is None:
            raise InvalidParameterError(
                f"the row-sparse truncation needs the number of rows kept: --param k=K with K an integer in [1, {p}]"
            )
        value = _integer(self.k)
        if value is None or not 1 <= value <= p:
            raise InvalidParameterError(
                f"row-sparse truncation: k (rows kept, shared by every loading) must be an integer in [1, {p}]; got {self.k!r}"
            )

    def resolved(self, p: int) -> dict[str, int]:
        return {"k": int(self.k)}  # type: ignore[arg-type]

    def __call__(self, z: np.ndarray) -> np.ndarray:
        self.check(z.shape[0])
        x = alg.truncate_rows(z, int(self.k))  # type: ignore[arg-type]
        x2, z2 = x.reshape(x.shape[0], -1), z.reshape(z.shape[0], -1)
        zeroed = np.nonzero(~np.any(x2 != 0, axis=0) & np.any(z2 != 0, axis=0))[0]
        if zeroed.size:
            raise ZeroLoadingError(
                f"row-sparse truncation zeroed loading {int(zeroed[0]) + 1} entirely: none of its entries is in the "
                f"k = {self.k} rows of largest norm; use a larger k"
            )
        return x


# -- updaters ----------------------------------------------------------------------
@attrs.frozen
class GoUpdater:
    r"""Go (Algorithm 1): :math:`W = S_I\operatorname{eig}_m(A_{II})`, :math:`I` = top-``k`` of :math:`\operatorname{diag}((A+\varepsilon I)_m)`.

    Solves (3.1) in one step and ignores the current iterate. Exact when
    :math:`\operatorname{rank}(A) \le m` and :math:`\varepsilon = 0`
    (Thm. 4.2), and for :math:`A + \sigma I` with :math:`\varepsilon = -\sigma`
    (Remark 4.4). Objective: :math:`\operatorname{tr}(W^\top A W)`.
    """

    k: int | None = None
    epsilon: float = 0.0

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        m = x.shape[1]
        k = check_row_sparsity(self.k, problem.p, m, "go")
        estimate = alg.go(problem.covariance, m, k, self.epsilon)
        return estimate.loadings, estimate.objective


@attrs.frozen
class IPUUpdater:
    r"""One IPU iteration (Algorithm 2) on :math:`A_\varepsilon = A + \varepsilon I`.

    :math:`I` = top-``k`` of :math:`\operatorname{diag}(P_t)`,
    :math:`P_t = A_\varepsilon W_t (W_t^\top A_\varepsilon W_t)^\dagger W_t^\top A_\varepsilon`,
    computed through its diagonal in :math:`O(dkm)`; then
    :math:`W_{t+1} = S_I\operatorname{eig}_m(A_{II})` in :math:`O(k^3)`.
    The objective reported for the step is that of the proposal,
    :math:`\operatorname{tr}(W_{t+1}^\top A W_{t+1})`; from the second step on
    it never decreases (Thm. 5.5).
    """

    k: int | None = None
    epsilon: float = 0.1

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        k = check_row_sparsity(self.k, problem.p, x.shape[1], "ipu")
        estimate = alg.ipu_step(problem.covariance, x, k, self.epsilon)
        return estimate.loadings, estimate.objective


@attrs.frozen
class ExhaustiveSupportUpdater:
    """The global optimum of (3.1) over all ``C(d, k)`` supports (small ``d``); ignores the iterate."""

    k: int | None = None

    def init(self, problem: Problem, x0: np.ndarray) -> None:
        return None

    def propose(self, problem: Problem, x: np.ndarray, context: Any) -> tuple[np.ndarray, float]:
        m = x.shape[1]
        k = check_row_sparsity(self.k, problem.p, m, "fspca-exhaustive")
        estimate = alg.exhaustive_search(problem.covariance, m, k)
        return estimate.loadings, estimate.objective


# -- initializer -------------------------------------------------------------------
def _read_start(w0: Any) -> np.ndarray:
    if isinstance(w0, (str, Path)):
        from spcakit.datasets import load_source

        try:
            return np.asarray(load_source(str(w0)).matrix, dtype=float)
        except InvalidDataError as exc:
            raise InvalidParameterError(f"subspace-start: cannot read w0 from {str(w0)!r}: {exc}") from None
    try:
        matrix = np.asarray(w0, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"subspace-start: w0 must be a d x m matrix (a list of rows, an array, or a .npy/.csv path); got {w0!r}"
        ) from None
    return matrix


@attrs.frozen
class SubspaceStart:
    r"""The start :math:`W_0` of IPU (and of any block method).

    * ``low-rank``: the ``m`` leading eigenvectors :math:`U_m` of :math:`A`.
      Then :math:`P_0 = (A_\varepsilon)_m`, so the first IPU step is Go on
      :math:`(A_\varepsilon)_m` with the refinement: IPU initialised with
      Go (the paper's "Low Rank Approx.", Cor. 5.6).
    * ``random``: :math:`W_0 = Q` from the QR factorisation of a standard
      Gaussian ``d x m`` matrix drawn from the run's generator; with the
      ``multistart`` driver, ``restarts`` of them (best of N, §6.1).
    * ``given``: the user's :math:`W_0` (``d x m``, full column rank), taken
      as the orthonormal factor of its QR factorisation (the IPU step depends
      only on :math:`\operatorname{span}(W_0)`).
    """

    start: str = "low-rank"
    restarts: int = 1
    w0: np.ndarray | None = attrs.field(default=None, eq=attrs.cmp_using(eq=lambda a, b: a is b or (
        a is not None and b is not None and a.shape == b.shape and bool(np.array_equal(a, b)))))

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator) -> np.ndarray:
        if self.start == "low-rank":
            _, vectors = alg.leading_eigenpairs(problem.covariance, r)
            return np.asarray(vectors, dtype=float)
        if self.start == "random":
            q, _ = np.linalg.qr(rng.standard_normal((problem.p, r)))
            return q
        w0 = self.w0
        assert w0 is not None
        if w0.shape != (problem.p, r):
            raise InvalidParameterError(
                f"subspace-start: w0 has shape {w0.shape[0]} x {w0.shape[1]}, but the problem needs d x m = "
                f"{problem.p} x {r} (d variables, m = r loadings)"
            )
        q, upper = np.linalg.qr(w0)
        diag = np.abs(np.diag(upper))
        if diag.min() <= diag.max() * max(w0.shape) * np.finfo(float).eps or diag.max() == 0:
            raise InvalidParameterError("subspace-start: the columns of w0 are linearly dependent; give m independent columns")
        return q * np.where(np.diag(upper) < 0, -1.0, 1.0)


# -- stopper -----------------------------------------------------------------------
@attrs.frozen
class SupportFixedPoint:
    r"""Stop at a fixed point :math:`W_t = W_{t-1}` (Algorithm 2, line 8) or after ``max_iter`` steps.

    The FSPCA updaters compute :math:`W_t` deterministically from the support
    (:func:`~spcakit_fspca.algorithms.refine` fixes the eigenvectors' signs),
    so :math:`W_t = W_{t-1}` exactly when the support did not change; the
    test is a relative change of the unit loadings of at most ``tol``
    (default :math:`10^{-12}`, i.e. equality up to rounding).
    """

    max_iter: int = 100
    tol: float = 1e-12

    def __call__(self, state: IterState) -> str | None:
        if state.iteration >= 1 and state.relative_change <= self.tol:
            return f"fixed point: W_t = W_t-1 (the support did not change) after {state.iteration} iteration(s)"
        if state.iteration >= self.max_iter:
            return f"reached the iteration cap ({self.max_iter}) before a fixed point"
        return None


# -- driver ------------------------------------------------------------------------
def multistart(
    problem: Problem, r: int, parts: Parts, rng: np.random.Generator, on_step: StepCallback | None = None
) -> Outcome:
    """Run the block driver from each start the initializer asks for; keep the largest final objective.

    The number of starts is the initializer's ``restarts`` attribute (1 when
    it has none). Each run draws its start from the same generator, one after
    the other, so the result depends only on the seed. The kept run is the
    one whose updater objective after its last step is largest (ties, within
    :math:`10^{-12}` relative, keep the earlier run; a run without a finite
    objective counts as :math:`-\\infty`). ``iterations`` counts the steps of
    all runs; the objective history is the kept run's.
    """
    starts = int(getattr(parts.initializer, "restarts", 1) or 1)
    problem = prepare(problem, r, parts, rng)
    best: tuple[float, int, IterState, str] | None = None
    total = 0
    for index in range(starts):
        offset = total
        callback = None if on_step is None else (lambda c, n, it, base=offset: on_step(0, 1, base + it))
        state, reason = run_block(problem, r, parts, rng, callback)
        total += state.iteration
        history = state.objective_history
        value = history[-1] if history and math.isfinite(history[-1]) else -math.inf
        margin = 1e-12 * max(1.0, abs(best[0])) if best is not None and math.isfinite(best[0]) else 0.0
        if best is None or value > best[0] + margin:
            best = (value, index, state, reason)
    assert best is not None
    value, index, state, reason = best
    if starts > 1:
        reason = f"{reason}; best of {starts} starts (start {index + 1}, objective {value:.6g})"
    return Outcome(
        loadings=state.loadings,
        iterations=total,
        stopping_reasons=(reason,),
        objective_history=state.objective_history,
    )


# -- factories (what the registry calls) ---------------------------------------------
def make_row_sparse(k: int | None = None) -> RowSparseTruncation:
    return RowSparseTruncation(k)


def make_go(k: int | None = None, epsilon: float = 0.0) -> GoUpdater:
    return GoUpdater(k, check_epsilon(epsilon, "go", nonnegative=False))


def make_ipu(k: int | None = None, epsilon: float = 0.1) -> IPUUpdater:
    return IPUUpdater(k, check_epsilon(epsilon, "ipu", nonnegative=True))


def make_exhaustive_support(k: int | None = None) -> ExhaustiveSupportUpdater:
    return ExhaustiveSupportUpdater(k)


def make_subspace_start(start: str | None = None, restarts: int | None = None, w0: Any = None) -> SubspaceStart:
    """``start`` defaults to ``given`` when ``w0`` is set, ``random`` when ``restarts`` is, else ``low-rank``."""
    if start is None:
        start = "given" if w0 is not None else ("random" if restarts is not None else "low-rank")
    if start not in STARTS:
        raise InvalidParameterError(f"subspace-start: start must be one of {', '.join(STARTS)}; got {start!r}")
    count = 1 if restarts is None else _integer(restarts)
    if count is None or count < 1:
        raise InvalidParameterError(f"subspace-start: restarts must be a positive integer (number of random starts); got {restarts!r}")
    if count > 1 and start != "random":
        raise InvalidParameterError(
            f"subspace-start: restarts = {count} needs random starts (the {start} start is deterministic); "
            "drop --param start or use --param start=random"
        )
    if start == "given":
        if w0 is None:
            raise InvalidParameterError("subspace-start: start = given needs w0, a d x m matrix (--param w0=PATH.npy or a list of rows)")
        matrix = _read_start(w0)
        if matrix.ndim == 1:
            matrix = matrix[:, None]
        if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
            raise InvalidParameterError(f"subspace-start: w0 must be a finite d x m matrix; got shape {matrix.shape}")
        return SubspaceStart("given", 1, matrix)
    if w0 is not None:
        raise InvalidParameterError(f"subspace-start: w0 is only used with start = given (got start = {start})")
    return SubspaceStart(start, count, None)


def make_support_fixed_point(max_iter: int = 100, tol: float = 1e-12) -> SupportFixedPoint:
    value = _integer(max_iter)
    if value is None or value < 1:
        raise InvalidParameterError(f"support-fixed-point: max_iter must be a positive integer; got {max_iter!r}")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 <= float(tol) < 1):
        raise InvalidParameterError(f"support-fixed-point: tol must be a number in [0, 1); got {tol!r}")
    return SupportFixedPoint(value, float(tol))


def make_multistart() -> Callable[..., Outcome]:
    return multistart
