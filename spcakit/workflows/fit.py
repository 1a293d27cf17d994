"""The Python API: :func:`fit` a method to data (a spec configured by :mod:`spcakit.core.composition`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any
from warnings import warn

import numpy as np

from spcakit.numerics import ties
from spcakit.output.files import NotJsonError, json_value
from spcakit.workflows.arguments import check_arguments
from spcakit.core.version import __version__
from spcakit.core.drivers import Parts, StepCallback
from spcakit.core.errors import (
    BadPartResult, ConstantColumnWarning, InvalidParameterError,
)  # fmt: skip
from spcakit.analysis.bounds import check_relaxation
from spcakit.analysis.metrics import compute_metrics, select_metrics
from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import Problem, constant_columns_note, left_out_text
from spcakit.inputs import read_missing
from spcakit.inputs.columns import name_list
from spcakit.inputs.weights import check_weights
from spcakit.workflows.imputation import check_missing, impute_and_fit, read_input
from spcakit.core.protocols import PART_ROLES, REPORT_PREFIX
from spcakit.core.run import build_parts, check_driver, part_failure, requested_spec, run_parts
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec, PartRef
from spcakit.core.records import CapReached, IssuedWarning, proved_bound
from spcakit.workflows.results import Result
from spcakit.workflows.configure import check_k, configure, is_nonnegative, k_text, lowered_k, with_default_k


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
    """A part's parameters as a result records them (:func:`spcakit.output.files.json_value`: tuples and sets become
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
    r: int = 2,
    *,
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
    sample_weight: Any = None,
    missing: str = "auto",
    registry: Registry | None = None,
    **params: Any,
) -> Result:
    """Fit a sparse PCA method and return its loadings and metrics.

    Parameters
    ----------
    data
        A data matrix (``n x p``, centred unless ``center=False``; a
        ``scipy.sparse`` one is centred implicitly, never densified: see
        :mod:`spcakit.inputs.sparse`; a ``dask.array.Array`` is read in chunks,
        never whole: see :mod:`spcakit.inputs.dask_arrays`), a
        :class:`~spcakit.inputs.dense.Covariance`, a covariance operator, or a
        :class:`~spcakit.inputs.problem.Problem`. Set ``covariance=True`` to read a
        plain array as a covariance matrix.
    method
        A registered method name (``spcakit methods``) or a spec from
        :func:`compose`; by default the method a plugin marked
        ``fit_default = true`` (with the built-in plugins, ``auto``: TPower,
        plain and restarted, greedy and SPCArt at the same ``k``, each refined by swaps, the
        largest CPEV kept), else the block driver's default composition.
    r
        Number of loadings.
    k
        The sparsity of every method in one knob: the number of nonzero
        variables per loading, an integer in :math:`[1, p]` or (for the
        methods that take it) a list with one per loading. Each method
        translates it (:func:`set_k`): SPCArt, rSVD-GP(B), ST, TPower and
        SPCA-SP keep the ``k`` largest entries (truncation by sparsity,
        λ = p − k zeros), ``greedy``/``exhaustive`` solve for cardinality
        ``k``, FSPCA shares ``k`` variables between all loadings, the
        encoders use ``k`` variables per feature. A method whose truncation
        cannot express a cardinality (GPower's penalties, PCA) refuses it,
        naming the methods that take it. Without ``k`` (and without ``lam``
        or a part parameter that sets the sparsity), a method whose paper
        sets a sparsity of its own keeps it (SPCArt, rSVD-GP(B), ST, SPCA-SP:
        hard thresholding at :math:`1/\\sqrt p`), and every other method
        (TPower, ``greedy``, ``exhaustive``, FSPCA, the encoders) gets
        :func:`default_k`, :math:`\\lceil\\sqrt p\\rceil` (at least ``r``),
        recorded in ``Result.spec["default_k"]``. When some columns are constant, a
        ``k`` above the number :math:`p'` of columns that vary is lowered to
        :math:`p'` with a :class:`~spcakit.core.errors.ConstantColumnWarning`
        (:func:`lowered_k` says why it is not refused).
    truncator, lam
        Replace the method's truncation and its parameter λ: a threshold for
        ``hard``/``soft`` (default :math:`1/\\sqrt p`), a number of zeros per
        loading for ``sparsity``, a fraction of energy for ``energy``
        (default 0.15).
    deflator
        Replace the deflation of a deflation-driver method.
    stopper
        Replace the stopping rule (a name or a part table, e.g.
        ``{"name": "max-iterations", "n": 50}``).
    refiner
        Refine the finished loadings with this part (``"none"``: skip the
        method's refiner). A refiner that returns a
        :class:`~spcakit.core.protocols.Refined` record has its report stored in
        the metrics as ``"refiner_" + name`` (``swap``: the CPEV before and
        after, the number of swaps and of sweeps).
    seed
        Seed of the random generator given to the parts: 0 by default, so
        that a run is reproducible; ``None`` draws one from the operating
        system. The seed used is recorded as ``Result.seed``.
    covariance
        Read a plain array (or DataFrame) as a covariance matrix.
    center
        Subtract the column means of a data matrix (``False``: the
        covariance is :math:`A^\\top A/n` of the data as given).
    standardize
        Work on the correlation scale: divide each data column by its
        standard deviation (``n - 1`` in the denominator, as the covariance;
        the root mean square when ``center=False``), or turn a covariance
        into its correlation matrix. The result equals the method's result
        on the data's correlation matrix. Use it when the variables have
        different units or scales. A constant column is divided by 1 (its
        recorded scale), not by zero: it stays at zero and gets zero loadings.
    feature_names
        One name per variable (instead of a DataFrame's or a file's names).
    sample_weight
        Observation weights, one non-negative number per row of a data
        matrix, as frequency weights: integer weights give exactly the result
        of the data with each row repeated that many times (0 leaves a row
        out). The mean is :math:`\\mu = \\sum_i w_i a_i / W`,
        :math:`W = \\sum_i w_i`, and the covariance
        :math:`\\sum_i w_i (a_i - \\mu)(a_i - \\mu)^\\top / (W - 1)`;
        ``standardize`` uses the weighted standard deviations. Scaling all
        weights by a constant changes no loading nor any relative metric
        (CPEV), only the variances through :math:`W - 1`. Taken for dense,
        ``scipy.sparse`` and Dask data; refused for a covariance input;
        ``result.input.weights`` records their count, sum, zeros and hash.
    columns, drop
        Keep only the named columns (in that order) / remove the named ones,
        e.g. an ID or label column; a DataFrame's non-numeric columns must
        be removed so. Misspelt names are refused with the closest ones.
    on_step
        Called after every update step as ``on_step(component, n_components,
        iteration)``: the component being found and how many there are (0 and
        1 for a block method, which finds all at once), and the step just done - for
        progress bars and logging (:data:`spcakit.core.protocols.StepCallback`).
        Work inside one step (the ``exact`` method's search) reports through
        :mod:`spcakit.output.progress` instead.
    metrics
        The names of the metrics to compute (``spcakit metrics`` and
        ``spcakit.get_registry().metrics()`` list them), ``"all"`` for every
        registered one, or ``None`` (the default) for the method's default set
        (:func:`spcakit.analysis.metrics.select_metrics`): NZ, pattern, CPEV,
        orthogonality, additional variance, bound and gap for every method,
        and a paper's own criteria for that paper's methods (SPCArt's SP, STD,
        worst SP, EV and NOR for the ``spcart`` and ``subspace`` plugins' methods,
        the cumulative variance for ``deflation``'s, the encoders' losses for
        the encoders, FSPCA's objective and NEV for FSPCA). Every default
        metric is computed from products with the covariance, never from a
        copy of the data.
    bound
        The relaxation of the metrics ``bound`` and ``gap`` (per loading, an upper bound on the variance any
        loading as sparse can explain on what the earlier ones leave; :func:`spcakit.analysis.bounds.component_bounds`):
        ``"fast"`` (the default: eigenvalue, diagonal and Gershgorin bounds, milliseconds at :math:`p = 1000`)
        or ``"threshold"`` (those and the threshold bound of each deflated covariance, the least kept: much
        tighter on covariances of many weakly correlated variables, such as gene expression, at a fraction of a
        second to seconds per loading at :math:`p = 1000`; up to :data:`spcakit.analysis.bounds.THRESHOLD_LIMIT`
        variables). Recorded as ``Result.spec["bound"]``.
    nonnegative
        Keep every loading non-negative, as R's nsprcomp does with ``nneg = TRUE``: each truncation step
        keeps the ``k`` largest *positive* entries of the update, on the side (:math:`z` or :math:`-z`)
        whose kept part aligns better with it (:mod:`spcakit.parts.nonnegative`). Every method that
        truncates takes it (its truncation is wrapped in the ``nonnegative`` truncator), and so does
        ``auto`` (its members that take it, without swaps); a method without a truncation step
        (greedy, exhaustive, PCA, FSPCA, the encoders) or with a refiner that re-fits the loadings
        refuses it, naming the methods that take it
        (:func:`~spcakit.workflows.configure.with_nonnegative`). Recorded as ``Result.spec["nonnegative"]``.
    missing
        What to do with missing values (NaN entries, stored NaN of ``scipy.sparse`` data, empty or ``NA``
        cells of a CSV file): ``"auto"`` (the default) imputes them by EM on the sparse low-rank model
        (:mod:`spcakit.workflows.imputation`: the method is fitted to the data completed by the loadings'
        reconstruction until the imputed values settle) with a :class:`~spcakit.core.errors.MissingValueWarning`
        saying the fraction missing; ``"em"`` does the same without the warning; ``"error"`` refuses them
        (:class:`~spcakit.core.errors.MissingValuesError`). Data without NaN are fitted exactly as without
        this option. ``result.input.missing`` records the fraction, the EM iterations and whether they
        converged. Infinite entries, and NaN in a covariance or a Dask array, are refused always.
    registry
        The registry to look names up in (default: the plugins' registry).
    **params
        Part parameters, ``name=value`` or ``role.name=value`` (write the
        latter as ``**{"stopper.tol": 1e-4}``).

    Returns
    -------
    Result
        Frozen record with loadings, metrics, iterations, stopping reason,
        objective history, time, and what makes the run repeatable: the
        seed, the spcakit version and the input's record (shape, content
        hash, centring, standardisation).

    Notes
    -----
    **Constant columns.** A column with zero variance (see
    :mod:`spcakit.inputs.problem`) gets a zero loading in every component, and a
    :class:`~spcakit.core.errors.ConstantColumnWarning` names it (the same text is
    in ``Result.warnings``). The method runs on the columns that vary alone
    (:attr:`~spcakit.inputs.problem.Problem.varying`): its result there is the
    method's result on the data without the constant columns, and parameters
    that depend on the number of variables (the default threshold
    :math:`1/\\sqrt p`, λ as a number of zeros) count those :math:`p'`. The
    loadings are then re-embedded into all ``p`` rows and the metrics taken
    on all the columns: CPEV is unchanged (constant columns add no variance),
    the sparsities count the zeros of the constant columns too. ``r`` must be
    at most :math:`p'`; data whose columns are all constant are refused.
    """
    check_arguments(feature_names=feature_names, columns=columns, drop=drop, on_step=on_step, center=center,
                    standardize=standardize, covariance=covariance, r=r, registry=registry)  # fmt: skip
    registry = registry or get_registry()
    requested = requested_spec(method, registry)
    if not isinstance(nonnegative, (bool, np.bool_)):
        raise InvalidParameterError(f"nonnegative must be True or False; got {nonnegative!r}")
    choices = {"truncator": truncator, "lam": lam, "deflator": deflator, "stopper": stopper, "refiner": refiner,
               "params": params, "nonnegative": bool(nonnegative)}  # fmt: skip
    spec = configure(requested, registry=registry, k=k, **choices)
    check_driver(spec, registry)
    chosen_metrics = select_metrics(registry, metrics, requested.name)
    bound = check_relaxation(bound)
    seed = check_seed(seed)
    if seed is None:  # drawn from the operating system's entropy, and recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    if not isinstance(standardize, (bool, np.bool_)):
        raise InvalidParameterError(f"standardize must be True or False; got {standardize!r}")

    # the problem: the data read once, the columns that vary, k checked against them
    missing = check_missing(missing)
    read = read_input(data, missing, covariance=covariance, center=center, standardize=bool(standardize),
                      feature_names=feature_names, columns=columns, drop=drop, weights=sample_weight)  # fmt: skip
    problem = read.problem
    if problem is None:  # missing values, imputed by EM
        return _fit_missing(read.data, method, r, feature_names=read.feature_names, columns=columns, drop=drop, announce=missing == "auto",
                            k=k, truncator=truncator, lam=lam, deflator=deflator, stopper=stopper, refiner=refiner,
                            seed=seed, center=center, standardize=standardize, on_step=on_step, metrics=metrics,
                            bound=bound, nonnegative=nonnegative, sample_weight=sample_weight, registry=registry,
                            **params)  # fmt: skip
    r = check_r(r, problem)
    check_k(k, r)
    check_relaxation(bound, problem.p)
    fitted = problem.varying  # the columns that vary: the method runs on them alone (constant ones get zero loadings)
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
        for note in notes:
            warn(note, ConstantColumnWarning, stacklevel=2)
    default = None
    if k is None:  # a method that needs k and got none: the default cardinality
        spec, default = with_default_k(spec, fitted.p, r, registry)

    # the parts, the driver and the refiner
    parts = _built_parts(spec, registry, fitted, problem)
    driver = registry.build("driver", spec.driver)
    start = time.perf_counter()
    outcome, loadings, report = run_parts(driver, fitted, r, parts, seed, on_step, registry)
    seconds = time.perf_counter() - start
    reasons, iterations, history = outcome.stopping_reasons, outcome.iterations, outcome.objective_history
    del outcome  # its loadings are not held beside the sign-fixed ones

    # the result: loadings on every column, signs fixed, metrics
    if fitted is not problem:  # zero rows for the constant columns
        embedded = np.zeros((problem.p, loadings.shape[1]))
        embedded[problem.varying_columns] = loadings
        loadings = embedded
    loadings = fix_signs(loadings)
    nonnegative = is_nonnegative(spec, registry)
    if nonnegative and np.any(loadings < 0):  # a part broke the sign constraint: never hand such loadings back
        mixed = BadPartResult(parts.truncator, "the loadings of a non-negative method have entries of both signs")
        raise part_failure(mixed, registry) from mixed
    proved = tuple(proved_bound(s, i) for i, s in enumerate(reasons))  # the method's own certificates, if any
    reasons = tuple(_certificate_scope(s, i) for i, s in enumerate(reasons))
    reason = reasons[0] if len(set(reasons)) == 1 else "; ".join(f"component {i + 1}: {s}" for i, s in enumerate(reasons))
    metric_notes: list[str] = []  # a plugin metric left out or recorded as null: warned, and kept in the result
    metrics = _with_report(compute_metrics(problem, loadings, chosen_metrics, bound=bound, issued=metric_notes,
                                           proved=proved if any(b is not None for b in proved) else None),
                           report, parts, registry)  # fmt: skip
    warnings = tuple(IssuedWarning(note) for note in (*notes, *metric_notes)) + tuple(
        f"{'' if len(reasons) == 1 else f'component {i + 1} '}stopped before converging ({s}): the result is not "
        f"converged; {s.advice}"
        for i, s in enumerate(reasons) if isinstance(s, CapReached)
    )
    return Result(
        method=spec.name,
        spec={**resolved_spec(spec, registry, parts, fitted.p), **({} if default is None else {"default_k": default}),
              "bound": bound, **({"nonnegative": True} if nonnegative else {})},
        loadings=loadings,
        feature_names=problem.feature_names,
        metrics=metrics,
        iterations=iterations,
        stopping_reason=reason,
        objective_history=tuple(v for v in history if math.isfinite(v)),
        seconds=seconds,
        warnings=warnings,
        seed=seed,
        version=__version__,
        input=problem.input,
    )


#: Appended to the reason of a later loading whose certificate is for its deflated covariance (:func:`_certificate_scope`).
DEFLATED_CERTIFICATE = (" (for the covariance its deflator left, where the bound and gap metrics are for the covariance "
                        "with the earlier loadings' span projected out)")


def _certificate_scope(reason: str, component: int) -> str:
    """``reason``, saying what a later loading's certificate (:func:`~spcakit.core.records.with_proved_bound`) is for when it
    does not bound the ``bound`` metric's problem (:func:`spcakit.analysis.bounds.component_bounds`: the covariance with the
    earlier loadings' span projected out): the covariance the method's deflator left (``exact`` with any deflator
    but the generalized one, whose later loadings could otherwise read "optimal" beside a gap of 20 %)."""
    if getattr(reason, "proved_bound", None) is None or proved_bound(reason, component) is not None:
        return reason  # no certificate, or one of the metrics' problem
    if isinstance(reason, CapReached):  # keeps its advice and its class (the result warns that it did not finish)
        return CapReached(str(reason) + DEFLATED_CERTIFICATE, advice=reason.advice)
    return str(reason) + DEFLATED_CERTIFICATE


def _fit_missing(
    data: Any, method: Any, r: int, *, feature_names: Any, columns: Any, drop: Any, announce: bool, **options: Any,
) -> Result:
    """:func:`fit` on data with missing values: EM on the sparse low-rank model (:mod:`spcakit.workflows.imputation`)."""
    missing_data = read_missing(data, feature_names, name_list(columns, "columns"), name_list(drop, "drop"))
    weights = options.get("sample_weight")
    if weights is not None:  # refused before the EM's warnings, with the message the fit would give
        weights = check_weights(weights, missing_data.matrix.shape[0], center=options.get("center", True))

    def fit_once(matrix: Any) -> Result:
        return fit(matrix, method, r, feature_names=missing_data.names, missing="error", **options)

    imputed = impute_and_fit(missing_data, fit_once, weights=weights, announce=announce, stacklevel=4)
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
