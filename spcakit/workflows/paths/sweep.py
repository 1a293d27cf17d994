"""The trade-off path: a method fitted at every level of a grid (:func:`path`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

from spcakit.numerics.operators import top_eigenpairs
from spcakit.workflows.arguments import ARGUMENT_CHECKS, check_arguments
from spcakit.workflows.fit import check_r, count_of_components, fit
from spcakit.analysis.bounds import check_relaxation
from spcakit.analysis.certificate import certify
from spcakit.workflows.configure import configure, set_k, takes_k
from spcakit.core.errors import (
    InvalidDataError, InvalidParameterError, MissingValueWarning, UnknownNameError, ZeroLoadingError,
    listed,
)  # fmt: skip
from spcakit.inputs.options import InputOptions, check_missing, open_input
from spcakit.workflows.imputation import impute_and_fit, means_filled_problem
from spcakit.inputs import as_problem
from spcakit.inputs.missing import MissingData, missing_values, observed_means
from spcakit.inputs.weights import check_weights
from spcakit.workflows.paths.grids import AUTO, auto_levels, parse_k_levels, parse_lam_levels
from spcakit.workflows.paths.records import LOSS_METRICS, PATH_METRICS, PathLevel, SparsityPath, reached
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import Problem
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec
from spcakit.inputs.records import MissingRecord
from spcakit.workflows.results import Result

#: The initializer parameter through which a level is started from the previous level's loadings.
WARM_START_PARAMETER = "w0"

T = TypeVar("T")


def pca_ceiling(problem: Problem, r: int) -> float:
    r"""Dense PCA's CPEV for ``r`` loadings: :math:`\sum_{i=1}^r \lambda_i(C) / \operatorname{tr} C`."""
    return _spectrum(problem, r)[0]


def _spectrum(problem: Problem, r: int) -> tuple[float, float, np.ndarray | None]:
    r"""``(ceiling, trace, top)``: :func:`pca_ceiling`, :math:`\operatorname{tr} C`, and the ``r`` leading eigenvalues
    when a direct solver gave them (upper bounds for :func:`~spcakit.analysis.certificate.certify`), else ``None``."""
    trace = problem.covariance.trace()
    if not trace > 0:
        raise InvalidDataError("the covariance has zero trace (every variable is constant): there is no variance to explain")
    values = top_eigenpairs(problem.covariance, r, vectors=False)
    direct = getattr(problem.covariance, "direct_spectrum", None)
    top = np.asarray(values, dtype=float) if direct is not None and values.size and direct(int(values.shape[0])) else None
    return float(np.sum(values) / trace), float(trace), top


def _with_bounds(result: Result, problem: Problem, top: np.ndarray | None, relaxation: str = "fast") -> Result:
    r"""``result`` with the metric ``bound`` as ``spcakit.fit`` reports it (:func:`spcakit.analysis.certificate.certify`,
    with the ``relaxation`` given as ``bound=``), from the leading eigenvalues found once for the whole path instead
    of once per level."""
    bounds = certify(problem.covariance, result.loadings, top_eigenvalues=top, relaxation=relaxation)
    return attrs.evolve(result, metrics={**result.metrics, "bound": list(bounds.bound)})


def method_spec(method: str | MethodSpec | None, registry: Registry) -> MethodSpec:
    """The spec :func:`spcakit.fit` would run for ``method``."""
    if method is None:
        spec = registry.default_method()
        if spec is None:
            raise UnknownNameError("no method named and no plugin declares a default composition; name a method")
        return spec
    spec = registry.method(method) if isinstance(method, str) else method
    if not isinstance(spec, MethodSpec):
        raise UnknownNameError(f"method must be a name or a MethodSpec; got {type(method).__name__}")
    return spec


def warm_start_parameter(
    spec: MethodSpec, registry: Registry, params: Mapping[str, Any] | None = None
) -> tuple[str | None, str]:
    """``(parameter, note)``: the initializer parameter a level of ``spec`` warm-starts through, or ``None``,
    and why, in words (see the module's description for the rule)."""
    info = registry.part("initializer", spec.initializer.name)
    accepted = info.parameters()
    if WARM_START_PARAMETER not in accepted:
        return None, f"no: its initializer {info.name!r} takes no start ({WARM_START_PARAMETER})"
    if registry.part("driver", spec.driver).cls.deflates:
        return None, f"no: its driver {spec.driver!r} deflates, starting every component afresh"
    given = set(spec.initializer.params)
    for key in params or {}:
        role, _, bare = key.rpartition(".")
        if role in ("", "initializer") and bare in accepted:
            given.add(bare)
    if given:
        return None, f"no: the initializer {info.name!r} is set ({', '.join(sorted(given))})"
    return (
        f"initializer.{WARM_START_PARAMETER}",
        f"yes: each level starts from the previous level's loadings ({info.name} {WARM_START_PARAMETER})",
    )


def _path_metrics(registry: Registry) -> list[str]:
    names = {m.name for m in registry.metrics()}
    return [*PATH_METRICS, *(name for name in LOSS_METRICS if name in names)]


def _with_level(exc: Exception, knob: str, level: Any) -> Exception:
    """``exc`` with the level named first, for the errors whose message is all they carry."""
    if type(exc) in (InvalidParameterError, InvalidDataError, ZeroLoadingError):
        return type(exc)(f"{knob} = {level}: {exc}")
    return exc


# -- missing values: every level imputed by EM, warm started from the previous level's completed data ----------
def missing_levels(
    incomplete: MissingData, what: str, *, missing: str, center: bool, standardize: bool, source: str, weights: Any,
    stacklevel: int,
) -> tuple[WarmEM, Problem]:
    """``(em, filled)`` for a sweep of levels over data with missing values: the :class:`WarmEM` that fits each
    level (with the observation ``weights``, checked here against the rows as :func:`spcakit.fit` checks them:
    :func:`~spcakit.inputs.weights.check_weights`), and the problem of the data with each gap at its column's
    (weighted) observed mean, the EM's first fill (:meth:`WarmEM.filled_problem`: ``p``, the columns that vary and
    the check of ``r``, before any EM). Issues the sweep's warnings once (:func:`announce_missing`)."""
    w = None if weights is None else check_weights(weights, incomplete.matrix.shape[0], center=center)
    announce_missing(incomplete, what, missing == "auto", stacklevel=stacklevel + 1, weights=w)
    em = WarmEM(incomplete, center=center, standardize=standardize, source=source, weights=w)
    return em, em.filled_problem()


def announce_missing(
    incomplete: MissingData, what: str, announce: bool, stacklevel: int, weights: np.ndarray | None = None
) -> None:
    """The warnings of a sweep of levels over data with missing values, issued once per call: the
    :class:`~spcakit.core.errors.MissingValueWarning` of ``missing="auto"`` (``announce``), and the columns with no
    observed value (or only in rows of weight 0, with ``weights``; each level's EM would repeat them)."""
    n, p = incomplete.matrix.shape
    notes = []
    if announce:
        notes.append(
            f"the data have {incomplete.count} missing entr{'y' if incomplete.count == 1 else 'ies'} "
            f"({incomplete.fraction:.1%} of the {n} x {p}): {what} was fitted by EM on the sparse low-rank model "
            "(spcakit.workflows.imputation: each missing entry replaced by the loadings' least-squares reconstruction until it "
            "settles), each level's EM starting from the previous level's completed data; pass missing='em' to do "
            "this without this warning, or missing='error' to refuse missing values"
        )
    empty = [incomplete.names[j] for j in np.flatnonzero(observed_means(incomplete, weights)[1])]
    if empty:
        notes.append(f"{len(empty)} column(s) have no observed value ({listed(empty)}): they are filled with 0 and, being "
                     "constant, get zero loadings")  # fmt: skip
    for note in notes:
        warnings.warn(note, MissingValueWarning, stacklevel=stacklevel + 1)


@attrs.define
class WarmEM:
    r"""The EM of :func:`spcakit.workflows.imputation.impute_and_fit` at a sequence of levels of one sweep (a path, a
    target's search), each level's EM starting (``start=``) from the completed data the previous level's EM left,
    as :func:`spcakit.cross_validate` does for each fold: neighbouring levels have nearby fixed points, so the
    warm start saves iterations. The first level starts from the columns' observed means.

    ``weights`` (observation weights, already checked: :func:`missing_levels`) go to every level's EM as
    :func:`spcakit.fit` gives them to its own: the first level's start is the columns' weighted observed means,
    and each completed matrix's problem is weighted (:func:`spcakit.inputs.as_problem` with ``weights``), so
    that integer weights fit what the data with repeated rows fit (up to the EM's stopping rule, whose root mean
    square change counts each row's missing entries once whatever its weight).

    Calling it with ``fit_problem`` (which fits the method at one level to a :class:`~spcakit.inputs.problem.Problem`)
    runs one level's EM and returns ``(result, problem)``: the last fit's result (``input.missing`` set, as
    :func:`spcakit.fit` records it) and the problem of the completed data it was fitted to (for the level's PCA
    ceiling and bounds; valid until the next call, which completes the same matrix anew). A level that fails
    leaves the start as it was. The per-level :class:`~spcakit.core.errors.MissingValueWarning` of the EM are not
    issued (:func:`announce_missing` issues them once, and :meth:`unconverged_note` sums up the levels whose
    EM stopped at its cap); the other warnings of the last fit are.
    """

    data: MissingData
    center: bool
    standardize: bool
    source: str = ""
    start: np.ndarray | None = None
    records: list[tuple[Any, MissingRecord]] = attrs.Factory(list)
    weights: np.ndarray | None = None

    def filled_problem(self) -> Problem:
        """:func:`spcakit.workflows.imputation.means_filled_problem` of the data, weighted by :attr:`weights`: what is decided
        before any EM."""
        return means_filled_problem(self.data, self.center, self.standardize, self.source, self.weights)

    def __call__(self, level: Any, fit_problem: Callable[[Problem], Result]) -> tuple[Result, Problem]:
        fitted: list[Problem] = []

        def fit_once(matrix: Any) -> Result:
            fitted[:] = [as_problem(matrix, center=self.center, standardize=self.standardize,
                                    feature_names=self.data.names, source=self.source, weights=self.weights)]  # fmt: skip
            return fit_problem(fitted[0])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MissingValueWarning)  # announced once, and summed up once
            imputed = impute_and_fit(self.data, fit_once, weights=self.weights, announce=False, start=self.start)
        self.start = missing_values(self.data)
        self.records.append((level, imputed.record))
        return imputed.result, fitted[0]

    def record(self) -> MissingRecord | None:
        """The sweep's :class:`~spcakit.inputs.records.MissingRecord`: the count and fraction missing, the EM iterations of
        all the levels together, whether every level's EM converged and the largest last change."""
        if not self.records:
            return None
        records = [record for _, record in self.records]
        return attrs.evolve(records[0], iterations=sum(r.iterations for r in records),
                            converged=all(r.converged for r in records), change=max(r.change for r in records))  # fmt: skip

    def unconverged_note(self, knob: str) -> str:
        """The levels whose EM stopped at its cap, in words (empty when every level's converged)."""
        levels = [level for level, record in self.records if not record.converged]
        if not levels:
            return ""
        return (
            f"the EM imputation of the missing values stopped before converging at {len(levels)} of the "
            f"{len(self.records)} levels fitted ({knob} = {listed(levels)}): their loadings are the last fit's, on imputed "
            "values still moving. Components that explain little variance settle slowly: fewer components (a smaller "
            "r) converge sooner"
        )


def path(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int | None = None,
    *,
    k: Any = None,
    lam: Any = None,
    warm_start: bool = False,
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_level: Callable[[PathLevel], None] | None = None,
    registry: Registry | None = None,
    missing: str = "auto",
    sample_weight: Any = None,
    **fit_kwargs: Any,
) -> SparsityPath:
    r"""Fit ``method`` at a grid of sparsity levels: the trade-off between sparsity and explained variance.

    Parameters
    ----------
    data, method, r
        As for :func:`spcakit.fit`; the data are read (and standardised, columns chosen) once.
    k
        The grid of ``k`` (nonzero variables per loading, :func:`spcakit.fit`'s knob): a sequence
        of integers in :math:`[1, p]`, text (``"1:13"``, ``"1:p"``, ``"2:12:2"``, ``"2,4,6"``;
        :func:`parse_k_levels`), or ``"auto"`` (the default when neither ``k`` nor ``lam`` is
        given). The levels run in increasing order. ``auto`` is every ``k`` from 1 to ``p`` (to the
        number of columns that vary, when some are constant: a ``k`` above it is lowered to it), or
        :data:`MAX_AUTO_LEVELS` of them log-spaced for larger ``p`` (:func:`auto_levels`); it
        starts at ``r`` for the methods that refuse ``k < r`` (FSPCA's shared support, the batch
        encoder) and stops at the first level whose CPEV reaches PCA's (up to :data:`CPEV_RTOL`), or
        before the first level above it that the method refuses (:attr:`SparsityPath.stop_note`).
    lam
        Instead of ``k``: the grid of the method's λ (:func:`parse_lam_levels`), run in the order
        given.
    warm_start
        Start each level from the previous level's loadings where the method allows it (see the
        module's description: with the built-in plugins, ``fspca-ipu`` only, faster but with a
        lower CPEV at many levels; the other methods start every level afresh whatever this
        says). Off by default: each level is then ``spcakit.fit`` at that level.
    seed
        The seed of every level's fit (the same for all, so each level is reproducible alone).
    covariance, center, standardize, feature_names, columns, drop
        How the data are read, as for :func:`spcakit.fit`.
    on_level
        Called with each :class:`PathLevel` when it is done (for progress displays).
    registry
        The registry to look names up in.
    missing
        What to do with missing values (NaN entries, stored NaN of ``scipy.sparse`` data, empty or ``NA``
        cells of a CSV file), as for :func:`spcakit.fit`: ``"auto"`` (the default) imputes them with a
        :class:`~spcakit.core.errors.MissingValueWarning` (once per call) saying the fraction missing; ``"em"``
        does the same without the warning; ``"error"`` refuses them
        (:class:`~spcakit.core.errors.MissingValuesError`). Data without NaN give the same path under every
        option, bit for bit. With NaN, each level is fitted by the EM of :func:`spcakit.fit`
        (:func:`spcakit.workflows.imputation.impute_and_fit`), starting from the completed data the previous level's
        EM left (:class:`WarmEM`; the first level from the columns' observed means); each level's result
        records its EM in ``input.missing``, and :attr:`SparsityPath.missing` the whole path's (the
        iterations of all the levels). Each level's CPEV, bounds and ``cpev_ratio`` are those of its own
        completed data, the ratio over PCA's CPEV on the same data (so at most 1), and the ``auto`` grid stops
        at the first level whose CPEV reaches that; :attr:`SparsityPath.ceiling` is the largest of the
        levels' PCA ceilings, and the path records no :attr:`SparsityPath.total_variance` (the completed data
        differ from level to level), so :meth:`SparsityPath.plot` draws no bound.
    sample_weight
        Observation weights, as for :func:`spcakit.fit` (frequency weights: ``n`` non-negative numbers, one per
        row; integer weights give the path of the data with each row repeated that many times, 0 leaving it
        out), checked and refused as there (:func:`spcakit.inputs.weights.check_weights`; a covariance input
        takes none). Complete data: the weighted problem is built once and every level fitted to it. With
        missing values: each level's EM is weighted as :func:`spcakit.fit`'s (:class:`WarmEM`), the first
        level's starting from the columns' weighted observed means.
    **fit_kwargs
        The rest of :func:`spcakit.fit`'s arguments (``truncator``, ``deflator``, ``stopper``,
        ``refiner``, ``on_step``, ``bound``, part parameters); not ``metrics``: the path computes the ones
        it reports, and only those (each level's ``bound`` with the relaxation ``bound=`` names).

    Returns
    -------
    SparsityPath
        The levels with their criteria (each loading's upper bound ``bound`` among them, for the dashed
        curve of :meth:`SparsityPath.plot`) and results, the PCA ceiling and the total variance.

    Raises
    ------
    InvalidParameterError
        Both ``k`` and ``lam``, a bad grid (an entry outside :math:`[1, p]`, not an integer, an
        empty range), a method that takes no ``k`` with a ``k`` grid, an unknown ``missing``; a level the
        method refuses is named first in the message (``k = 2: ...``); ``sample_weight`` with a covariance.
    InvalidDataError
        ``sample_weight`` that are not ``n`` finite non-negative numbers with at least 2 positive ones and a sum
        above 1 when centring (the message says which).
    MissingValuesError
        The data hold NaN and ``missing="error"``, or a covariance matrix holds NaN.

    Examples
    --------
    >>> p = spcakit.path("builtin:pitprops", "spcart", r=6, k="1:13")  # doctest: +SKIP
    >>> p.frame()[["nz", "cpev", "cpev_ratio"]]                       # doctest: +SKIP
    >>> p.plot()                                                      # doctest: +SKIP
    """
    r = count_of_components(r, fit_kwargs.pop("n_components", None), default=2)
    check_arguments(feature_names=feature_names, columns=columns, drop=drop, on_level=on_level, center=center,
                    standardize=standardize, covariance=covariance, warm_start=warm_start, r=r, registry=registry,
                    **{name: value for name, value in fit_kwargs.items() if name in ARGUMENT_CHECKS})  # fmt: skip
    registry = registry or get_registry()
    if "metrics" in fit_kwargs:
        raise InvalidParameterError(
            "path computes the metrics it reports (nz, pattern, cpev, nor, additional_variance, bound and the "
            "encoders' losses); drop metrics=, and fit a chosen level with spcakit.fit for others"
        )
    if k is not None and lam is not None:
        raise InvalidParameterError("give the grid as k (nonzeros per loading) or as lam (the method's λ), not both")
    if not isinstance(warm_start, bool | np.bool_):
        raise InvalidParameterError(f"warm_start must be True or False; got {warm_start!r}")
    missing = check_missing(missing)
    spec = method_spec(method, registry)
    opened = open_input(data, InputOptions(covariance=covariance, center=center, standardize=standardize,
                                           feature_names=feature_names, columns=columns, drop=drop,
                                           sample_weight=sample_weight, missing=missing))  # fmt: skip
    problem, incomplete, source = opened.problem, opened.incomplete, opened.source
    em: WarmEM | None = None
    if incomplete is not None:
        em, problem = missing_levels(incomplete, "each level of the path", missing=missing, center=center,
                                     standardize=standardize, source=source, weights=sample_weight, stacklevel=2)  # fmt: skip
    assert problem is not None
    r = check_r(r, problem)
    ceiling: float = 0.0  # with missing values, each level has its own, on its completed data (below)
    trace: float | None = None
    top: np.ndarray | None = None
    if em is None:
        ceiling, trace, top = _spectrum(problem, r)
    knob = "k" if lam is None else "lam"
    if knob == "k":
        check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    grid = parse_k_levels(AUTO if k is None else k, problem.p) if lam is None else parse_lam_levels(lam)
    auto = grid == AUTO
    if warm_start:
        parameter, note = warm_start_parameter(spec, registry, fit_kwargs)
    else:
        parameter, note = None, "off (each level starts as spcakit.fit does)"
    metrics = _path_metrics(registry)
    relaxation = check_relaxation(fit_kwargs.get("bound", "fast"), problem.p)  # each level's bound, as fit's
    ceilings: dict[PathLevel, float] = {}  # with missing values: each level's PCA ceiling, on its completed data

    def fit_at(level: Any, start: dict[str, Any]) -> PathLevel:
        if em is None:
            result = fit(problem, spec, r, seed=seed, metrics=metrics, registry=registry, **{knob: level}, **start,
                         **fit_kwargs)  # fmt: skip
            return PathLevel.from_result(level, _with_bounds(result, problem, top, relaxation), ceiling, warm=bool(start))

        def fit_problem(completed: Problem) -> Result:
            return fit(completed, spec, r, seed=seed, metrics=metrics, registry=registry, **{knob: level}, **start,
                       **fit_kwargs)  # fmt: skip

        result, completed = em(level, fit_problem)
        level_ceiling, _, level_top = _spectrum(completed, r)
        found = PathLevel.from_result(level, _with_bounds(result, completed, level_top, relaxation), level_ceiling,
                                      warm=bool(start))  # fmt: skip
        ceilings[found] = level_ceiling
        return found

    def fit_level(level: Any, previous: PathLevel | None) -> PathLevel:
        if parameter is not None and previous is not None:  # the rows of the columns that vary: what the method sees
            try:
                return fit_at(level, {parameter: previous.result.loadings[problem.varying_columns].tolist()})
            except InvalidParameterError:
                pass  # the start is unusable (e.g. its columns are dependent): this level starts afresh
        try:
            return fit_at(level, {})
        except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
            raise _with_level(exc, knob, level) from None

    def at_ceiling(level: PathLevel) -> bool:
        if em is None:
            return reached(level.cpev, ceiling, ceiling)
        return reached(level.cpev, ceilings[level], ceilings[level])  # PCA's on the same completed data

    levels, stop_note = sweep_levels(fit_level, auto, grid, r, problem.varying.p, on_level, at_ceiling)
    missing_record = None
    if em is not None:  # the levels' completed data differ: the largest ceiling, and no single total variance
        ceiling, trace = max(ceilings[level] for level in levels), None
        missing_record = em.record()
        unconverged = em.unconverged_note(knob)
        if unconverged:
            warnings.warn(unconverged, MissingValueWarning, stacklevel=2)
    return SparsityPath(
        method=spec.name, source=problem.source, r=r, p=problem.p, knob=knob, levels=tuple(levels), ceiling=ceiling,
        warm_start=parameter, warm_start_note=note, auto=auto, stop_note=stop_note, seed=levels[0].result.seed,
        total_variance=trace, missing=missing_record,
    )  # fmt: skip


def sweep_levels(
    fit_level: Callable[[Any, PathLevel | None], PathLevel], auto: bool, grid: Any, r: int, varying: int,
    on_level: Callable[[PathLevel], None] | None, at_ceiling: Callable[[PathLevel], bool],
) -> tuple[list[PathLevel], str]:
    """``(levels, stop_note)``: ``fit_level(level, previous)`` at every level of ``grid`` in order; the ``auto`` grid
    from the lowest level the method takes up to ``varying`` columns, stopping at the first level ``at_ceiling``
    (its CPEV reached PCA's) or before the first the method refuses."""
    levels: list[PathLevel] = []
    stop_note = ""
    if auto:
        low, first = lowest_level(lambda level: fit_level(level, None), r)
        values: list[Any] = auto_levels(varying, low)  # up to the number of columns that vary
    else:
        values, first = list(grid), None  # type: ignore[arg-type]
    for index, value in enumerate(values):
        if index == 0 and first is not None:
            level = first
        else:
            try:
                level = fit_level(value, levels[-1] if levels else None)
            except InvalidParameterError as exc:
                if not (auto and levels):
                    raise
                stop_note = f"stopped after k = {levels[-1].level}: the method refuses {exc}"
                break
        levels.append(level)
        if on_level is not None:
            on_level(level)
        if auto and index + 1 < len(values) and at_ceiling(level):
            stop_note = f"stopped at k = {value}: its CPEV reached PCA's"
            break
    return levels, stop_note


def check_takes_k(spec: MethodSpec, truncator: Any, registry: Registry) -> None:
    """Refuse a method that cannot read ``k`` (with the truncator the call gives) before fitting any level."""
    formed = configure(spec, truncator=truncator, registry=registry)
    if not takes_k(formed, registry):
        set_k(formed, 1, registry)  # raises the message that names the methods taking k


def lowest_level(fit_level: Callable[[int], T], r: int) -> tuple[int, T]:
    """The smallest ``k`` the method takes, and what ``fit_level`` gives there: 1, else ``r`` (for the methods
    that refuse ``k < r``: FSPCA's shared support of ``m = r`` loadings, the batch encoder). An error at ``r``
    too is the error at 1."""
    try:
        return 1, fit_level(1)
    except InvalidParameterError as exc:
        if r == 1:
            raise
        try:
            return r, fit_level(r)
        except InvalidParameterError:
            raise exc from None
