"""Sparsity targets: the sparsest ``k`` reaching a CPEV target, or a fraction of zeros (:func:`target_k`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from spcakit.workflows.fit import check_r, count_of_components, fit
from spcakit.core.errors import InvalidParameterError, MissingValueWarning
from spcakit.inputs.options import InputOptions, check_missing, open_input
from spcakit.analysis.metrics import compute_metrics, select_metrics
from spcakit.workflows.paths.grids import k_for_sparsity
from spcakit.workflows.paths.records import CPEV_RTOL, check_targets, unreachable
from spcakit.workflows.paths.sweep import (
    WarmEM, check_takes_k, lowest_level, method_spec, missing_levels, pca_ceiling,
)  # fmt: skip
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import Problem
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec
from spcakit.workflows.results import Result

#: How :func:`target_k` searches for the smallest ``k`` that reaches a CPEV target.
SEARCHES = ("auto", "scan", "bisection")


#: ``search="auto"`` scans every ``k`` from below when there are at most this many, else bisects.
MAX_SCAN_LEVELS = 100




@attrs.frozen(kw_only=True)
class Target:
    """The level :func:`target_k` chose; unpacks as ``k, result = spcakit.target_k(...)``.

    Attributes
    ----------
    k
        The chosen number of nonzero variables per loading.
    result
        The fit at ``k``, with the metrics :func:`spcakit.fit` computes (all by default).
    kind, value
        The target: ``"cpev"`` and the fraction ``F`` of PCA's CPEV, or ``"sparsity"`` and the
        fraction ``S`` of zeros.
    cpev
        The CPEV at ``k``.
    ceiling
        Dense PCA's CPEV for the same ``r``.
    search
        How ``k`` was found: ``"linear scan"``, ``"bisection"``, ``"bisection, then linear scan"``
        (bisection met a CPEV that decreased with ``k`` and scanned instead), or ``"rounding"``
        (a sparsity target).
    fitted
        ``(k, CPEV)`` of every level fitted, by ``k``.
    """

    k: int
    result: Result = attrs.field(eq=False, repr=False)
    kind: str
    value: float
    cpev: float
    ceiling: float
    search: str
    fitted: tuple[tuple[int, float], ...] = ()

    def __iter__(self) -> Iterator[Any]:
        yield self.k
        yield self.result

    def describe(self) -> str:
        """One line: the target, the chosen ``k`` and its CPEV as a fraction of PCA's."""
        cpev = self.cpev
        if self.kind == "sparsity":
            head = (f"target sparsity {self.value:g} (fraction of zeros per loading): k = {self.k} = "
                    f"round((1 - {self.value:g}) * {self.result.p})")  # fmt: skip
        else:
            assumed = " if CPEV grows with k" if self.search == "bisection" else ""
            head = (f"target CPEV >= {self.value:g} x PCA's ({self.value * self.ceiling:.4f}): k = {self.k}, the smallest "
                    f"that reaches it{assumed} ({self.search}, {len(self.fitted)} level(s) fitted)")  # fmt: skip
        return f"{head}; CPEV {cpev:.4f} = {cpev / self.ceiling:.4f} x PCA's {self.ceiling:.4f}"

    def to_dict(self) -> dict[str, Any]:
        """The ``target`` object of ``spcakit run --json``."""
        return {
            "kind": self.kind, "value": self.value, "k": self.k, "cpev": self.cpev, "ceiling": self.ceiling,
            "search": self.search, "fitted": [{"k": k, "cpev": v} for k, v in self.fitted],
        }  # fmt: skip


def target_k(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int | None = None,
    *,
    cpev: float | None = None,
    sparsity: float | None = None,
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    search: str = "auto",
    metrics: Sequence[str] | None = None,
    registry: Registry | None = None,
    missing: str = "auto",
    sample_weight: Any = None,
    **fit_kwargs: Any,
) -> Target:
    r"""The ``k`` that meets a sparsity target, and the fit there.

    ``sparsity=S`` (the fraction of zeros per loading) gives
    :math:`k = \lfloor (1-S)\,p + 1/2\rfloor` (:func:`k_for_sparsity`: the nearest integer,
    halves to the denser level).

    ``cpev=F`` gives the smallest ``k`` whose CPEV is at least :math:`F \cdot
    \mathrm{CPEV}_{\mathrm{PCA}}`, with :math:`0 < F \le 1`, comparing up to :data:`CPEV_RTOL`
    (:math:`10^{-9}` of PCA's CPEV: rounding only, so ``F = 1`` is met by ``k = p`` where that is
    PCA). The levels run from :math:`k_{\min}` (1, or ``r`` for the methods that refuse
    ``k < r``) to ``p`` (to the number of columns that vary, when some are constant); each is
    fitted at most once (cached) and cold, so that its CPEV does not
    depend on which levels were visited. ``search`` chooses how (:func:`smallest_reaching`):

    * ``"scan"``: every ``k`` from :math:`k_{\min}` up, stopping at the first that reaches the
      target: exact however CPEV varies with ``k``, at the cost of ``k - k_min + 1`` fits;
    * ``"bisection"``: verify the bracket (``k = p`` must reach the target, else the error names
      the best value fitted; :math:`k_{\min}` is the answer if it does), then halve it keeping
      :math:`\mathrm{CPEV}(lo) <` target :math:`\le \mathrm{CPEV}(hi)`: about
      :math:`\log_2 p + 2` fits. It assumes that CPEV grows with ``k``, which is not guaranteed
      (see the module's description): when the levels fitted contradict it (a CPEV lower than a
      smaller ``k``'s, beyond :data:`CPEV_RTOL`), it falls back to a linear scan of
      :math:`[k_{\min}, hi]` from below; a dip that it never sees can still make it return a
      larger ``k`` than the smallest (TPower on a spiked model with ``p = 40``: 11 instead of 7,
      as CPEV falls from 0.545 at ``k = 8`` to 0.488 at ``k = 10``);
    * ``"auto"`` (the default): ``"scan"`` when there are at most :data:`MAX_SCAN_LEVELS` levels,
      else ``"bisection"``.

    The other arguments are :func:`spcakit.fit`'s; ``metrics`` are those of the returned result
    (default: all), the search itself computes only CPEV.

    ``missing`` (``"auto"``, ``"em"`` or ``"error"``) is :func:`spcakit.fit`'s and :func:`spcakit.path`'s:
    data without NaN give the same target under every option, bit for bit; ``"error"`` refuses NaN
    (:class:`~spcakit.core.errors.MissingValuesError`); ``"auto"`` (with a
    :class:`~spcakit.core.errors.MissingValueWarning`, once) and ``"em"`` fit each level by EM
    (:func:`spcakit.workflows.imputation.impute_and_fit`), each level's EM starting from the completed data the
    level fitted before it left (:class:`~spcakit.workflows.paths.sweep.WarmEM`: the scan's previous ``k``; with
    bisection the last level visited, so that a level's CPEV may then depend, within the EM's tolerance, on
    the order of the visits). A level reaches ``cpev=F`` when its CPEV is at least ``F`` times PCA's on its
    own completed data, and :attr:`Target.ceiling` is PCA's CPEV on the chosen level's completed data; the
    result (its metrics on those data) records its EM in ``input.missing``.

    ``sample_weight`` (observation weights) is :func:`spcakit.fit`'s and :func:`spcakit.path`'s: frequency
    weights, checked and refused as there; complete data give the weighted problem once, every level fitted to
    it, and with missing values each level's EM is weighted (its first start the columns' weighted observed
    means), so that integer weights choose the ``k`` of the data with repeated rows.

    Returns
    -------
    Target
        ``k``, the result at ``k`` and how they were found; ``k, result = target_k(...)`` unpacks it.

    Raises
    ------
    InvalidParameterError
        Neither or both targets, a fraction out of range, a target that no level reaches (the
        message names the best reachable value), a method that takes no ``k``, an unknown ``missing``,
        ``sample_weight`` with a covariance.
    InvalidDataError
        ``sample_weight`` that are not ``n`` finite non-negative numbers with at least 2 positive ones and a sum
        above 1 when centring (the message says which).
    MissingValuesError
        The data hold NaN and ``missing="error"``, or a covariance matrix holds NaN.
    """
    registry = registry or get_registry()
    r = count_of_components(r, fit_kwargs.pop("n_components", None))
    fraction = check_targets(cpev, sparsity)
    if search not in SEARCHES:
        raise InvalidParameterError(f"search must be one of {', '.join(SEARCHES)}; got {search!r}")
    missing = check_missing(missing)
    spec = method_spec(method, registry)
    check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    opened = open_input(data, InputOptions(covariance=covariance, center=center, standardize=standardize,
                                           feature_names=feature_names, columns=columns, drop=drop,
                                           sample_weight=sample_weight, missing=missing))  # fmt: skip
    problem, incomplete, source = opened.problem, opened.incomplete, opened.source
    if incomplete is not None:
        em, filled = missing_levels(incomplete, "each level that the target's search visits", missing=missing,
                                    center=center, standardize=standardize, source=source, weights=sample_weight,
                                    stacklevel=2)  # fmt: skip
        return _target_missing(em, filled, spec, r, fraction, cpev=cpev, sparsity=sparsity, seed=seed, search=search,
                               metrics=metrics, registry=registry, fit_kwargs=fit_kwargs)  # fmt: skip
    assert problem is not None
    r = check_r(r, problem)
    ceiling = pca_ceiling(problem, r)
    chosen_metrics = select_metrics(registry, metrics, spec.name)
    cache: dict[int, Result] = {}

    def evaluate(level: int) -> float:
        if level not in cache:
            cache[level] = fit(problem, spec, r, k=level, seed=seed, metrics=["cpev"], registry=registry, **fit_kwargs)
        return result_cpev(cache[level])

    def done(level: int, search: str) -> Target:
        found = cache[level]
        result = attrs.evolve(found, metrics=compute_metrics(problem, found.loadings, chosen_metrics,
                                                             bound=fit_kwargs.get("bound", "fast")))
        kind, value = ("cpev", fraction) if cpev is not None else ("sparsity", float(sparsity))  # type: ignore[arg-type]
        return Target(k=level, result=result, kind=kind, value=value, cpev=result_cpev(found), ceiling=ceiling, search=search,
                      fitted=tuple((lv, result_cpev(cache[lv])) for lv in sorted(cache)))  # fmt: skip

    if sparsity is not None:
        return done(_sparsity_level(sparsity, problem.p, evaluate), "rounding")

    low, _ = lowest_level(evaluate, r)
    high = problem.varying.p  # no truncation: p, or the number of columns that vary when some are constant
    if search == "auto":
        search = "scan" if high - low + 1 <= MAX_SCAN_LEVELS else "bisection"
    found = smallest_reaching(evaluate, low, high, fraction * ceiling, CPEV_RTOL * ceiling, search)
    if found is None:
        best = max(cache, key=lambda level: result_cpev(cache[level]))
        bound = f"k = p = {high}" if high == problem.p else f"k = {high}, the number of variables that vary,"
        raise InvalidParameterError(unreachable(
            fraction, ceiling, result_cpev(cache[best]), f"k = {best}",
            f"the levels fitted (k = {', '.join(map(str, sorted(cache)))}; {bound} is no truncation)",
        ))  # fmt: skip
    return done(*found)



def _sparsity_level(sparsity: float, p: int, evaluate: Callable[[int], Any]) -> int:
    """The ``k`` of a sparsity target (:func:`k_for_sparsity`), fitted once by ``evaluate``; a level the method
    refuses is refused with the rounding that led to it."""
    level = k_for_sparsity(sparsity, p)
    try:
        evaluate(level)
    except InvalidParameterError as exc:
        raise InvalidParameterError(
            f"target sparsity {sparsity:g} means k = round((1 - {sparsity:g}) * {p}) = {level}: {exc}"
        ) from None
    return level

def _target_missing(
    em: WarmEM, filled: Problem, spec: MethodSpec, r: Any, fraction: float, *, cpev: float | None,
    sparsity: float | None, seed: int | None, search: str, metrics: Sequence[str] | None, registry: Registry,
    fit_kwargs: dict[str, Any],
) -> Target:
    """:func:`target_k` of data with missing values: each level fitted by EM (``em``, warm started from the level
    fitted before), its CPEV compared with PCA's on its own completed data; ``filled`` (the gaps at the columns'
    means) gives ``p``, the columns that vary and the check of ``r``."""
    r = check_r(r, filled)
    chosen_metrics = select_metrics(registry, metrics, spec.name)
    bound = fit_kwargs.get("bound", "fast")
    cache: dict[int, tuple[Result, float, float, dict[str, Any]]] = {}  # k: (result, CPEV, ceiling, chosen metrics)

    def evaluate(level: int) -> float:
        if level not in cache:
            def fit_problem(completed: Problem) -> Result:
                return fit(completed, spec, r, k=level, seed=seed, metrics=["cpev"], registry=registry, **fit_kwargs)

            result, completed = em(level, fit_problem)  # the completed data are the next level's: measured now
            cache[level] = (result, result_cpev(result), pca_ceiling(completed, r),
                            compute_metrics(completed, result.loadings, chosen_metrics, bound=bound))  # fmt: skip
        _, value, ceiling, _ = cache[level]
        return value / ceiling  # the fraction of PCA's CPEV on the same completed data

    def done(level: int, search: str) -> Target:
        found, value, ceiling, chosen = cache[level]
        unconverged = em.unconverged_note("k")
        if unconverged:
            warnings.warn(unconverged, MissingValueWarning, stacklevel=4)
        kind, target = ("cpev", fraction) if cpev is not None else ("sparsity", float(sparsity))  # type: ignore[arg-type]
        return Target(k=level, result=attrs.evolve(found, metrics=chosen), kind=kind, value=target, cpev=value,
                      ceiling=ceiling, search=search, fitted=tuple((lv, cache[lv][1]) for lv in sorted(cache)))  # fmt: skip

    if sparsity is not None:
        return done(_sparsity_level(sparsity, filled.p, evaluate), "rounding")

    low, _ = lowest_level(evaluate, r)
    high = filled.varying.p
    if search == "auto":
        search = "scan" if high - low + 1 <= MAX_SCAN_LEVELS else "bisection"
    found = smallest_reaching(evaluate, low, high, fraction, CPEV_RTOL, search)
    if found is None:
        best = max(cache, key=lambda level: cache[level][1] / cache[level][2])
        _, value, ceiling, _ = cache[best]
        bound_text = f"k = p = {high}" if high == filled.p else f"k = {high}, the number of variables that vary,"
        raise InvalidParameterError(unreachable(
            fraction, ceiling, value, f"k = {best}",
            f"the levels fitted (k = {', '.join(map(str, sorted(cache)))}; {bound_text} is no truncation; each "
            "level's CPEV over PCA's on its own completed data)",
        ))  # fmt: skip
    return done(*found)


def smallest_reaching(
    value: Callable[[int], float], low: int, high: int, threshold: float, tol: float, search: str = "bisection"
) -> tuple[int, str] | None:
    r"""The smallest integer level in ``[low, high]`` whose ``value`` is at least ``threshold - tol``, and how it was
    found; ``None`` when no level reaches it. Each level is evaluated at most once.

    ``search="scan"`` evaluates the levels from ``low`` up and stops at the first that reaches the threshold
    (exact whatever the shape of ``value``; ``"linear scan"``). ``search="bisection"`` first verifies the
    bracket (``high`` reaches the threshold, else ``None``; ``low`` is the answer if it reaches it), then halves
    it keeping :math:`value(lo) <` threshold :math:`\le value(hi)`, which assumes ``value`` non-decreasing; as
    soon as the values seen decrease somewhere (by more than ``tol``) that premise is false, and it scans
    ``[low, hi]`` from below instead (``"bisection, then linear scan"``).
    """
    if search not in SEARCHES[1:]:
        raise InvalidParameterError(f"search must be one of {', '.join(SEARCHES[1:])}; got {search!r}")
    seen: dict[int, float] = {}

    def reached(level: int) -> bool:
        if level not in seen:
            seen[level] = float(value(level))
        return seen[level] >= threshold - tol

    if search == "scan":
        return next(((level, "linear scan") for level in range(low, high + 1) if reached(level)), None)
    if not reached(high):
        return None
    if reached(low):
        return low, "bisection"
    lo, hi = low, high
    while hi - lo > 1:
        mid = (lo + hi) // 2
        mid_reached = reached(mid)
        ordered = [seen[level] for level in sorted(seen)]
        if any(b < a - tol for a, b in zip(ordered, ordered[1:])):  # not monotone: bisection's premise is false
            return next(level for level in range(low, hi + 1) if reached(level)), "bisection, then linear scan"
        lo, hi = (lo, mid) if mid_reached else (mid, hi)
    return hi, "bisection"


def result_cpev(result: Result) -> float:
    return float(result.metrics["cpev"])
