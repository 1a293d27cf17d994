"""The trade-off path: a method fitted at every level of a grid (:func:`path`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

from spcakit.operators import top_eigenpairs
from spcakit.validators import ARGUMENT_CHECKS, check_arguments
from spcakit.api import check_r, fit
from spcakit.bounds import check_relaxation, component_bounds
from spcakit.composition import configure, set_k, takes_k
from spcakit.errors import InvalidDataError, InvalidParameterError, UnknownNameError, ZeroLoadingError
from spcakit.inputs import as_problem
from spcakit.paths.grids import AUTO, auto_levels, parse_k_levels, parse_lam_levels
from spcakit.paths.records import LOSS_METRICS, PATH_METRICS, PathLevel, SparsityPath, reached
from spcakit.plugins import get_registry
from spcakit.problem import Problem
from spcakit.registry import Registry
from spcakit.specs import MethodSpec
from spcakit.state import Result

#: The initializer parameter through which a level is started from the previous level's loadings.
WARM_START_PARAMETER = "w0"

T = TypeVar("T")


def pca_ceiling(problem: Problem, r: int) -> float:
    r"""Dense PCA's CPEV for ``r`` loadings: :math:`\sum_{i=1}^r \lambda_i(C) / \operatorname{tr} C`."""
    return _spectrum(problem, r)[0]


def _spectrum(problem: Problem, r: int) -> tuple[float, float, float | None]:
    r"""``(ceiling, trace, top)``: :func:`pca_ceiling`, :math:`\operatorname{tr} C`, and :math:`\lambda_{\max}(C)` when
    a direct solver gave it (an upper bound for :func:`~spcakit.bounds.component_bounds`), else ``None``."""
    trace = problem.covariance.trace()
    if not trace > 0:
        raise InvalidDataError("the covariance has zero trace (every variable is constant): there is no variance to explain")
    values = top_eigenpairs(problem.covariance, r, vectors=False)
    direct = getattr(problem.covariance, "direct_spectrum", None)
    top = float(values[0]) if direct is not None and values.size and direct(int(values.shape[0])) else None
    return float(np.sum(values) / trace), float(trace), top


def _with_bounds(result: Result, problem: Problem, top: float | None, relaxation: str = "fast") -> Result:
    r"""``result`` with the metric ``bound`` (:func:`spcakit.bounds.component_bounds`, as ``spcakit.fit`` computes it,
    with the ``relaxation`` given as ``bound=``), from :math:`\lambda_{\max}(C)` found once for the whole path
    instead of once per level."""
    bounds = component_bounds(problem.covariance, result.loadings, top_eigenvalue=top, relaxation=relaxation)
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


def path(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int = 2,
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
        empty range), a method that takes no ``k`` with a ``k`` grid; a level the method refuses
        is named first in the message (``k = 2: ...``).

    Examples
    --------
    >>> p = spcakit.path("builtin:pitprops", "spcart", r=6, k="1:13")  # doctest: +SKIP
    >>> p.frame()[["nz", "cpev", "cpev_ratio"]]                       # doctest: +SKIP
    >>> p.plot()                                                      # doctest: +SKIP
    """
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
    spec = method_spec(method, registry)
    problem = as_problem(data, covariance=covariance, center=center, standardize=standardize,
                         feature_names=feature_names, columns=columns, drop=drop)  # fmt: skip
    r = check_r(r, problem)
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

    def fit_level(level: Any, previous: PathLevel | None) -> PathLevel:
        knob_value = {knob: level}
        if parameter is not None and previous is not None:  # the rows of the columns that vary: what the method sees
            start = {parameter: previous.result.loadings[problem.varying_columns].tolist()}
            try:
                result = fit(problem, spec, r, seed=seed, metrics=metrics, registry=registry, **knob_value, **start,
                             **fit_kwargs)  # fmt: skip
                return PathLevel.from_result(level, _with_bounds(result, problem, top, relaxation), ceiling, warm=True)
            except InvalidParameterError:
                pass  # the start is unusable (e.g. its columns are dependent): this level starts afresh
        try:
            result = fit(problem, spec, r, seed=seed, metrics=metrics, registry=registry, **knob_value, **fit_kwargs)
        except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
            raise _with_level(exc, knob, level) from None
        return PathLevel.from_result(level, _with_bounds(result, problem, top, relaxation), ceiling, warm=False)

    levels: list[PathLevel] = []
    stop_note = ""
    if auto:
        low, first = lowest_level(lambda level: fit_level(level, None), r)
        values: list[Any] = auto_levels(problem.varying.p, low)  # up to the number of columns that vary
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
        if auto and index + 1 < len(values) and reached(level.cpev, ceiling, ceiling):
            stop_note = f"stopped at k = {value}: its CPEV reached PCA's"
            break
    return SparsityPath(
        method=spec.name, source=problem.source, r=r, p=problem.p, knob=knob, levels=tuple(levels), ceiling=ceiling,
        warm_start=parameter, warm_start_note=note, auto=auto, stop_note=stop_note, seed=levels[0].result.seed,
        total_variance=trace,
    )  # fmt: skip


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
