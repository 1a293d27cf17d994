"""K-fold cross-validation over the rows, at every level of a sparsity grid (:func:`cross_validate`)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spcakit.numerics import index_sets
from spcakit.workflows.arguments import ARGUMENT_CHECKS, check_arguments
from spcakit.workflows.fit import check_r, check_seed, count_of_components, fit
from spcakit.workflows.cv.criterion import held_out_error
from spcakit.workflows.cv.held_out import fold_scoring, held_out_sums, observed_held_out_sums
from spcakit.workflows.cv.records import CrossValidation, CVLevel, check_rule, choose_level
from spcakit.core.errors import (
    ConstantColumnWarning, InvalidDataError, InvalidParameterError, MissingValueWarning,
    ZeroLoadingError, listed,
)  # fmt: skip
from spcakit.inputs.options import InputOptions, check_missing, open_input
from spcakit.workflows.imputation import impute_and_fit, means_filled_problem
from spcakit.inputs import as_problem, read_missing
from spcakit.inputs.missing import MissingData, missing_values
from spcakit.workflows.paths.grids import AUTO, auto_levels, parse_k_levels, parse_lam_levels
from spcakit.workflows.paths.sweep import check_takes_k, lowest_level, method_spec
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import Problem, zero_variance_text
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec
from spcakit.workflows.results import Result


def fold_indices(n: int, folds: int, seed: int) -> tuple[np.ndarray, ...]:
    """The held-out rows of each fold: ``numpy.random.default_rng(seed).permutation(n)`` cut into ``folds``
    consecutive pieces whose sizes differ by at most one (the larger first), each sorted."""
    order = np.random.default_rng(seed).permutation(n)
    return tuple(np.sort(piece) for piece in np.array_split(order, folds))


def fold_error(training: Problem, result: Result, rows: np.ndarray) -> float:
    """The held-out error of one fold: squared leave-one-variable-out residuals over the rows' total sum of squares,
    both after the training rows' centring and scaling."""
    record = training.input
    held_out = rows
    if record is not None and record.mean is not None:
        held_out = held_out - record.mean
    if record is not None and record.scale is not None:
        held_out = held_out / record.scale
    try:
        return held_out_error(held_out, result.loadings)
    except InvalidDataError:
        raise InvalidDataError(NO_HELD_OUT_VARIANCE) from None


#: Why a fold's error is undefined.
NO_HELD_OUT_VARIANCE = (
    "a held-out fold has no variance about the training rows' means (its rows equal them): its error is "
    "undefined; the data have too few distinct rows for this many folds, use fewer folds"
)


def check_folds(folds: Any, n: int | None = None) -> int:
    valid = "an integer from 2 (two halves) to n, the number of rows (leave-one-out)"
    if isinstance(folds, bool | np.bool_) or not isinstance(folds, numbers.Integral):
        raise InvalidParameterError(f"folds must be {valid}; got {folds!r}")
    if folds < 2 or (n is not None and folds > n):
        upper = "" if n is None else f" = {n}"
        raise InvalidParameterError(f"folds must be {valid}{upper}; got {folds}")
    return int(folds)


def refuse_covariance(source: str = "") -> None:
    """Raise the error that says why a covariance (or correlation) matrix ``source`` cannot be cross-validated,
    and what to use instead.

    Raises
    ------
    InvalidParameterError
        Always.
    """
    what = source or "the input"
    raise InvalidParameterError(
        f"cross-validation holds out rows (samples) of a data matrix, and {what} is a covariance (or correlation) "
        "matrix, which has none; give the data matrix (n samples x p variables), or choose the sparsity from the "
        "covariance by a target instead: spcakit path METHOD --target-cpev F (or spcakit.target_k(data, method, r, "
        "cpev=F)), the sparsest k whose CPEV is at least F x PCA's"
    )


def cross_validate(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int | None = None,
    *,
    k: Any = None,
    lam: Any = None,
    folds: int = 5,
    rule: str = "1se",
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_level: Callable[[CVLevel], None] | None = None,
    registry: Registry | None = None,
    missing: str = "auto",
    **fit_kwargs: Any,
) -> CrossValidation:
    r"""Choose the sparsity of ``method`` by ``K``-fold cross-validation over the rows of ``data``.

    At every level of the grid and in every fold, ``method`` is fitted on the training rows (centred
    by their own means, and scaled by their own standard deviations when standardising) and the
    held-out rows are scored by the element-wise ``ekf`` scheme (Bro et al. 2008): each entry
    predicted from its row's *other* variables through the loadings, with the PRESS residual
    :math:`(x_j - (Hx)_j)/(1 - h_j)` (Sherman-Morrison; an entry its row's others cannot predict,
    :math:`h_j = 1`, is predicted by the training mean). The plain projection error is not used:
    it lets each entry predict itself and only falls as ``k`` grows, so it would always choose the
    densest level. See the module's description for the derivation and the rules.

    Parameters
    ----------
    data, method, r
        As for :func:`spcakit.fit`: a data matrix (array, DataFrame, ``.npy``/``.csv`` path, or a
        ``builtin:`` data set that holds rows), a ``scipy.sparse`` data matrix (any format, or a
        sparse ``.npz``/``.mtx`` path) or a ``dask.array.Array`` (or a ``.zarr`` store). A
        ``scipy.sparse`` or Dask matrix is never densified whole: each fold's training rows are a
        row selection of it, made into a problem as :func:`spcakit.fit` makes one (an implicitly
        centred operator, a one-pass covariance), and the held-out rows are made dense one block of
        at most 16 MiB at a time (:data:`spcakit.workflows.cv.held_out.HELD_OUT_BLOCK_BYTES`), centred and
        scaled by the training rows' statistics, in one pass over the rows per level (for Dask, one
        ``dask.compute`` per level, a row chunk per task); the errors are the dense computation's,
        to rounding (:mod:`spcakit.workflows.cv.held_out`). As for dense data, every fold's training problem
        is held at once: for sparse data a copy of its rows' stored entries, for Dask data a
        ``p x p`` covariance (tall data, one pass over its rows) or its rows persisted (wide data),
        as :func:`spcakit.fit` would hold them. A covariance or correlation matrix has no rows to
        hold out and is refused. Constant columns get zero loadings, as in :func:`spcakit.fit`, and
        so do columns constant among a fold's training rows, in that fold (see the module's
        description); ``k`` above the number of columns that vary in a fold is lowered to it there.
    k
        The grid of ``k`` (nonzero variables per loading), as :func:`spcakit.path` takes it:
        ``"auto"`` (the default when neither ``k`` nor ``lam`` is given: every ``k`` from 1, or
        ``r`` for the methods that refuse ``k < r``, to ``p`` (to the number of columns that vary,
        when some are constant), log-spaced above 30 levels, stopping
        before the first level above that the method refuses: :attr:`CrossValidation.stop_note`),
        ``"1:p"``, ``"2:12:2"``, ``"2,4,6"``, or a sequence of integers.
    lam
        Instead of ``k``: the grid of the method's λ, in the order given.
    folds
        The number of folds ``K``: an integer from 2 to the number of rows ``n`` (``n``: leave
        one row out).
    rule
        ``"1se"`` (the default): the sparsest level whose mean error is at most the least mean
        error plus its standard error (never denser than ``"min"``); ``"min"``: the level of least
        mean held-out error. Past a planted support the curve is nearly flat, and ``"min"`` often
        overshoots the support where ``"1se"`` finds it (the module's "Which rule").
    seed
        The seed of the shuffle of the rows and of every fit; ``None`` draws one (recorded in
        :attr:`CrossValidation.seed`).
    covariance, center, standardize, feature_names, columns, drop
        How the data are read, as for :func:`spcakit.fit`; the data are read once.
        ``covariance=True`` is refused (there are no rows). With ``center=False`` the rows are
        neither centred for the fits nor for the error.
    on_level
        Called with each :class:`CVLevel` when its folds are done (for progress displays).
    registry
        The registry to look names up in.
    missing
        What to do with missing values (NaN entries, stored NaN of ``scipy.sparse`` data, empty or ``NA``
        cells of a CSV file), as for :func:`spcakit.fit`: ``"auto"`` (the default) cross-validates them with a
        :class:`~spcakit.core.errors.MissingValueWarning` (once) saying the fraction missing; ``"em"`` does the
        same without the warning; ``"error"`` refuses them (:class:`~spcakit.core.errors.MissingValuesError`).
        Data without NaN give the same results under every option. With NaN, each fold's training rows are
        imputed by EM on the sparse low-rank model (:func:`spcakit.workflows.imputation.impute_and_fit`) at every level,
        from the training rows alone (the held-out rows never enter), each level's EM starting from the
        previous level's completed training rows of that fold (a warm start); the held-out rows are scored
        on their observed entries only, each predicted from the row's other observed entries
        (:func:`spcakit.workflows.cv.criterion.observed_residuals`), centred and scaled by the training rows' completed
        means and scales; and the refit on all rows is :func:`spcakit.fit` with ``missing="em"``. Dask
        arrays with NaN are refused (compute them first), as by :func:`spcakit.fit`. See the module's
        "Missing values".
    **fit_kwargs
        The rest of :func:`spcakit.fit`'s arguments (``truncator``, ``deflator``, ``stopper``,
        part parameters). ``metrics`` names the metrics of the refit :attr:`CrossValidation.result`
        (default: all); the folds' fits compute none. Observation weights (``sample_weight``) are
        not taken: the folds are scored unweighted.

    Returns
    -------
    CrossValidation
        The curve (mean error, standard error and every fold's error per level), the chosen level
        and the refit on all rows there.

    Raises
    ------
    InvalidParameterError
        A covariance input, observation weights, an unknown ``missing``, ``folds`` not an integer in :math:`[2, n]`, an
        unknown ``rule``, both ``k`` and ``lam``, a bad grid, a method that takes no ``k`` with a
        ``k`` grid; a level the method refuses is named first in the message (``k = 2: ...``), a
        fold too (``fold 3 of 5``).
    MissingValuesError
        The data hold NaN and ``missing="error"``.

    Examples
    --------
    >>> cv = spcakit.cross_validate(data, "spcart", r=1, k="1:p", rule="1se")  # doctest: +SKIP
    >>> cv.chosen, cv.result.loadings                                          # doctest: +SKIP
    >>> cv.plot()                                                              # doctest: +SKIP
    """
    r = count_of_components(r, fit_kwargs.pop("n_components", None), default=1)
    check_arguments(feature_names=feature_names, columns=columns, drop=drop, on_level=on_level, center=center,
                    standardize=standardize, covariance=covariance, r=r, registry=registry,
                    **{name: value for name, value in fit_kwargs.items() if name in ARGUMENT_CHECKS})  # fmt: skip
    registry = registry or get_registry()
    check_rule(rule)
    folds = check_folds(folds)
    if k is not None and lam is not None:
        raise InvalidParameterError("give the grid as k (nonzeros per loading) or as lam (the method's λ), not both")
    for name in ("sample_weight", "weights"):
        if name in fit_kwargs:
            raise InvalidParameterError(
                f"cross_validate takes no observation weights ({name}=): its folds hold out rows and score them "
                "unweighted; cross-validate without weights to choose the level, then fit with them there "
                "(spcakit.fit(data, method, r, k=cv.chosen, sample_weight=w))"
            )
    missing = check_missing(missing)
    refit_metrics = fit_kwargs.pop("metrics", None)
    seed = check_seed(seed)
    if seed is None:  # drawn from the operating system's entropy, and recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    spec = method_spec(method, registry)
    inputs = InputOptions(covariance=covariance, center=center, standardize=standardize, feature_names=feature_names,
                          columns=columns, drop=drop, missing=missing)  # fmt: skip
    # a scipy.sparse (canonical CSR) or Dask data matrix is held as given (opened.rows), and never densified whole
    opened = open_input(data, inputs, rows=True, missing_options=MISSING_OPTIONS)
    if opened.covariance_source:
        refuse_covariance(opened.source)
    if opened.problem is None:
        return _cross_validate_missing(
            opened.incomplete, spec, r, k=k, lam=lam, folds=folds, rule=rule, seed=seed, center=center,
            standardize=standardize, source=opened.source, on_level=on_level, registry=registry,
            announce=missing == "auto", refit_metrics=refit_metrics, fit_kwargs=fit_kwargs,
        )  # fmt: skip
    problem = opened.problem
    if opened.rows is None and problem.data is None:
        refuse_covariance(problem.source)
    outside = opened.rows
    rows = outside if outside is not None else problem.data
    n = int(rows.shape[0])
    folds, r, knob, grid, held_out = _setup(problem, spec, n, r, k, lam, folds, seed, fit_kwargs, registry)
    # the training rows are already centred (and scaled) by all the rows' statistics; centring (and scaling) them
    # again by their own is the same, up to rounding, as doing it to the rows as given
    training: list[Problem] = []
    notes: list[str] = []
    labels = np.empty(n, dtype=np.intp)  # the fold that holds out each row
    for f, test in enumerate(held_out):
        labels[test] = f
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        try:
            training.append(as_problem(rows[np.flatnonzero(keep)], center=center, standardize=standardize,
                                       feature_names=problem.feature_names))  # fmt: skip
        except (InvalidParameterError, InvalidDataError) as exc:
            raise type(exc)(f"fold {f + 1} of {folds} ({int(keep.sum())} training rows): {exc}") from None
        rare = index_sets.difference(training[-1].constant_columns, problem.constant_columns)  # constant in this fold only
        if rare.size:
            notes.append(
                f"fold {f + 1} of {folds} ({int(keep.sum())} training rows): "
                f"{zero_variance_text(rare, problem.feature_names, 'column(s) are constant among the training rows')}; "
                "they get zero loadings in that fold's fits, and their held-out entries are predicted by the training "
                "means"
            )
    for note in notes:
        warnings.warn(note, ConstantColumnWarning, stacklevel=2)

    def evaluate(level: Any) -> CVLevel:
        errors, nonzeros, results = [], [], []
        for f, (train, test) in enumerate(zip(training, held_out)):
            try:
                with warnings.catch_warnings():  # the folds' constant columns are named once, above
                    warnings.simplefilter("ignore", ConstantColumnWarning)
                    result = fit(train, spec, r, seed=seed, metrics=[], registry=registry, **{knob: level},
                                 **fit_kwargs)  # fmt: skip
            except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
                raise type(exc)(f"{knob} = {level}, fold {f + 1} of {folds}: {exc}") from None
            if outside is None:
                errors.append(fold_error(train, result, rows[test]))
            results.append(result)
            nonzeros.append(np.count_nonzero(result.loadings))
        if outside is not None:  # every fold's held-out rows in one pass, a block at a time
            scorings = [fold_scoring(train, problem, result.loadings) for train, result in zip(training, results)]
            sums = held_out_sums(outside, labels, scorings)
            if not (sums[:, 1] > 0).all():
                raise InvalidDataError(NO_HELD_OUT_VARIANCE)
            errors = [float(residual / total) for residual, total in sums]
        spread = float(np.std(errors, ddof=1)) / math.sqrt(folds)
        return CVLevel(level=level, mean_error=float(np.mean(errors)), std_error=spread, fold_errors=tuple(errors),
                       nz=float(np.mean(nonzeros)))  # fmt: skip

    done, auto, stop_note = _levels(evaluate, grid, r, problem.varying.p, on_level)
    def refit(level: Any) -> Result:
        return fit(problem, spec, r, seed=seed, metrics=refit_metrics, registry=registry, **{knob: level},
                   **fit_kwargs)  # fmt: skip

    return _outcome(spec.name, problem, r, n, knob, done, rule, folds, held_out, seed, auto, stop_note, notes, refit)


def _setup(
    problem: Problem, spec: MethodSpec, n: int, r: int, k: Any, lam: Any, folds: int, seed: int,
    fit_kwargs: dict[str, Any], registry: Registry,
) -> tuple[int, int, str, Any, tuple[np.ndarray, ...]]:
    """``(folds, r, knob, grid, held_out)`` of a cross-validation of ``n`` rows, checked: the folds, ``r``, which
    knob the grid sets (``"k"`` or ``"lam"``), the grid and each fold's held-out rows."""
    folds = check_folds(folds, n)
    r = check_r(r, problem)
    knob = "k" if lam is None else "lam"
    if knob == "k":
        check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    grid = parse_k_levels(AUTO if k is None else k, problem.p) if lam is None else parse_lam_levels(lam)
    return folds, r, knob, grid, fold_indices(n, folds, seed)


def _outcome(
    method: str, problem: Problem, r: int, n: int, knob: str, done: list[CVLevel], rule: str, folds: int,
    held_out: Sequence[np.ndarray], seed: int, auto: bool, stop_note: str, notes: Sequence[str],
    refit: Callable[[Any], Result],
) -> CrossValidation:
    """The :class:`CrossValidation` of the levels ``done``: the level ``rule`` chooses, and ``refit`` of it on all
    the rows."""
    mean = np.array([lv.mean_error for lv in done])
    spread = np.array([lv.std_error for lv in done])
    sparseness = [lv.level for lv in done] if knob == "k" else [lv.nz for lv in done]
    chosen, least = choose_level(mean, spread, sparseness, rule)
    varying = problem.varying.p
    if knob == "k" and varying > n:
        note = wide_data_note(varying, n, done[chosen].level)
        warnings.warn(note, UserWarning, stacklevel=3)
        notes = (*notes, note)
    return CrossValidation(
        method=method, source=problem.source, r=r, p=problem.p, n_samples=n, knob=knob,
        levels=[lv.level for lv in done], mean_error=mean, std_error=spread,
        fold_errors=[list(lv.fold_errors) for lv in done], nz=[lv.nz for lv in done],
        chosen=done[chosen].level, least=done[least].level, rule=rule, folds=folds,
        fold_sizes=tuple(int(t.size) for t in held_out), seed=seed, auto=auto, stop_note=stop_note,
        warnings=tuple(notes), result=refit(done[chosen].level),
    )  # fmt: skip


def wide_data_note(p: int, n: int, chosen: Any) -> str:
    """What a cross-validation of wide data says about its choice: the held-out error tends to fall as variables are
    added when ``p > n``, so it is no guide to a support to read; the stability choice is."""
    return (
        f"the data are wide ({p} variables that vary, {n} rows): there the held-out error tends to keep falling as "
        f"variables are added, so cross-validation favours dense loadings (it chose k = {chosen}); to choose a "
        "support small enough to read, choose k by stability: spcakit.stable_k(data, method, r) (spcakit stability "
        "METHOD -k auto), which keeps Meinshausen & Bühlmann's bound on false selections"
    )


def _levels(
    evaluate: Callable[[Any], CVLevel], grid: Any, r: int, varying: int, on_level: Callable[[CVLevel], None] | None
) -> tuple[list[CVLevel], bool, str]:
    """``(done, auto, stop_note)``: every level of ``grid`` evaluated in order (the ``"auto"`` grid from the
    lowest level the method takes up to ``varying`` columns, stopping before the first it refuses)."""
    auto = grid == AUTO
    done: list[CVLevel] = []
    if auto:
        low, first = lowest_level(evaluate, r)
        values: list[Any] = auto_levels(varying, low)  # up to the number of columns that vary
    else:
        values, first = list(grid), None  # type: ignore[arg-type]
    stop_note = ""
    for index, value in enumerate(values):
        if index == 0 and first is not None:
            level = first
        else:
            try:
                level = evaluate(value)
            except InvalidParameterError as exc:
                if not (auto and done):
                    raise
                stop_note = f"stopped after k = {done[-1].level}: the method refuses {exc}"
                break
        done.append(level)
        if on_level is not None:
            on_level(level)
    return done, auto, stop_note


#: What a refusal of NaN under ``missing="error"`` offers instead.
MISSING_OPTIONS = ("missing='auto' (the default, with a warning) or missing='em' (spcakit cv --missing auto or em): "
                   "each fold's training rows imputed by EM, the held-out rows scored on their observed entries")


def _cross_validate_missing(
    data: MissingData, spec: MethodSpec, r: Any, *, k: Any, lam: Any, folds: int, rule: str, seed: int,
    center: bool, standardize: bool, source: str, on_level: Callable[[CVLevel], None] | None, registry: Registry,
    announce: bool, refit_metrics: Any, fit_kwargs: dict[str, Any],
) -> CrossValidation:
    """:func:`cross_validate` of data with missing values (the module's "Missing values"): each fold's training
    rows imputed by EM at every level (warm started from the previous level's), the held-out rows scored on
    their observed entries."""
    n, p = data.matrix.shape
    names = data.names
    if announce:
        note = (
            f"the data have {data.count} missing entr{'y' if data.count == 1 else 'ies'} ({data.fraction:.1%} of the "
            f"{n} x {p}): each fold's training rows were imputed by EM on the sparse low-rank model at every level "
            "(spcakit.workflows.imputation; the held-out rows never enter it) and the held-out rows scored on their observed "
            "entries only; pass missing='em' to do this without this warning, or missing='error' to refuse missing "
            "values"
        )
        warnings.warn(note, MissingValueWarning, stacklevel=3)
    raw = data.matrix  # never written: each fold imputes a copy of its training rows
    problem = means_filled_problem(data, center, standardize, source)  # what varies, p and r, before any EM
    folds, r, knob, grid, held_out = _setup(problem, spec, n, r, k, lam, folds, seed, fit_kwargs, registry)
    training: list[MissingData] = []
    for test in held_out:
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        training.append(read_missing(raw[np.flatnonzero(keep)], names))
    starts: list[np.ndarray | None] = [None] * folds  # each fold's imputed values at the last level: the next start
    unconverged: list[str] = []

    def evaluate(level: Any) -> CVLevel:
        errors, nonzeros = [], []
        for f, (train, test) in enumerate(zip(training, held_out)):
            def fit_once(matrix: Any) -> Result:
                return fit(matrix, spec, r, seed=seed, metrics=[], registry=registry, feature_names=names, center=center,
                           standardize=standardize, missing="error", **{knob: level}, **fit_kwargs)  # fmt: skip

            try:
                with warnings.catch_warnings():  # the missing values are announced once, above
                    warnings.simplefilter("ignore", ConstantColumnWarning)
                    warnings.simplefilter("ignore", MissingValueWarning)
                    imputed = impute_and_fit(train, fit_once, announce=False, start=starts[f])
            except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
                raise type(exc)(f"{knob} = {level}, fold {f + 1} of {folds}: {exc}") from None
            if train.count:
                starts[f] = missing_values(train)
            if not imputed.record.converged:
                unconverged.append(f"{knob} = {level}, fold {f + 1}")
            result, record = imputed.result, imputed.result.input
            residual, total = observed_held_out_sums(raw, test, result.loadings, None if record is None else record.mean,
                                                     None if record is None else record.scale)  # fmt: skip
            if not total > 0:
                raise InvalidDataError(NO_HELD_OUT_VARIANCE)
            errors.append(residual / total)
            nonzeros.append(np.count_nonzero(result.loadings))
        spread = float(np.std(errors, ddof=1)) / math.sqrt(folds)
        return CVLevel(level=level, mean_error=float(np.mean(errors)), std_error=spread, fold_errors=tuple(errors),
                       nz=float(np.mean(nonzeros)))  # fmt: skip

    done, auto, stop_note = _levels(evaluate, grid, r, problem.varying.p, on_level)
    notes: list[str] = []
    if unconverged:
        notes.append(
            f"the EM imputation of a fold's training rows stopped before converging in {len(unconverged)} of the "
            f"{len(done) * folds} fits ({listed(unconverged, separator='; ')}): those folds' errors are of unconverged imputations"
        )
        warnings.warn(notes[-1], MissingValueWarning, stacklevel=3)
    def refit(level: Any) -> Result:
        return fit(raw, spec, r, seed=seed, metrics=refit_metrics, registry=registry, feature_names=names,
                   center=center, standardize=standardize, missing="em", **{knob: level}, **fit_kwargs)  # fmt: skip

    return _outcome(spec.name, problem, r, n, knob, done, rule, folds, held_out, seed, auto, stop_note, notes, refit)
