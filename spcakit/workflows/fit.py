"""One method on one data set: the input door, the core's run, the result (:func:`fit`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any
from warnings import warn

import numpy as np

from spcakit.numerics import ties
from spcakit.numerics.linalg import rank_tolerance, refuse_beyond_rank
from spcakit.output.json_values import NotJsonError, json_value
from spcakit.workflows.arguments import check_arguments
from spcakit.core.version import __version__
from spcakit.core.drivers import Parts, StepCallback
from spcakit.core.errors import (
    BadPartResult, ConstantColumnWarning, InvalidParameterError, SpcakitError,
)  # fmt: skip
from spcakit.analysis.bounds import check_relaxation
from spcakit.analysis.metrics import (
    LoadingSpan, additional_variances, compute_metrics, constraint_tolerance, loading_products, loading_span, redundancy,
    select_metrics,
)  # fmt: skip
from spcakit.analysis.order import variance_order
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import SCALE_RANGE, Problem, constant_columns_note, left_out_text, rescaled
from spcakit.inputs.missing import MissingData
from spcakit.inputs.options import InputOptions, open_input
from spcakit.inputs.weights import check_weights
from spcakit.workflows.imputation import impute_and_fit
from spcakit.core.protocols import PART_ROLES, REPORT_PREFIX
from spcakit.core.run import build_parts, check_driver, part_failure, requested_spec, run_parts
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec, PartRef
from spcakit.core.records import CapReached, IssuedWarning, proved_bound
from spcakit.workflows.results import Result
from spcakit.workflows.configure import (
    check_constraint, check_k, configure, constraint_of, is_nonnegative, k_text, lowered_k, with_default_k,
)  # fmt: skip


def check_r(r: Any, problem: Problem) -> int:
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1:
        raise InvalidParameterError(f"r (number of loadings) must be a positive integer; got {r!r}")
    r = int(r)
    if r > problem.p:
        raise InvalidParameterError(f"r={r} is larger than the number of variables p={problem.p}; valid: 1 <= r <= {problem.p}")
    varying = problem.varying.p
    if r > varying:
        raise InvalidParameterError(
            f"r={r} is larger than the number of variables that vary: {varying} of the {problem.p} "
            f"({left_out_text(problem)}, and get zero loadings); "
            f"valid: 1 <= r <= {varying}"
        )
    if r > problem.max_rank:
        raise InvalidParameterError(
            f"r={r} is larger than the rank of the centred data (at most n - 1 = {problem.max_rank}); "
            f"valid: 1 <= r <= {problem.max_rank}"
        )
    return r


def fix_signs(x: np.ndarray) -> np.ndarray:
    """Flip each column so that its largest-magnitude entry is positive (and no entry is -0.0).

    Magnitudes equal within the tie tolerance (:mod:`spcakit.numerics.ties`) go to the smaller variable index,
    so that rounding noise never flips a loading's sign.
    """
    width = max(1, (1 << 20) // (8 * max(1, x.shape[0])))  # magnitudes of 1 MiB of columns at a time
    idx = np.concatenate([ties.argmax_columns(np.abs(x[:, j : j + width])) for j in range(0, x.shape[1], width)])
    signs = np.sign(x[idx, np.arange(x.shape[1])])
    signs[signs == 0] = 1.0
    fixed = x * signs
    fixed += 0.0  # -0.0 + 0.0 is +0.0
    return fixed


def check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer (or None); got {seed!r}")
    return int(seed)


def resolved_spec(spec: MethodSpec, registry: Registry, parts: Parts, p: int) -> dict[str, Any]:
    """The spec as it ran: every part's defaults filled in, the default lambda made explicit."""
    doc = spec.to_dict()
    for role in PART_ROLES:
        entry = doc.get(role)
        if entry is None:
            continue
        defaults = registry.part(role, entry["name"]).parameters()
        doc[role] = {"name": entry["name"], **{k: v for k, v in defaults.items()}, **{k: v for k, v in entry.items() if k != "name"}}
    with registry.attributed("truncator", spec.truncator.name):
        resolved = parts.truncator.resolved(p)
        if not isinstance(resolved, Mapping):
            raise BadPartResult(parts.truncator, f"resolved(p) must return a table of parameters; got {type(resolved).__name__}")
        doc["truncator"].update(resolved)
    for role in PART_ROLES:  # the record must be JSON: a set becomes a sorted list; what JSON cannot hold names the part
        if doc.get(role) is not None:
            with registry.attributed(role, doc[role]["name"]):
                doc[role] = recorded_parameters(doc[role])
    return doc


def recorded_parameters(entry: dict[str, Any]) -> dict[str, Any]:
    """A part's parameters as a result records them (:func:`spcakit.output.json_values.json_value`: tuples and sets become
    lists, NumPy numbers Python's); a value JSON cannot hold, or a non-finite number, raises a ``ValueError``
    naming the parameter."""

    def refuse(value: float) -> None:
        raise ValueError(f"a parameter is {value!r}, which JSON cannot hold")

    try:
        return json_value(entry, refuse)  # type: ignore[no-any-return]
    except NotJsonError as exc:
        raise ValueError(f"the parameter {exc.where.lstrip('.')} is a {type(exc.value).__name__}, which a "
                         "result's JSON record cannot hold; a parameter is a number, string, boolean, list or table") from None


def fit(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int | None = None,
    *,
    n_components: int | None = None,
    k: int | Sequence[int] | None = None,
    truncator: str | None = None,
    lam: float | None = None,
    deflator: str | None = None,
    stopper: str | PartRef | Mapping[str, Any] | None = None,
    refiner: str | PartRef | Mapping[str, Any] | None = None,
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_step: StepCallback | None = None,
    metrics: Sequence[str] | None = None,
    bound: str = "fast",
    nonnegative: bool = False,
    constraint: str | None = None,
    sample_weight: Any = None,
    missing: str = "auto",
    order: str = "variance",
    duplicate_names: str | None = None,
    registry: Registry | None = None,
    **params: Any,
) -> Result:
    """Fit a sparse PCA method and return its loadings and metrics.

    Parameters
    ----------
    data
        A data matrix (``n x p``; dense, ``scipy.sparse`` - never densified - or a ``dask.array.Array``, read in
        chunks), a :class:`~spcakit.inputs.dense.Covariance`, a covariance operator, a
        :class:`~spcakit.inputs.problem.Problem`, or a source: a path (CSV, ``.npy``/``.npz``, ``.mtx``, Zarr) or
        ``builtin:NAME``.
    method
        A registered method name (``spcakit methods``) or a spec from :func:`compose`; by default ``auto`` (TPower,
        plain and restarted, greedy and SPCArt at the same ``k``, each refined by swaps, the largest CPEV kept).
    r, n_components
        Number of loadings (components), 2 by default: ``n_components`` is the same, as scikit-learn names it (give one).
    k
        The number of nonzero variables per loading, for every method that counts them (an integer in
        :math:`[1, p]`, or a list with one per loading): :func:`~spcakit.workflows.configure.set_k` translates it
        into each method's parts; a method that cannot express it refuses it, naming those that can. Without it,
        a method whose paper sets its own sparsity keeps it, and the others get
        :func:`~spcakit.workflows.configure.default_k`, :math:`\\lceil\\sqrt p\\rceil` (recorded as
        ``Result.spec["default_k"]``). A ``k`` above the number of columns that vary is lowered to it, with a warning.
    truncator, lam, deflator, stopper, refiner
        Replace the method's truncation and its λ, its deflation, its stopping rule (a name or a part table,
        e.g. ``{"name": "max-iterations", "n": 50}``), or refine the loadings with a refiner (``"none"``: skip the
        method's; a refiner's report is stored in the metrics as ``"refiner_" + name``).
    seed
        Seed of the random generator given to the parts (``None``: drawn, then recorded as ``Result.seed``).
    covariance, center, standardize, feature_names, columns, drop, sample_weight, missing, duplicate_names
        How the data are read, as every entry point reads them: see :class:`~spcakit.inputs.options.InputOptions`
        (a covariance input, centring, the correlation scale, names, the columns kept, observation weights,
        missing values, imputed by EM by default, and repeated names: ``duplicate_names="rename"`` (the default)
        makes them unique, ``"error"`` refuses them).
    on_step
        Called after every update step as ``on_step(component, n_components, iteration)``: for progress bars and
        logging (:data:`spcakit.core.protocols.StepCallback`; long searches also report through
        :mod:`spcakit.output.progress` instead).
    metrics
        The metrics to report (names, or ``"all"``); by default the method's own set.
    bound
        The relaxation of the metrics ``bound`` and ``gap`` (:func:`spcakit.analysis.certificate.certify`):
        ``"fast"`` (eigenvalue, diagonal and Gershgorin bounds, and up to 64 variables a branch and bound of up to 256 nodes from
        the first loading), ``"threshold"`` (those and the threshold bound, much tighter on many weakly correlated
        variables, slower) or ``"certify"`` (the branch and bound run to its end for the first loading: its optimum,
        up to 8000 variables).
    nonnegative
        Keep every loading non-negative, as R's nsprcomp does with ``nneg = TRUE``
        (:func:`~spcakit.workflows.configure.with_nonnegative`; a method without a truncation step refuses it).
    constraint
        Non-redundant components (:func:`~spcakit.workflows.configure.with_constraint`): ``"orthogonal"``
        (:math:`u_t^\\top u_s = 0`) or ``"uncorrelated"`` scores (:math:`u_t^\\top C u_s = 0`), to rounding, at the
        same cardinalities; ``None`` (default): the method's loadings as they come, which may overlap. The metrics
        ``orthogonality_violation`` and ``correlation_violation`` say how redundant any result is, and under a
        constraint ``bound`` and ``gap`` are for loadings under it (:func:`spcakit.analysis.certificate.certify`).
    order
        The order of the loadings: ``"variance"`` (default), by the variance each adds, the first the loading of
        largest variance and each next the one that adds most to the span of those before it, as PCA orders its
        components (:func:`~spcakit.analysis.metrics.variance_order`); or ``"method"``, the order the method found
        them in (a deflation method's, the one a paper's tables list). A ``k`` that lists different cardinalities
        keeps the order of the list (the ``i``-th loading has the ``i``-th cardinality).
    registry
        The registry to look names up in (default: the plugins' registry).
    **params
        Part parameters, ``name=value`` or ``role.name=value`` (``**{"stopper.tol": 1e-4}``).

    Returns
    -------
    Result
        Loadings by variable name, metrics, iterations, the stopping reason, time, and what makes the run
        repeatable: the seed, the spcakit version and the input's record. A constant column gets a zero loading
        in every component (with a :class:`~spcakit.core.errors.ConstantColumnWarning`): the method runs on the
        columns that vary (:attr:`~spcakit.inputs.problem.Problem.varying`).

    Examples
    --------
    >>> result = spcakit.fit("builtin:pitprops", "spcart", r=6, k=4)  # doctest: +SKIP
    >>> result.components(digits=3)[0]                                 # doctest: +SKIP
    """
    inputs = InputOptions(covariance=covariance, center=center, standardize=standardize, feature_names=feature_names,
                          columns=columns, drop=drop, sample_weight=sample_weight, missing=missing,
                          duplicate_names=duplicate_names)  # fmt: skip
    r = count_of_components(r, n_components)
    check_arguments(feature_names=feature_names, columns=columns, drop=drop, on_step=on_step, center=center,
                    standardize=standardize, covariance=covariance, r=r, registry=registry)  # fmt: skip
    registry = registry or get_registry()
    requested = requested_spec(method, registry)
    if not isinstance(nonnegative, (bool, np.bool_)):
        raise InvalidParameterError(f"nonnegative must be True or False; got {nonnegative!r}")
    constraint = check_constraint(constraint)
    order = check_order(order)
    if order == "variance" and _per_loading(k):  # the i-th loading has the i-th cardinality the user listed
        order = "method"
    choices = {"truncator": truncator, "lam": lam, "deflator": deflator, "stopper": stopper, "refiner": refiner,
               "params": params, "nonnegative": bool(nonnegative), "constraint": constraint}  # fmt: skip
    try:
        spec = configure(requested, registry=registry, k=k, **choices)
    except InvalidParameterError as exc:
        raise _with_suggestion(exc, params) from None
    check_driver(spec, registry)
    chosen_metrics = select_metrics(registry, metrics, requested.name)
    bound = check_relaxation(bound)
    seed = check_seed(seed)
    if seed is None:  # drawn from the operating system's entropy, and recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().generate_state(1)[0])

    opened = open_input(data, inputs)  # the problem; or, with missing values, the data for the EM
    if opened.problem is None:
        return _fit_missing(opened.incomplete, method, r, inputs, k=k, truncator=truncator, lam=lam, deflator=deflator,
                            stopper=stopper, refiner=refiner, seed=seed, on_step=on_step, metrics=metrics, bound=bound,
                            nonnegative=nonnegative, constraint=constraint, order=order, registry=registry,
                            **params)  # fmt: skip
    problem = opened.problem
    r = check_r(r, problem)
    check_k(k, r)
    check_relaxation(bound, problem.p)
    fitted, spec, notes = _on_varying_columns(problem, requested, spec, k, choices, registry)
    for note in notes:
        warn(note, ConstantColumnWarning, stacklevel=2)
    default = None
    if k is None:  # a method that needs k and got none: the default cardinality
        spec, default = with_default_k(spec, fitted.p, r, registry)

    parts = _built_parts(spec, registry, fitted, problem)
    driver = registry.build("driver", spec.driver)
    start = time.perf_counter()
    run_on, scale = rescaled(fitted)  # C / max C_ii where that is extreme: the same loadings, no overflow
    outcome, loadings, report = run_parts(driver, run_on, r, parts, seed, on_step, registry)
    seconds = time.perf_counter() - start
    if scale != 1.0:
        notes = [*notes,
                 f"the covariance's largest variance ({scale:.3g}) is outside {SCALE_RANGE[0]:g} to {SCALE_RANGE[1]:g}: "
                 "the method ran on the covariance divided by it, which gives the same loadings without overflow; the "
                 "metrics are of the covariance as given, the objective history and the stopping reasons' values of the "
                 "divided one"]
    ran = (outcome.stopping_reasons, outcome.iterations, outcome.objective_history)
    del outcome  # its loadings are not held beside the sign-fixed ones
    return _result(problem, fitted, spec, parts, registry, loadings, report, ran, notes=notes, seconds=seconds,
                   default=default, bound=bound, metrics=chosen_metrics, seed=seed, scale=scale, order=order)  # fmt: skip


#: The orders :func:`fit` can return the loadings in.
ORDERS = ("variance", "method")


def _per_loading(k: Any) -> bool:
    """Whether ``k`` lists cardinalities that differ from one loading to the next."""
    if k is None or isinstance(k, (int, np.integer, str)):
        return False
    try:
        return len({int(v) for v in k}) > 1
    except (TypeError, ValueError):
        return False


def check_order(order: Any) -> str:
    if order not in ORDERS:
        raise InvalidParameterError(
            f"order must be 'variance' (the loadings by the variance each adds, as PCA orders them) or 'method' (the "
            f"order the method found them in); got {order!r}"
        )
    return str(order)


#: Names users bring from other libraries for :func:`fit`'s arguments (scanpy's ``n_comps``, scikit-learn's
#: ``random_state``): an unknown keyword close to one of these or to an argument gets a did-you-mean.
FOREIGN_NAMES = {"n_comps": "n_components", "random_state": "seed", "n_nonzero": "k", "cardinality": "k"}


def count_of_components(r: int | None, n_components: int | None, default: int = 2) -> int:
    """The number of loadings from ``r`` or its alias ``n_components`` (``default`` when neither is given; both given:
    refused unless equal). :func:`fit`, :func:`~spcakit.path`, :func:`~spcakit.target_k` and
    :func:`~spcakit.cross_validate` take either."""
    if n_components is None:
        return default if r is None else r
    if r is not None and r != n_components:
        raise InvalidParameterError(f"r={r!r} and n_components={n_components!r} name the same number of loadings; "
                                    "give one of them")
    return n_components


def _with_suggestion(exc: InvalidParameterError, params: Mapping[str, Any]) -> InvalidParameterError:
    """``exc`` (a keyword no part takes), preceded by a did-you-mean when one of ``params`` is another library's name
    for an argument of :func:`fit` or close to one (:data:`FOREIGN_NAMES`)."""
    import difflib  # noqa: PLC0415
    import inspect  # noqa: PLC0415

    arguments = [name for name in inspect.signature(fit).parameters if name not in ("data", "params")]
    for key in params:
        suggestion = FOREIGN_NAMES.get(key) or next(iter(difflib.get_close_matches(key, arguments, n=1, cutoff=0.75)), None)
        if suggestion is not None and suggestion != key:
            return InvalidParameterError(f"spcakit.fit has no argument {key!r}: did you mean {suggestion}=? ({exc})")
    return exc


def _check_within_rank(problem: Problem, loadings: np.ndarray) -> LoadingSpan | None:
    r"""Refuse loadings beyond the covariance's numerical rank, whatever the method (the PCA start refuses them
    before it runs): where a later loading adds no more variance to the earlier ones than rounding can produce
    (:func:`~spcakit.numerics.linalg.rank_tolerance` of :math:`\operatorname{tr} C`), the leading ``r`` eigenvalues
    say whether ``r`` is above the rank. A loading that adds nothing below the rank is the method's answer, kept.
    Returns the loadings' span (one product of :math:`C` with them, on their nonzero rows), which the metrics share."""
    r = loadings.shape[1]
    op = problem.covariance
    if r < 2:
        return None
    span = loading_span(loadings, op)
    added = additional_variances(loadings, op, span)
    if min(added[1:]) > rank_tolerance(op.trace(), problem.n_samples, problem.p):
        return span
    refuse_beyond_rank(r, op.top_eigenvalues(r), problem.n_samples, problem.p)
    return span


def _on_varying_columns(
    problem: Problem, requested: MethodSpec, spec: MethodSpec, k: Any, choices: dict[str, Any], registry: Registry
) -> tuple[Problem, MethodSpec, list[str]]:
    """The problem the method runs on (the columns that vary: constant ones get zero loadings), the spec with
    ``k`` lowered to their number when it was above, and the notes that say so."""
    fitted = problem.varying
    notes: list[str] = []
    if fitted is not problem:
        notes.append(constant_columns_note(problem))
        lowered = lowered_k(k, fitted.p)
        if lowered is not None:
            notes.append(
                f"k={k_text(k)} is more than the {fitted.p} variables that vary (of {problem.p}); k={k_text(lowered)} "
                "was used: no loading can have more nonzeros than that"
            )
            spec = configure(requested, registry=registry, k=lowered, **choices)
    return fitted, spec, notes


def _result(
    problem: Problem, fitted: Problem, spec: MethodSpec, parts: Parts, registry: Registry, loadings: np.ndarray,
    report: dict[str, int | float], ran: tuple[Any, int, Any], *, notes: list[str], seconds: float, default: Any,
    bound: str, metrics: list[Any], seed: int, scale: float = 1.0, order: str = "variance",
) -> Result:
    """The result of a run: the loadings on every column with their signs fixed and in ``order``, the metrics, the
    warnings."""
    reasons, iterations, history = ran
    if fitted is not problem:  # zero rows for the constant columns
        embedded = np.zeros((problem.p, loadings.shape[1]))
        embedded[problem.varying_columns] = loadings
        loadings = embedded
    loadings = fix_signs(loadings)
    nonnegative = is_nonnegative(spec, registry)
    if nonnegative and np.any(loadings < 0):  # a part broke the sign constraint: never hand such loadings back
        mixed = BadPartResult(parts.truncator, "the loadings of a non-negative method have entries of both signs")
        raise part_failure(mixed, registry) from mixed
    constraint = constraint_of(spec)
    if constraint is not None:  # never hand back loadings that break the constraint they were asked for
        violated = redundancy(problem.covariance, loadings)[constraint]
        allowed = constraint_tolerance(constraint, loading_products(loadings, problem.covariance))
        if violated > allowed:
            broken = BadPartResult(parts.refiner if parts.refiner is not None else parts.updater,
                                   f"the loadings are not {constraint}: violation {violated:.3g} > {allowed:.3g}")
            raise part_failure(broken, registry) from broken
    # the method's own certificates, if any (proved on the covariance divided by ``scale``: see rescaled)
    proved = tuple(None if b is None else b * scale for b in (proved_bound(s, i) for i, s in enumerate(reasons)))
    alike = len(set(reasons)) == 1  # one reason for every component (before the later ones say what they certify)
    reasons = tuple(_certificate_scope(s, i) for i, s in enumerate(reasons))  # in the method's order
    span = _check_within_rank(problem, loadings)  # shared by the order and the metrics
    if order == "variance" and span is not None:
        permutation = variance_order(loading_products(loadings, problem.covariance, span), loadings.T @ loadings)
        if not np.array_equal(permutation, np.arange(loadings.shape[1])):  # a new span for the new order
            loadings, reasons, proved = _permuted(loadings, reasons, proved, permutation)
            span = loading_span(loadings, problem.covariance)
    reason = reasons[-1] if alike else "; ".join(f"component {i + 1}: {s}" for i, s in enumerate(reasons))
    metric_notes: list[str] = []  # a plugin metric left out or recorded as null: warned, and kept in the result
    computed = _with_report(compute_metrics(problem, loadings, metrics, bound=bound, issued=metric_notes, span=span,
                                            proved=proved if any(b is not None for b in proved) else None,
                                            constraint=constraint),
                            report, parts, registry)  # fmt: skip
    warnings = tuple(IssuedWarning(note) for note in (*notes, *metric_notes)) + tuple(
        f"{'' if len(reasons) == 1 else f'component {i + 1} '}stopped before converging ({s}): the result is not "
        f"converged; {s.advice}"
        for i, s in enumerate(reasons) if isinstance(s, CapReached)
    )
    return Result(
        method=spec.name,
        spec={**resolved_spec(spec, registry, parts, fitted.p), **({} if default is None else {"default_k": default}),
              "bound": bound, **({"nonnegative": True} if nonnegative else {}),
              **({"constraint": constraint} if constraint is not None else {})},
        loadings=loadings,
        feature_names=problem.feature_names,
        metrics=computed,
        iterations=iterations,
        stopping_reason=reason,
        objective_history=tuple(v for v in history if math.isfinite(v)),
        seconds=seconds,
        warnings=warnings,
        seed=seed,
        version=__version__,
        input=problem.input,
    )


#: Appended to the reason of a later loading with a certificate (:func:`_certificate_scope`).
DEFLATED_CERTIFICATE = " (for the covariance the earlier loadings left; the bound and gap metrics are for the loadings together)"


def _permuted(
    loadings: np.ndarray, reasons: tuple[str, ...], proved: tuple[float | None, ...], permutation: np.ndarray
) -> tuple[np.ndarray, tuple[str, ...], tuple[float | None, ...]]:
    """The loadings in the order ``permutation`` (:func:`~spcakit.analysis.order.variance_order`), with their stopping
    reasons; a bound a search proved at its first loading's cardinality is kept only where the loading now first has
    that cardinality (it bounds every loading of it)."""
    reordered = loadings[:, permutation]
    if len(reasons) == len(permutation):
        reasons = tuple(reasons[i] for i in permutation)
    if proved and proved[0] is not None:
        same = np.count_nonzero(reordered[:, 0]) == np.count_nonzero(loadings[:, 0])
        proved = (proved[0] if same else None, *(None for _ in proved[1:]))
    return reordered, reasons, proved


def _certificate_scope(reason: str, component: int) -> str:
    """``reason``, saying what a later loading's certificate (:func:`~spcakit.core.records.with_proved_bound`) is for:
    the covariance the earlier loadings left (under the method's deflation), where the ``bound`` and ``gap`` metrics
    (:func:`spcakit.analysis.certificate.cumulative_bounds`) are for the first ``t`` loadings together, so that
    "optimal" never reads as a claim about the metric beside it."""
    if getattr(reason, "proved_bound", None) is None or component == 0:
        return reason  # no certificate, or the first loading's (the metrics' own problem)
    if isinstance(reason, CapReached):  # keeps its advice and its class (the result warns that it did not finish)
        return CapReached(str(reason) + DEFLATED_CERTIFICATE, advice=reason.advice)
    return str(reason) + DEFLATED_CERTIFICATE


def _fit_missing(data: MissingData, method: Any, r: int, inputs: InputOptions, **options: Any) -> Result:
    """:func:`fit` on data with missing values: EM on the sparse low-rank model (:mod:`spcakit.workflows.imputation`)."""
    weights = inputs.sample_weight
    if weights is not None:  # refused before the EM's warnings, with the message the fit would give
        weights = check_weights(weights, data.matrix.shape[0], center=inputs.center)

    def fit_once(matrix: Any) -> Result:
        return fit(matrix, method, r, feature_names=data.names, center=inputs.center, standardize=inputs.standardize,
                   sample_weight=inputs.sample_weight, missing="error", **options)  # the columns chosen already

    imputed = impute_and_fit(data, fit_once, weights=weights, announce=inputs.missing == "auto", stacklevel=4)
    return imputed.result


def _built_parts(spec: MethodSpec, registry: Registry, fitted: Problem, problem: Problem) -> Parts:
    """:func:`build_parts` on the columns that vary; a refusal says how many of them there are."""
    try:
        return build_parts(spec, registry, fitted)
    except InvalidParameterError as exc:
        if fitted is problem:
            raise
        raise InvalidParameterError(
            f"{exc} (the method runs on the {fitted.p} of the {problem.p} variables that vary: "
            f"{left_out_text(problem)})"
        ) from None


def _with_report(
    computed: dict[str, Any], report: dict[str, int | float], parts: Parts, registry: Registry
) -> dict[str, Any]:
    """The metrics with the refiner's report added as ``refiner_NAME`` entries (never replacing a metric)."""
    for name, value in report.items():
        if REPORT_PREFIX + name in computed:  # a metric plugin registered that name: the report must not replace it
            clash = BadPartResult(parts.refiner, f"its report entry {name!r} would replace the metric {REPORT_PREFIX + name!r}")
            raise part_failure(clash, registry) from clash
        computed[REPORT_PREFIX + name] = value
    return computed


def default_support(problem: Problem, k: int, *, avoid: str | None = None) -> np.ndarray | None:
    """The support of the default method's loading on ``problem`` (``r = 1``, cardinality ``k``, no metrics): a start
    for a solver that must never do worse than the default (the ``exact`` search seeds itself with it). ``None`` when
    no plugin declares a default, when it is the method ``avoid`` (no recursion) or when it fails on these data
    (a :class:`~spcakit.core.errors.SpcakitError`: a start is optional). Its warnings are left out: the caller's run
    reports its own."""
    import warnings  # noqa: PLC0415

    registry = get_registry()
    spec = registry.default_method()
    if spec is None or spec.name == avoid:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fit(problem, spec, r=1, k=k, metrics=[], registry=registry)
    except SpcakitError:
        return None
    support = np.flatnonzero(result.loadings[:, 0])
    return support if 0 < support.size <= k else None
