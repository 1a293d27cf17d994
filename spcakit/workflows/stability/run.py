"""Fit a method on resamples of the rows (:func:`stability`) and choose ``k`` by the stable support
(:func:`stable_k`)."""

from __future__ import annotations

import math
import numbers
import os
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import (
    InvalidDataError,
    InvalidParameterError,
)
from spcakit.core.plugins import get_registry
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec
from spcakit.inputs import as_problem
from spcakit.inputs.options import InputOptions, open_input
from spcakit.output import progress
from spcakit.workflows.arguments import ARGUMENT_CHECKS, check_arguments
from spcakit.workflows.fit import check_r, check_seed, count_of_components, fit
from spcakit.workflows.paths.grids import AUTO, auto_levels, parse_k_levels
from spcakit.workflows.paths.sweep import (
    check_takes_k,
    method_spec,
    warm_start_parameter,
)
from spcakit.workflows.stability.batched import BLOCK, tpower_block
from spcakit.workflows.stability.records import Stability, StableK, check_threshold
from spcakit.workflows.stability.resamples import (
    SCHEMES,
    matched,
    resample_rows,
    resample_seed,
    sparse_columns,
    summarise,
    threshold_for_bound,
)  # fmt: skip

#: What stability selection needs of the data, said when they hold missing values.
MISSING_REFUSAL = (
    "stability resamples the rows of complete data; the data hold missing values: impute them first (e.g. "
    "spcakit.fit(data, missing='em') to see the fit, or drop the incomplete rows)"
)


def refuse_covariance(source: str = "") -> None:
    """Raise the error that says why a covariance (or correlation) matrix ``source`` has no stability analysis.

    Raises
    ------
    InvalidParameterError
        Always.
    """
    what = source or "the input"
    raise InvalidParameterError(
        f"stability resamples the rows (samples) of a data matrix, and {what} is a covariance (or correlation) "
        "matrix, which has none; give the data matrix (n samples x p variables)"
    )


def _check_count(value: Any, name: str, low: int, valid: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InvalidParameterError(f"{name} must be {valid}; got {value!r}")
    return int(value)


def _check_level(level: Any) -> float:
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
        raise InvalidParameterError(f"level must be a coverage in (0, 1), e.g. 0.95 for 2.5-97.5 % intervals; got {level!r}")
    return float(level)


def _workers(workers: Any) -> int:
    if workers is None or workers == -1:
        return os.cpu_count() or 1
    return _check_count(workers, "workers", 1, "a positive number of threads (or -1 or None: one per core)")


class _Resampler:
    """Fits the method on one resample's rows and matches its loadings to the full fit's: picklable, so that a
    Dask cluster's workers run it as the local threads do."""

    def __init__(self, rows: Any, draws: list[np.ndarray], spec: MethodSpec, r: int, seed: int, reference: np.ndarray,
                 center: bool, standardize: bool, names: tuple[str, ...], fit_kwargs: dict[str, Any]) -> None:  # fmt: skip
        self.rows, self.draws, self.spec, self.r, self.seed = rows, draws, spec, r, seed
        self.reference, self.center, self.standardize, self.names = reference, center, standardize, names
        self.fit_kwargs = fit_kwargs

    def __call__(self, index: int) -> list[tuple[tuple[np.ndarray, np.ndarray], ...]]:
        chosen = self.draws[index]
        with warnings.catch_warnings():  # a resample's constant columns and notes are the resample's own business
            warnings.simplefilter("ignore")
            problem = as_problem(self.rows[chosen], center=self.center, standardize=self.standardize,
                                 feature_names=self.names)  # fmt: skip
            result = fit(problem, self.spec, self.r, seed=resample_seed(self.seed, index), metrics=[],
                         **self.fit_kwargs)  # fmt: skip
        return [sparse_columns(matched(self.reference, result.loadings))]


class _BatchedTPower:
    """Fits TPower on a block of resamples at once (:mod:`spcakit.workflows.stability.batched`) and matches each
    resample's loadings to the full fit's; the resamples whose start ties go to ``one_by_one`` (a
    :class:`_Resampler`, ``tpower`` itself). Picklable, as :class:`_Resampler`."""

    def __init__(self, rows: np.ndarray, draws: list[np.ndarray], ks: list[int], reference: np.ndarray,
                 starts: np.ndarray | None, center: bool, standardize: bool, one_by_one: _Resampler) -> None:  # fmt: skip
        self.rows, self.draws, self.ks, self.reference, self.starts = rows, draws, ks, reference, starts
        self.center, self.standardize, self.one_by_one = center, standardize, one_by_one

    def __call__(self, first: int) -> list[tuple[tuple[np.ndarray, np.ndarray], ...]]:
        chosen = self.draws[first : first + BLOCK]
        counts = np.zeros((self.rows.shape[0], len(chosen)))
        for s, rows in enumerate(chosen):
            np.add.at(counts[:, s], rows, 1.0)
        loadings, tied = tpower_block(self.rows, counts, self.starts, self.ks, center=self.center,
                                      standardize=self.standardize)  # fmt: skip
        return [self.one_by_one(first + s)[0] if tied[s] else sparse_columns(matched(self.reference, each))
                for s, each in enumerate(loadings)]  # fmt: skip


def _batched_tpower(spec: MethodSpec, registry: Registry, rows: Any, fit_kwargs: dict[str, Any]) -> bool:
    """Whether the resamples can run as one TPower computation: the method is ``tpower`` as registered, given
    nothing but ``k``, on dense rows held in memory."""
    return (spec == registry.method("tpower") and set(fit_kwargs) <= {"k"} and isinstance(rows, np.ndarray)
            and rows.dtype.kind == "f")  # fmt: skip


def stability(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int | None = None,
    *,
    n_components: int | None = None,
    k: Any = None,
    n_resamples: int = 100,
    scheme: str = "subsample",
    threshold: float = 0.8,
    level: float = 0.95,
    seed: int | None = 0,
    workers: int | None = 1,
    client: Any = None,
    warm_start: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_resample: Callable[[int, int], None] | None = None,
    registry: Registry | None = None,
    **fit_kwargs: Any,
) -> Stability:
    r"""How stable the supports of a sparse PCA fit are: the method fitted again on resamples of the rows.

    The method is fitted on all the rows (the loadings :math:`U` that are judged, as :func:`spcakit.fit` returns
    them), then on ``n_resamples`` resamples. Each resample's loadings :math:`V` are matched to :math:`U` by the
    Hungarian assignment on :math:`|U^\top V|` and signed alike, so that component ``j`` of every resample is
    compared with component ``j`` of the full fit even where two components swap order. The record holds each
    variable's **selection probability** per component, **percentile intervals** for each loading, the **stable
    support** (variables selected in at least ``threshold`` of the resamples) with **Meinshausen & Bühlmann's
    bound** on the expected number of false selections in it,

    .. math:: \mathbb E[V] \le \frac{q^2}{(2\pi_{thr} - 1)\,p},

    (:math:`q` the mean number of variables a resample's loading selects, :math:`p` the variables that vary;
    Meinshausen & Bühlmann, JRSS-B 2010, Theorem 1), and the **Jaccard index** of each resample's support with
    the full fit's.

    Parameters
    ----------
    data, method, r, n_components, k
        As for :func:`spcakit.fit`: a data matrix (dense, ``scipy.sparse``, a DataFrame, a path, a ``builtin:`` data
        set that holds rows). A covariance matrix has no rows to resample and is refused. ``method=None`` runs the
        default (``auto``); ``tpower`` and ``spcart`` are 10 to 50 times cheaper per resample.
    n_resamples
        How many resamples (100 by default; Meinshausen & Bühlmann use 100).
    scheme
        ``"subsample"`` (default): :math:`\lfloor n/2 \rfloor` rows without replacement, the scheme the error
        bound is proved for. ``"bootstrap"``: ``n`` rows with replacement; the intervals are then bootstrap
        percentile intervals, and the error bound is stated without proof (a warning says so).
    threshold
        The selection probability from which a variable is stable, in (0.5, 1] (0.8 by default; Meinshausen &
        Bühlmann find 0.6 to 0.9 give similar results).
    level
        The coverage of the loadings' percentile intervals (0.95: the 2.5 and 97.5 percentiles).
    seed
        Seeds the resamples and the fits: resample ``s`` is drawn from the ``s``-th child of
        ``numpy.random.SeedSequence(seed)``, so the same seed gives the same resamples and the same selection
        probabilities whatever ``workers`` or ``client`` (the loadings, and so the intervals, agree to rounding where
        a cluster's BLAS splits products differently; ``None``: drawn from the operating system and recorded).
    workers
        Threads that fit resamples at once (1 by default; -1 or ``None``: one per core). NumPy's linear algebra
        runs outside Python's lock, so threads share the data without a copy.
    client
        A ``dask.distributed.Client``: the resamples are fitted on its cluster (the data scattered to the workers
        once). The probabilities are those of a local run.
    warm_start
        Start each resample's fit from the full fit's loadings (``False`` by default): ``tpower``, and the methods
        whose initializer takes a start and whose driver does not deflate (:func:`spcakit.path`'s rule); the
        others start as :func:`spcakit.fit` starts them. A warm start is cheaper but leans each resample towards
        the full fit's local optimum, which makes supports look more stable than the method is (on the colon
        data, ``tpower`` ``r = 3``, ``k = 10``: 8 stable genes in the second component warm, none cold), and the
        error bound assumes every resample is fitted on its own rows only. The record says which was done.
    center, standardize, feature_names, columns, drop
        As for :func:`spcakit.fit`. Each resample is centred (and standardised) by its own rows' statistics.
    on_resample
        Called as ``on_resample(done, n_resamples)`` after each resample (in the caller's thread, in order of
        completion).
    **fit_kwargs
        Passed to every fit (``truncator``, ``lam``, method parameters, ...).

    Returns
    -------
    Stability

    Raises
    ------
    InvalidParameterError
        A covariance input, observation weights, missing values, an unknown ``scheme``, a ``threshold`` outside
        (0.5, 1], ``n_resamples`` below 2, fewer than 4 rows, or anything :func:`spcakit.fit` refuses.

    Examples
    --------
    >>> s = spcakit.stability(x, "tpower", r=2, k=10, n_resamples=100, seed=0)   # doctest: +SKIP
    >>> s.stable()                                                               # doctest: +SKIP
    >>> s.error_bound()                                                          # doctest: +SKIP
    """
    r = count_of_components(r, n_components, default=1)
    check_arguments(feature_names=feature_names, columns=columns, drop=drop, center=center, standardize=standardize,
                    r=r, registry=registry,
                    **{name: value for name, value in fit_kwargs.items() if name in ARGUMENT_CHECKS})  # fmt: skip
    registry = registry or get_registry()
    n_resamples = _check_count(n_resamples, "n_resamples", 2, "an integer of at least 2 (100 is usual)")
    if scheme not in SCHEMES:
        raise InvalidParameterError(
            f"scheme must be 'subsample' (half the rows without replacement, the error bound's scheme) or "
            f"'bootstrap' (n rows with replacement); got {scheme!r}"
        )
    threshold = check_threshold(threshold)
    level = _check_level(level)
    count = _workers(workers)
    for name in ("sample_weight", "weights", "covariance", "missing", "metrics"):
        if name in fit_kwargs:
            raise InvalidParameterError(
                f"stability takes no {name}=: it resamples the rows of a complete data matrix, unweighted, and keeps "
                "the full fit's metrics; fit with spcakit.fit for those options"
            )
    seed = check_seed(seed)
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    spec = method_spec(method, registry)
    inputs = InputOptions(center=center, standardize=standardize, feature_names=feature_names, columns=columns,
                          drop=drop, missing="error")  # fmt: skip
    try:
        opened = open_input(data, inputs, rows=True, missing_options=MISSING_REFUSAL)
    except InvalidDataError as exc:
        if "missing" in str(exc).lower() and "nan" in str(exc).lower():
            raise InvalidDataError(f"{exc}") from None
        raise
    if opened.covariance_source:
        refuse_covariance(opened.source)
    problem = opened.problem
    assert problem is not None  # missing="error" refuses missing values above
    rows = opened.rows if opened.rows is not None else problem.data
    if rows is None:
        refuse_covariance(problem.source)
    n = int(rows.shape[0])
    if n < 4:
        raise InvalidDataError(f"stability needs at least 4 rows to resample (subsamples of at least 2); the data have {n}")
    r = check_r(r, problem)
    if k is not None:
        check_takes_k(spec, fit_kwargs.get("truncator"), registry)
        fit_kwargs = {**fit_kwargs, "k": k}
    full = fit(problem, spec, r, seed=seed, registry=registry, **fit_kwargs)
    start_note = "no: each resample is fitted as spcakit.fit fits it (warm_start=False)"
    resample_kwargs = dict(fit_kwargs)
    draws = resample_rows(n, n_resamples, scheme, seed)
    batched = _batched_tpower(spec, registry, rows, fit_kwargs)
    resample_kwargs["registry"] = registry if client is None else None
    one_by_one = _Resampler(rows, draws, spec, r, seed, full.loadings, center, standardize, full.feature_names,
                            resample_kwargs)  # fmt: skip
    if batched:
        k_used = full.spec["truncator"].get("k")
        ks = [int(k_used)] * r if isinstance(k_used, numbers.Integral) else [int(each) for each in k_used]
        fit_block: Any = _BatchedTPower(np.ascontiguousarray(rows, dtype=float), draws, ks, full.loadings,
                                        full.loadings if warm_start else None, center, standardize, one_by_one)  # fmt: skip
        units = list(range(0, n_resamples, BLOCK))
        start_note = ("yes: each resample starts from the full fit's loadings" if warm_start else
                      "no: each resample starts at its own variable of largest variance, as tpower does") + (
                      f"; TPower ran on blocks of {BLOCK} resamples at once (spcakit.workflows.stability.batched)")  # fmt: skip
    elif warm_start:
        parameter, start_note = warm_start_parameter(spec, registry, fit_kwargs)
        if parameter is not None:
            resample_kwargs[parameter] = full.loadings
            start_note = "yes: each resample starts from the full fit's loadings"
    if not batched:
        fit_block = _Resampler(rows, draws, spec, r, seed, full.loadings, center, standardize, full.feature_names,
                               resample_kwargs)  # fmt: skip
        units = list(range(n_resamples))
    started = time.perf_counter()
    fitted, where = _fit_all(fit_block, units, n_resamples, count, client, on_resample)
    seconds = time.perf_counter() - started
    summary = summarise(full.loadings, fitted, level)
    notes = []
    if warm_start and start_note.startswith("yes"):
        notes.append("the resamples were started from the full fit's loadings (warm_start=True): they lean towards "
                     "its local optimum, so the supports may look more stable than the method is, and the error "
                     "bound assumes each resample is fitted on its own rows only")  # fmt: skip
    if scheme == "bootstrap":
        notes.append("Meinshausen & Bühlmann's error bound is proved for subsamples of half the rows, not for "
                     "bootstrap samples: read it as indicative (scheme='subsample' for the proved bound)")  # fmt: skip
    return Stability(result=full, probabilities=summary["probabilities"], intervals=summary["intervals"],
                     jaccard=summary["jaccard"], sizes=summary["sizes"], threshold=threshold, level=level,
                     scheme=scheme, n_samples=n, selectable=int(problem.varying.p), seed=seed, seconds=seconds,
                     warm_start=start_note, workers=where, warnings=tuple(notes))  # fmt: skip


def _fit_all(
    fit_unit: Any, units: list[int], n_resamples: int, count: int, client: Any,
    on_resample: Callable[[int, int], None] | None,
) -> tuple[list[Any], str]:
    """Every resample's matched loadings, in resample order, and who fitted them. A unit of work (one resample,
    or a block of them) gives a list of resamples' loadings; units are fitted in any order, and put in order."""
    done = 0

    def tick(fitted: list[Any]) -> None:
        nonlocal done
        done += len(fitted)
        progress.report("resamples", done, unit="resamples")
        if on_resample is not None:
            on_resample(done, n_resamples)

    results: list[list[Any]] = []
    if client is not None:
        [remote] = client.scatter([fit_unit], broadcast=True)
        futures = client.map(_call, [remote] * len(units), units, pure=False)
        for future in futures:  # in order: each unit's resamples are counted once it is back
            results.append(future.result())
            tick(results[-1])
        workers = len(client.scheduler_info().get("workers", {}))
        where = f"a Dask cluster of {workers} worker{'s' if workers != 1 else ''}"
    elif count == 1 or len(units) == 1:
        for unit in units:
            results.append(fit_unit(unit))
            tick(results[-1])
        where = "1 thread"
    else:
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = [pool.submit(fit_unit, unit) for unit in units]
            for future in futures:
                results.append(future.result())
                tick(results[-1])
        where = f"{count} threads"
    return [each for unit in results for each in unit], where


def _call(task: Any, unit: int) -> Any:
    """``task(unit)``: a module-level function, so that a Dask worker can unpickle it."""
    return task(unit)


def stable_k(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int | None = None,
    *,
    n_components: int | None = None,
    k: Any = None,
    error_bound: float = 1.0,
    min_threshold: float = 0.6,
    n_resamples: int = 50,
    seed: int | None = 0,
    on_level: Callable[[int, int, float], None] | None = None,
    **options: Any,
) -> StableK:
    r"""Choose ``k`` by the size of the stable support at a bound on the expected false selections.

    At each ``k`` of the grid, :func:`stability` runs with the threshold

    .. math:: \pi(k) = \max\Big(\pi_{min},\ \tfrac12 + \frac{q^2}{2\,p\,\mathbb E[V]}\Big)

    (:math:`q` the mean number of variables a resample selects, about ``k``), the least at which Meinshausen &
    Bühlmann's bound keeps the expected false selections per component at ``error_bound``. The stable support
    grows with ``k`` while ``k`` is below the number of variables the data support, then stops: further
    variables are selected by chance, in different resamples. The choice is the smallest ``k`` whose stable
    support (over all components) is within ``error_bound`` per component of the largest found. Unlike the
    held-out error of :func:`spcakit.cross_validate`, which keeps falling as variables are added when
    :math:`p \gg n`, this does not favour dense loadings; and ``k`` above :math:`\sqrt{p\,\mathbb E[V]}` is never
    tried, since no threshold keeps the bound there.

    Parameters
    ----------
    data, method, r, n_components
        As for :func:`stability`.
    k
        The grid: ``"auto"`` (default: every ``k`` from 1 to :math:`\lfloor\sqrt{p\,\mathbb E[V]}\rfloor`,
        log-spaced above 30 levels), a string as :func:`spcakit.path` takes (``"2:40:2"``), or integers.
    error_bound
        The expected number of false selections allowed per component (1 by default).
    min_threshold
        The least threshold used, in (0.5, 1] (0.6 by default, Meinshausen & Bühlmann's lower end).
    n_resamples, seed
        As for :func:`stability` (50 resamples per level by default).
    on_level
        Called as ``on_level(k, stable_size, threshold)`` after each level.
    **options
        Passed to :func:`stability` (``scheme``, ``workers``, ``standardize``, method parameters, ...).

    Returns
    -------
    StableK
    """
    r = count_of_components(r, n_components, default=1)
    if isinstance(error_bound, bool) or not isinstance(error_bound, numbers.Real) or not 0 < float(error_bound) < math.inf:
        raise InvalidParameterError(f"error_bound must be a positive number of expected false selections; got {error_bound!r}")
    error_bound = float(error_bound)
    min_threshold = check_threshold(min_threshold, "min_threshold")
    started = time.perf_counter()
    auto = k is None or (isinstance(k, str) and k == AUTO)
    grid: list[int] = []
    if not auto:  # the grid needs p (``"2:p"``): the columns are read once here for it
        keys = ("center", "standardize", "feature_names", "columns", "drop")
        inputs = InputOptions(missing="error", **{key: options[key] for key in keys if key in options})
        opened = open_input(data, inputs, rows=True, missing_options=MISSING_REFUSAL)
        if opened.covariance_source or opened.problem is None:
            refuse_covariance(opened.source)
        grid = sorted({int(level) for level in parse_k_levels(k, opened.problem.p)})
    low = 1 if auto else grid[0]

    def run_at(level: int) -> Stability:
        return stability(data, method, r, k=level, n_resamples=n_resamples, seed=seed, threshold=min_threshold,
                         **options)  # fmt: skip

    try:
        first = run_at(low)
    except InvalidParameterError:
        if not (auto and r > 1):
            raise
        low = r  # the methods that refuse k < r
        first = run_at(low)
    seed = first.seed
    p = first.selectable
    ceiling = max(low, math.floor(math.sqrt(p * error_bound)))
    levels = [level for level in auto_levels(ceiling, low) if level <= ceiling] if auto else grid
    runs: dict[int, Stability] = {}
    sizes, thresholds = [], []
    for level in levels:
        run = first if level == low else run_at(level)
        # the least threshold that keeps the bound at error_bound for every component (above 1: none does)
        pi = max(min_threshold, float(np.max([threshold_for_bound(q, error_bound, p) for q in run.average_size])))
        size = sum(rows.size for rows in run.stable_support(pi)) if pi <= 1.0 else 0
        runs[level] = run
        sizes.append(size)
        thresholds.append(pi)
        if on_level is not None:
            on_level(level, size, pi)
    kept = [i for i, pi in enumerate(thresholds) if pi <= 1.0]  # where some threshold keeps the bound
    if not kept:
        raise InvalidParameterError(
            f"no level of k = {levels} keeps Meinshausen & Bühlmann's bound at {error_bound:g} expected false "
            f"selection(s) per component on {p} variables (that needs k <= {ceiling}); give smaller levels, or a "
            "larger error_bound"
        )
    place, plateau = _plateau([sizes[i] for i in kept], error_bound * r)
    chosen_index = kept[place]
    chosen = levels[chosen_index]
    pi = thresholds[chosen_index]
    beyond = (f"; k above {ceiling} was not tried: there no threshold keeps the bound at {error_bound:g} on {p} "
              "variables" if auto else "")  # fmt: skip
    reason = (
        f"k = {chosen}: the smallest k whose stable support ({sizes[chosen_index]} variable(s) selected in at least "
        f"{pi:.0%} of {n_resamples} resamples) reaches the plateau of the larger k ({plateau}), with at most "
        f"{error_bound:g} expected false selection(s) per component by Meinshausen & Bühlmann's bound{beyond}"
    )
    return StableK(levels=tuple(levels), stable_sizes=tuple(sizes), thresholds=tuple(thresholds), chosen=chosen,
                   error_bound=error_bound, stability=attrs.evolve(runs[chosen], threshold=min(pi, 1.0)),
                   reason=reason, seconds=time.perf_counter() - started)  # fmt: skip


def _plateau(sizes: Sequence[int], slack: float) -> tuple[int, int]:
    """``(chosen, plateau)``: the stable supports' sizes level off once ``k`` reaches what the data support; the
    plateau is their median from the first level within ``slack`` (the false selections the bound allows) of the
    largest, so that a chance selection at one dense level does not set it, and the choice is the first level that
    reaches it."""
    start = next(i for i, size in enumerate(sizes) if size >= max(sizes) - slack)
    plateau = math.floor(float(np.median(sizes[start:])))
    return next(i for i, size in enumerate(sizes) if size >= plateau), plateau
