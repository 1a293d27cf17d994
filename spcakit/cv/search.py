"""K-fold cross-validation over the rows, at every level of a sparsity grid (:func:`cross_validate`)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spcakit.validators import ARGUMENT_CHECKS, check_arguments
from spcakit.api import check_r, check_seed, fit
from spcakit.cv.criterion import held_out_error
from spcakit.cv.records import CrossValidation, CVLevel, check_rule, choose_level
from spcakit.errors import ConstantColumnWarning, InvalidDataError, InvalidParameterError, ZeroLoadingError
from spcakit.inputs import as_problem
from spcakit.paths.grids import AUTO, auto_levels, parse_k_levels, parse_lam_levels
from spcakit.paths.sweep import check_takes_k, lowest_level, method_spec
from spcakit.plugins import get_registry
from spcakit.problem import Problem, zero_variance_text
from spcakit.registry import Registry
from spcakit.specs import MethodSpec
from spcakit.state import Result


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
        raise InvalidDataError(
            "a held-out fold has no variance about the training rows' means (its rows equal them): its error is "
            "undefined; the data have too few distinct rows for this many folds, use fewer folds"
        ) from None


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
    r: int = 1,
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
        ``builtin:`` data set that holds rows). A covariance or correlation matrix has no rows to
        hold out and is refused. Constant columns get zero loadings, as in :func:`spcakit.fit`,
        and so do columns constant among a fold's training rows, in that fold (see the module's
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
    **fit_kwargs
        The rest of :func:`spcakit.fit`'s arguments (``truncator``, ``deflator``, ``stopper``,
        part parameters). ``metrics`` names the metrics of the refit :attr:`CrossValidation.result`
        (default: all); the folds' fits compute none.

    Returns
    -------
    CrossValidation
        The curve (mean error, standard error and every fold's error per level), the chosen level
        and the refit on all rows there.

    Raises
    ------
    InvalidParameterError
        A covariance input, ``folds`` not an integer in :math:`[2, n]`, an unknown ``rule``, both
        ``k`` and ``lam``, a bad grid, a method that takes no ``k`` with a ``k`` grid; a level the
        method refuses is named first in the message (``k = 2: ...``), a fold too
        (``fold 3 of 5``).

    Examples
    --------
    >>> cv = spcakit.cross_validate(data, "spcart", r=1, k="1:p", rule="1se")  # doctest: +SKIP
    >>> cv.chosen, cv.result.loadings                                          # doctest: +SKIP
    >>> cv.plot()                                                              # doctest: +SKIP
    """
    check_arguments(feature_names=feature_names, columns=columns, drop=drop, on_level=on_level, center=center,
                    standardize=standardize, covariance=covariance, r=r, registry=registry,
                    **{name: value for name, value in fit_kwargs.items() if name in ARGUMENT_CHECKS})  # fmt: skip
    registry = registry or get_registry()
    check_rule(rule)
    folds = check_folds(folds)
    if k is not None and lam is not None:
        raise InvalidParameterError("give the grid as k (nonzeros per loading) or as lam (the method's λ), not both")
    refit_metrics = fit_kwargs.pop("metrics", None)
    seed = check_seed(seed)
    if seed is None:  # drawn from the operating system's entropy, and recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    spec = method_spec(method, registry)
    problem = as_problem(data, covariance=covariance, center=center, standardize=standardize,
                         feature_names=feature_names, columns=columns, drop=drop)  # fmt: skip
    if problem.data is None and problem.input is not None and problem.input.kind == "data":
        raise InvalidParameterError(
            f"cross-validation needs the rows of the data as a dense array, and {problem.source or 'the input'} is held "
            "only through its covariance operator (scipy.sparse or Dask input); give a dense array (e.g. "
            "x.toarray() when it fits in memory), or choose the sparsity by a target instead: spcakit.target_k(data, "
            "method, r, cpev=F) (spcakit path METHOD --target-cpev F), the sparsest k whose CPEV is at least F x PCA's"
        )
    if problem.data is None:
        refuse_covariance(problem.source)
    rows = problem.data
    n = rows.shape[0]
    folds = check_folds(folds, n)
    r = check_r(r, problem)
    knob = "k" if lam is None else "lam"
    if knob == "k":
        check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    grid = parse_k_levels(AUTO if k is None else k, problem.p) if lam is None else parse_lam_levels(lam)
    held_out = fold_indices(n, folds, seed)
    # the training rows are already centred (and scaled) by all the rows' statistics; centring (and scaling) them
    # again by their own is the same, up to rounding, as doing it to the rows as given
    training: list[Problem] = []
    notes: list[str] = []
    for f, test in enumerate(held_out):
        keep = np.ones(n, dtype=bool)
        keep[test] = False
        try:
            training.append(as_problem(rows[keep], center=center, standardize=standardize,
                                       feature_names=problem.feature_names))  # fmt: skip
        except (InvalidParameterError, InvalidDataError) as exc:
            raise type(exc)(f"fold {f + 1} of {folds} ({int(keep.sum())} training rows): {exc}") from None
        rare = np.setdiff1d(training[-1].constant_columns, problem.constant_columns)  # constant in this fold only
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
        errors, nonzeros = [], []
        for f, (train, test) in enumerate(zip(training, held_out)):
            try:
                with warnings.catch_warnings():  # the folds' constant columns are named once, above
                    warnings.simplefilter("ignore", ConstantColumnWarning)
                    result = fit(train, spec, r, seed=seed, metrics=[], registry=registry, **{knob: level},
                                 **fit_kwargs)  # fmt: skip
            except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
                raise type(exc)(f"{knob} = {level}, fold {f + 1} of {folds}: {exc}") from None
            errors.append(fold_error(train, result, rows[test]))
            nonzeros.append(np.count_nonzero(result.loadings))
        spread = float(np.std(errors, ddof=1)) / math.sqrt(folds)
        return CVLevel(level=level, mean_error=float(np.mean(errors)), std_error=spread, fold_errors=tuple(errors),
                       nz=float(np.mean(nonzeros)))  # fmt: skip

    auto = grid == AUTO
    done: list[CVLevel] = []
    if auto:
        low, first = lowest_level(evaluate, r)
        values: list[Any] = auto_levels(problem.varying.p, low)  # up to the number of columns that vary
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
    mean = np.array([lv.mean_error for lv in done])
    spread = np.array([lv.std_error for lv in done])
    sparseness = [lv.level for lv in done] if knob == "k" else [lv.nz for lv in done]
    chosen, least = choose_level(mean, spread, sparseness, rule)
    result = fit(problem, spec, r, seed=seed, metrics=refit_metrics, registry=registry, **{knob: done[chosen].level},
                 **fit_kwargs)  # fmt: skip
    return CrossValidation(
        method=spec.name, source=problem.source, r=r, p=problem.p, n_samples=n, knob=knob,
        levels=[lv.level for lv in done], mean_error=mean, std_error=spread,
        fold_errors=[list(lv.fold_errors) for lv in done], nz=[lv.nz for lv in done],
        chosen=done[chosen].level, least=done[least].level, rule=rule, folds=folds,
        fold_sizes=tuple(int(t.size) for t in held_out), seed=seed, auto=auto, stop_note=stop_note,
        warnings=tuple(notes), result=result,
    )  # fmt: skip
