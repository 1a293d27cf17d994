r"""Parts of Tian, Wang, Nie & Li, *Learning Feature Sparse Principal Subspace*
(FSPCA, NeurIPS 2020), for the drivers of :mod:`spcakit.core.drivers`.

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

The ridge :math:`\varepsilon` of ``go`` and ``ipu`` is read relative to the
mean eigenvalue :math:`\operatorname{tr}(A)/d` by default
(``epsilon_form = "relative"``), so that scaling :math:`A` changes nothing;
``epsilon_form = "absolute"`` is the paper's :math:`A + \varepsilon I`, which
the reproductions of §6 pin (``specs/experiments/fspca-*.toml``). The two
forms agree on a correlation matrix.
* ``subspace-start`` (initializer, ``start``, ``restarts``, ``w0``): the
  :math:`m` leading eigenvectors (``low-rank``: IPU's first step from them is
  Go on :math:`(A_\varepsilon)_m`), a random orthonormal subspace
  (``random``, ``restarts`` of them), or a given :math:`W_0` (``given``).
* ``support-fixed-point`` (stopper, ``max_iter``): stop when
  :math:`W_t = W_{t-1}` (Algorithm 2, line 8) or after ``max_iter`` steps.
* ``multistart`` (driver): the block driver once per start the initializer
  asks for (its :meth:`~spcakit.core.protocols.Initializer.starts`), keeping the
  run with the largest final objective - "best of N random subspaces" of §6.1.

The FSPCA updaters return a feasible :math:`W` (orthonormal, ``k`` nonzero
rows) themselves, so their methods use the truncator ``none``: the
``row-sparse`` truncation of that :math:`W` with the same ``k`` would change
nothing, and ``--param k`` must name one part.

Problem (3.1) needs :math:`m \le k \le d` (``m`` = ``r`` loadings sharing
``k`` of the ``d`` variables); the parts check ``k`` against ``d`` and
``m`` when they first see the problem, with
:func:`spcakit.core.fields.check_cardinality`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.plugin_api import (
    CapReached,
    Carry,
    Driver,
    Initializer,
    InvalidDataError,
    InvalidParameterError,
    IterState,
    Outcome,
    Parts,
    Problem,
    StepCallback,
    Stopper,
    Truncator,
    Updater,
    check_cardinality,
    number,
    one_of,
    optional,
    part,
    positive_int,
    prepare,
    refuse_zeroed_columns,
    run_block,
    ties,
    to_float,
    to_int,
    top_eigenpairs,
)
from spcakit_fspca import algorithms as alg
from spcakit_fspca.algorithms import PAPER

#: The starts :class:`SubspaceStart` knows.
STARTS = ("low-rank", "random", "given")


def row_sparsity(k: Any, d: int, m: int, what: str) -> int:
    r"""``k`` as an integer in ``[m, d]``: problem (3.1) needs :math:`m \le k \le d`."""
    hint = f"k is the row sparsity: the m = r = {m} loadings share k of the d = {d} variables, so k is in [m, d]"
    return check_cardinality(k, d, what, low=m, hint=hint)


# -- truncator ---------------------------------------------------------------------
@part("row-sparse", paper=PAPER, k="k")
class RowSparseTruncation(Truncator):
    r"""l2,0: keep the k rows of largest norm (ties: smaller index); all loadings share one support

    :math:`X = \arg\min_{\|X\|_{2,0} \le k}\|Z - X\|_F`: row :math:`i` is kept
    when :math:`\|z_i\|_2` is among the ``k`` largest (ties, by
    :mod:`spcakit.numerics.ties`: the smaller index),
    so all loadings share one support - feature selection (FSPCA, §3). The
    driver then normalises each column; the columns are unit but, unlike the
    FSPCA solvers' output, not orthogonal in general. ``k`` must be an
    integer in :math:`[1, p]`, checked against ``p`` by :meth:`check`.
    """

    k: int | None = attrs.field(default=None, converter=to_int)

    def _rows(self, p: int) -> int:
        hint = "k rows are kept, shared by every loading"
        return check_cardinality(self.k, p, "the row-sparse truncation", hint=hint)

    def check(self, p: int) -> None:
        self._rows(p)

    def resolved(self, p: int) -> dict[str, int]:
        return {"k": self._rows(p)}

    def __call__(self, z: np.ndarray) -> np.ndarray:
        k = self._rows(z.shape[0])
        x = alg.truncate_rows(z, k)
        return refuse_zeroed_columns(
            x, z, "the row-sparse truncation", f"none of its entries is in the k = {k} rows of largest norm; use a larger k"
        )


# -- updaters ----------------------------------------------------------------------
#: How ``epsilon`` is read: ``relative`` to the mean eigenvalue, or ``absolute`` (the paper's form).
EPSILON_FORMS = ("relative", "absolute")


def _epsilon_form_field() -> Any:
    return attrs.field(default="relative", validator=one_of(*EPSILON_FORMS))


def ridge(problem: Problem, epsilon: float, form: str) -> float:
    r"""The ridge :math:`\varepsilon` added to :math:`A`: ``epsilon`` itself (``absolute``), or
    ``epsilon`` times the mean eigenvalue :math:`\operatorname{tr}(A)/d` (``relative``).

    In the relative form a scaling :math:`A \to cA` scales the ridge too, so the
    supports and loadings do not change; on a correlation matrix
    (:math:`\operatorname{tr}(A)/d = 1`) both forms add the same ridge.
    """
    if form == "absolute" or epsilon == 0.0:
        return float(epsilon)
    return float(epsilon) * problem.covariance.trace() / problem.p


@part("go", paper=PAPER, k="k")
class GoUpdater(Updater):
    r"""Go (Alg. 1): rows = top-k of diag((A + eps I)_m), W = m leading eigenvectors of A_II; one step

    :math:`W = S_I\operatorname{eig}_m(A_{II})` with :math:`I` the top ``k``
    of :math:`\operatorname{diag}((A+\varepsilon I)_m)`. Solves (3.1) in one
    step and ignores the current iterate. Exact when
    :math:`\operatorname{rank}(A) \le m` and :math:`\varepsilon = 0`
    (Thm. 4.2), and for :math:`A + \sigma I` with :math:`\varepsilon = -\sigma`
    (Remark 4.4, with ``epsilon_form = "absolute"``: :math:`\sigma` is in the
    units of :math:`A`), so ``epsilon`` may be any finite number.
    ``epsilon_form`` reads it relative to the mean eigenvalue
    :math:`\operatorname{tr}(A)/d` (default; scale-invariant) or as the paper's
    absolute ridge (:func:`ridge`). Objective:
    :math:`\operatorname{tr}(W^\top A W)`. The state is the ridge, computed
    once by ``init``.
    """

    k: int | None = attrs.field(default=None, converter=to_int)
    epsilon: float = attrs.field(default=0.0, converter=to_float, validator=number(hint="A + epsilon I, Remark 5.10"))
    epsilon_form: str = _epsilon_form_field()

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> float:
        return ridge(problem, self.epsilon, self.epsilon_form)

    def propose(self, problem: Problem, x: np.ndarray, state: float) -> tuple[np.ndarray, float, float]:
        m = x.shape[1]
        k = row_sparsity(self.k, problem.p, m, "go")
        estimate = alg.go(problem.covariance, m, k, state)
        return estimate.loadings, estimate.objective, state


@part("ipu", paper=PAPER, k="k")
class IPUUpdater(Updater):
    r"""IPU step (Alg. 2): rows = top-k of diag(P_t) in O(dkm), W = eig_m(A_II); A + eps I (eps = 0.1, relative)

    One iteration of Algorithm 2 on :math:`A_\varepsilon = A + \varepsilon I`:
    :math:`I` = top-``k`` of :math:`\operatorname{diag}(P_t)`,
    :math:`P_t = A_\varepsilon W_t (W_t^\top A_\varepsilon W_t)^\dagger W_t^\top A_\varepsilon`,
    computed through its diagonal in :math:`O(dkm)`; then
    :math:`W_{t+1} = S_I\operatorname{eig}_m(A_{II})` in :math:`O(k^3)`.
    The objective reported for the step is that of the proposal,
    :math:`\operatorname{tr}(W_{t+1}^\top A W_{t+1})`; from the second step on
    it never decreases (Thm. 5.5), which needs :math:`\varepsilon \ge 0`.

    The ridge only keeps :math:`W_t^\top A_\varepsilon W_t` invertible
    (Claim 5.9), but it moves the supports the steps select, so its size must
    follow the scale of :math:`A`: by default (``epsilon_form = "relative"``)
    it is ``epsilon`` times the mean eigenvalue :math:`\operatorname{tr}(A)/d`,
    so that :math:`cA` gives the same result as :math:`A`; the paper's
    :math:`A + 0.1I` is ``epsilon_form = "absolute"`` (the same on a
    correlation matrix, where :math:`\operatorname{tr}(A)/d = 1`). The state
    is the ridge, computed once by ``init``; a step depends only on the
    current :math:`W_t`.
    """

    k: int | None = attrs.field(default=None, converter=to_int)
    epsilon: float = attrs.field(
        default=0.1, converter=to_float,
        validator=number(0, hint="A + epsilon I must stay positive semi-definite for the ascent of Thm. 5.5; "
                                 "the paper uses 0.1"),
    )  # fmt: skip
    epsilon_form: str = _epsilon_form_field()

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> float:
        return ridge(problem, self.epsilon, self.epsilon_form)

    def propose(self, problem: Problem, x: np.ndarray, state: float) -> tuple[np.ndarray, float, float]:
        k = row_sparsity(self.k, problem.p, x.shape[1], "ipu")
        estimate = alg.ipu_step(problem.covariance, x, k, state)
        return estimate.loadings, estimate.objective, state


@part("exhaustive-support", paper=PAPER, k="k")
class ExhaustiveSupportUpdater(Updater):
    r"""exact FSPCA: best of all C(d, k) row supports (small d only); one step

    The global optimum of (3.1) over every support of size ``k``
    (:func:`~spcakit_fspca.algorithms.exhaustive_search`, which refuses
    problems too large to enumerate); ignores the iterate. No state.
    """

    k: int | None = attrs.field(default=None, converter=to_int)

    def propose(self, problem: Problem, x: np.ndarray, state: Any) -> tuple[np.ndarray, float, Any]:
        m = x.shape[1]
        k = row_sparsity(self.k, problem.p, m, "fspca-exhaustive")
        estimate = alg.exhaustive_search(problem.covariance, m, k)
        return estimate.loadings, estimate.objective, state


# -- initializer -------------------------------------------------------------------
def read_start(w0: Any) -> np.ndarray:
    """A user's :math:`W_0` as a finite ``d x m`` float matrix: a path (``.npy``/``.csv``), a list of rows or an array.

    A vector is one column.
    """
    from spcakit.plugin_api import load_source, numeric_array

    try:
        source = load_source(str(w0)).matrix if isinstance(w0, (str, Path)) else w0
        matrix, _ = numeric_array(source, "w0")
    except InvalidDataError as exc:
        raise InvalidParameterError(
            f"subspace-start: w0 must be a d x m matrix (a list of rows, an array, or a .npy/.csv path): {exc}"
        ) from None
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
        raise InvalidParameterError(f"subspace-start: w0 must be a finite d x m matrix; got shape {matrix.shape}")
    return matrix


def _same_start(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b))


@part("subspace-start", paper=PAPER)
class SubspaceStart(Initializer):
    r"""W0: low-rank (U_m; IPU's first step is then Go), random (x restarts), or given w0

    The start :math:`W_0` of IPU (and of any block method):

    * ``low-rank``: the ``m`` leading eigenvectors :math:`U_m` of :math:`A`.
      Then :math:`P_0 = (A_\varepsilon)_m`, so the first IPU step is Go on
      :math:`(A_\varepsilon)_m` with the refinement: IPU initialised with
      Go (the paper's "Low Rank Approx.", Cor. 5.6).
    * ``random``: :math:`W_0 = Q` from the QR factorisation of a standard
      Gaussian ``d x m`` matrix drawn from the run's generator; with the
      ``multistart`` driver, ``restarts`` of them (best of N, §6.1).
    * ``given``: the user's :math:`W_0` (``d x m``, full column rank; a list
      of rows, an array, or a ``.npy``/``.csv`` path), taken as the
      orthonormal factor of its QR factorisation (the IPU step depends only
      on :math:`\operatorname{span}(W_0)`).

    Left out, ``start`` is ``given`` when ``w0`` is set, ``random`` when
    ``restarts`` is, else ``low-rank``; ``restarts`` is 1. Once built, the
    part holds these resolved values (and ``w0`` as a matrix):
    :meth:`starts` is ``restarts``.
    """

    start: str | None = attrs.field(default=None, validator=optional(one_of(*STARTS)))
    restarts: int | None = attrs.field(default=None, converter=to_int, validator=optional(positive_int))
    w0: Any = attrs.field(default=None, eq=attrs.cmp_using(eq=_same_start))

    def __attrs_post_init__(self) -> None:
        start = self.start
        if start is None:
            start = "given" if self.w0 is not None else ("random" if self.restarts is not None else "low-rank")
        count = 1 if self.restarts is None else self.restarts
        if count > 1 and start != "random":
            raise InvalidParameterError(
                f"subspace-start: restarts = {count} needs random starts (the {start} start is deterministic); "
                "drop --param start or use --param start=random"
            )
        matrix = None
        if start == "given":
            if self.w0 is None:
                raise InvalidParameterError(
                    "subspace-start: start = given needs w0, a d x m matrix (--param w0=PATH.npy or a list of rows)"
                )
            matrix = read_start(self.w0)
        elif self.w0 is not None:
            raise InvalidParameterError(f"subspace-start: w0 is only used with start = given (got start = {start})")
        # frozen: the resolved defaults are set once, here
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "restarts", count)
        object.__setattr__(self, "w0", matrix)

    def starts(self) -> int:
        return int(self.restarts)  # type: ignore[arg-type]

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        if self.start == "low-rank":
            _, vectors = top_eigenpairs(problem.covariance, r)
            return np.asarray(vectors, dtype=float)
        if self.start == "random":
            q, _ = np.linalg.qr(rng.standard_normal((problem.p, r)))
            return q
        w0: np.ndarray = self.w0
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
@part("support-fixed-point", paper=PAPER)
class SupportFixedPoint(Stopper):
    r"""stop when W_t = W_t-1 (same support; Alg. 2 line 8) or after max_iter steps

    The FSPCA updaters compute :math:`W_t` deterministically from the support
    (:func:`~spcakit_fspca.algorithms.refine` fixes the eigenvectors' signs),
    so :math:`W_t = W_{t-1}` exactly when the support did not change; the
    test is a relative change of the unit loadings of at most ``tol``
    (default :math:`10^{-12}`, i.e. equality up to rounding; in ``[0, 1)``).
    """

    max_iter: int = attrs.field(default=100, converter=to_int, validator=positive_int)
    tol: float = attrs.field(default=1e-12, converter=to_float, validator=number(0, 1, high_open=True))

    def __call__(self, state: IterState) -> str | None:
        if state.iteration >= 1 and state.relative_change <= self.tol:
            return f"fixed point: W_t = W_t-1 (the support did not change) after {state.iteration} iteration(s)"
        if state.iteration >= self.max_iter:
            return CapReached(f"reached the iteration cap ({self.max_iter}) before a fixed point")
        return None


# -- driver ------------------------------------------------------------------------
@part("multistart", paper=PAPER)
class MultistartDriver(Driver):
    r"""block driver from each of the initializer's `restarts` starts; keeps the largest final objective

    The block driver (:func:`spcakit.core.drivers.run_block`) once per start, the
    number of starts being the initializer's
    :meth:`~spcakit.core.protocols.Initializer.starts`. The run's carry is
    prepared once and every start receives it. Each run draws its start from
    the same generator, one after the other, so the result depends only on
    the seed. The kept run is the one whose updater objective after its last
    step is largest (ties, within :data:`spcakit.numerics.ties.RTOL` relative, keep the
    earlier run; a run without a finite objective counts as :math:`-\infty`).
    ``iterations`` counts the steps of all runs; the objective history is
    the kept run's. It never deflates.
    """

    deflates = False

    def __call__(
        self, problem: Problem, r: int, parts: Parts, rng: np.random.Generator, on_step: StepCallback | None = None
    ) -> Outcome:
        starts = parts.initializer.starts()
        carry = prepare(problem, r, parts, rng)
        best: tuple[float, int, IterState, str] | None = None
        total = 0
        for index in range(starts):
            callback = None if on_step is None else (lambda c, n, it, base=total: on_step(0, 1, base + it))
            state, reason = run_block(problem, r, parts, rng, carry, callback)
            total += state.iteration
            history = state.objective_history
            value = history[-1] if history and math.isfinite(history[-1]) else -math.inf
            if best is None or ties.improves(value, best[0]):
                best = (value, index, state, reason)
        assert best is not None
        value, index, state, reason = best
        if starts > 1:
            reason = type(reason)(f"{reason}; best of {starts} starts (start {index + 1}, objective {value:.6g})")
        return Outcome(
            loadings=state.loadings,
            iterations=total,
            stopping_reasons=(reason,),
            objective_history=state.objective_history,
        )


#: Every part of the plugin, in the order ``spcakit parts`` lists them within a role.
PARTS = [MultistartDriver, RowSparseTruncation, GoUpdater, IPUUpdater, ExhaustiveSupportUpdater, SubspaceStart,
         SupportFixedPoint]  # fmt: skip
