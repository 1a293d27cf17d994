"""Frozen records threaded through the drivers and returned to users."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.errors import ZeroLoadingError, install_hint

#: The optional dependency that :meth:`Result.loadings_frame` and :meth:`Result.metrics_frame` need.
PANDAS_EXTRA = "pandas"
#: Components shown one by one in :meth:`Result.__repr__` (more are elided).
REPR_COMPONENTS = 10


def _arrays_equal(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


@attrs.frozen
class Carry:
    r"""What a run hands from one round of a driver to the next: entries by key.

    The initializer's ``prepare`` makes the first one; each deflator returns
    the next; the initializer and the updater of every round read it. A part
    keeps its entries under keys it documents, e.g. ``"constraint"`` for the
    orthonormal :math:`Q` of a generalized problem's :math:`B = I - QQ^\top`
    (:data:`CONSTRAINT`). It is immutable: :meth:`set` returns a new carry.
    """

    entries: tuple[tuple[str, Any], ...] = attrs.field(default=(), eq=False)

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.entries:
            if k == key:
                return v
        return default

    def set(self, key: str, value: Any) -> Carry:
        return Carry(tuple((k, v) for k, v in self.entries if k != key) + ((key, value),))

    def without(self, key: str) -> Carry:
        """This carry without ``key`` (itself when it has none)."""
        return Carry(tuple((k, v) for k, v in self.entries if k != key)) if key in self else self

    def __contains__(self, key: str) -> bool:
        return any(k == key for k, _ in self.entries)


#: Carry key of a generalized problem's constraint: the orthonormal ``p x t`` :math:`Q` of
#: :math:`B = I - QQ^\top`; a round then maximises :math:`x^\top C x` s.t. :math:`x^\top B x = 1`.
CONSTRAINT = "constraint"


#: Carry key the deflation driver sets for its deflator: ``(unit, product)``, the unit loading just found and
#: :math:`C` times it, when the loading's own run already made that product (:meth:`~spcakit.protocols.Updater.
#: loading_product`); absent otherwise. A deflator that needs :math:`Cx` takes it instead of another pass over the data.
LOADING_PRODUCT = "loading.product"


#: Carry key the block driver sets for its updater's ``init`` when the run's truncation keeps the ``k`` largest
#: magnitudes of each column (:meth:`~spcakit.protocols.Truncator.keeps`): ``k``. An updater may then compute
#: :math:`Z` exactly only where that choice looks (:mod:`spcakit.operators.screen`).
TRUNCATION_KEEPS = "truncation.keeps"


def known_product(carry: Carry, unit: np.ndarray, covariance: Any = None) -> np.ndarray | None:
    """The carry's :data:`LOADING_PRODUCT` for exactly this ``unit`` loading, else ``None``; ``None`` too when the
    ``covariance`` given is explicit (it takes its own product, :math:`O(p^2)`, so that its results do not change)."""
    if covariance is not None and covariance.explicit() is not None:
        return None
    known = carry.get(LOADING_PRODUCT)
    return known[1] if known is not None and _arrays_equal(known[0], unit) else None


def constraint_matmat(carry: Carry, v: np.ndarray) -> np.ndarray:
    """:math:`Bv` for the carry's constraint (``v`` itself when there is none)."""
    q = carry.get(CONSTRAINT)
    return v if q is None else v - q @ (q.T @ v)


def constraint_submatrix(carry: Carry, support: np.ndarray) -> np.ndarray:
    """:math:`B_{SS}` for the variables ``support`` (the identity when there is no constraint)."""
    eye = np.eye(len(support))
    q = carry.get(CONSTRAINT)
    if q is None:
        return eye
    qs = q[support]
    return eye - qs @ qs.T


def column_norms(x: np.ndarray) -> np.ndarray:
    """The Euclidean length of each column of ``x`` (``p x r``; a vector is one column), in one pass."""
    return np.sqrt(np.einsum("i...,i...->...", x, x))  # no p x r temporary


def nonzero_column_norms(x: np.ndarray) -> np.ndarray:
    """:func:`column_norms`, or :class:`~spcakit.errors.ZeroLoadingError` when a column is zero (it has no
    unit-length version)."""
    norms = column_norms(x)
    if np.any(norms == 0):
        raise ZeroLoadingError("a loading vector is entirely zero and cannot be normalised")
    return norms


def unit_columns(x: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """``x`` with each column scaled to unit Euclidean length, a new array in C order whatever ``x``'s layout;
    :class:`~spcakit.errors.ZeroLoadingError` for a zero column. ``norms``: the columns' lengths, when known."""
    lengths = nonzero_column_norms(x) if norms is None else norms
    return np.divide(x, lengths, out=np.empty(x.shape))


class CapReached(str):
    """A stopping reason that says the iterations hit a cap before their convergence test passed.

    A stopper returns it (instead of a plain ``str``) so that :func:`spcakit.fit`
    can warn that the result is not converged; it prints like any reason. ``advice`` says what would let
    the run finish (by default: a higher iteration cap or a looser tolerance).
    """

    advice = "raise the stopper's iteration cap or loosen its tolerance"

    def __new__(cls, reason: str, advice: str | None = None) -> CapReached:
        made = super().__new__(cls, reason)
        if advice is not None:
            made.advice = advice
        return made

    def __repr__(self) -> str:
        return f"CapReached({str(self)!r})"


class Proved(str):
    """A stopping reason that carries an upper bound the method proved for its component (the ``exact`` search's
    certificate); it prints like any reason. See :func:`with_proved_bound`."""


def with_proved_bound(reason: str, bound: float, *, given_earlier: bool) -> str:
    r"""``reason`` (a plain reason or a :class:`CapReached`) carrying ``bound``, an upper bound the method proved on
    :math:`\max x^\top C_t x / x^\top B x` over the loadings with its number of nonzeros, on the matrix its
    component was fitted to.

    ``given_earlier``: the method maximised the variance the loading adds to the earlier ones (Mackey's generalized
    deflation, :math:`C_t = (I - P)C(I - P)`, :math:`B = I - P`, :math:`P` the projection onto their span); the bound
    is then also one of the ``bound`` metric's problem (:func:`spcakit.bounds.component_bounds`), as it is for the
    first loading whatever the deflation. :func:`proved_bound` reads it back.
    """
    made: str = reason if isinstance(reason, CapReached) else Proved(reason)
    made.proved_bound = float(bound)  # type: ignore[attr-defined]
    made.given_earlier = bool(given_earlier)  # type: ignore[attr-defined]
    return made


def proved_bound(reason: str, component: int) -> float | None:
    """The bound ``reason`` carries (:func:`with_proved_bound`) when it bounds the ``bound`` metric's problem of
    loading ``component`` (0-based): the first loading's, or a later one's given the earlier ones; else ``None``."""
    bound = getattr(reason, "proved_bound", None)
    if bound is None or not (component == 0 or getattr(reason, "given_earlier", False)):
        return None
    return float(bound)


class IssuedWarning(str):
    """A message of :attr:`Result.warnings` that :func:`spcakit.fit` has already issued as a Python warning
    (a :class:`~spcakit.errors.ConstantColumnWarning`): code that turns a result's warnings into Python
    warnings (:class:`spcakit.SparsePCA`) skips it. It prints like any message."""

    def __repr__(self) -> str:
        return f"IssuedWarning({str(self)!r})"


@attrs.frozen(kw_only=True)
class IterState:
    """One iteration of the block loop.

    Attributes
    ----------
    iteration
        Number of completed update + truncation steps (0 before the first).
    x
        The current iterate as the truncation returned it (column lengths
        as the updater needs them).
    loadings
        ``x`` with unit-length columns: made from ``x`` when asked for
        (the drivers hold ``x`` alone between steps, one ``p x r`` array
        fewer), unless given to the constructor.
    relative_change
        :math:`\\|X^{(t)} - X^{(t-1)}\\|_F / \\sqrt{r}` of the unit loadings
        (``inf`` before the first step).
    objective_history
        The updater's objective, one value per completed step.
    updater_state
        What the updater carries from step to step (its ``init`` and
        ``propose`` return it; see :class:`~spcakit.protocols.Updater`).
    norms
        The lengths of ``x``'s columns when known (the step that made ``x`` measured them), else ``None``.
    """

    iteration: int
    x: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    _given_loadings: np.ndarray | None = attrs.field(default=None, alias="loadings", eq=False, repr=False)
    relative_change: float = float("inf")
    objective_history: tuple[float, ...] = ()
    updater_state: Any = attrs.field(default=None, eq=False)
    norms: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def loadings(self) -> np.ndarray:
        """``x`` with unit-length columns, in C order whatever ``x``'s layout (a new array each time, unless given to
        the constructor)."""
        if self._given_loadings is not None:
            return self._given_loadings
        return unit_columns(self.x, self.norms)

    def column_norms(self) -> np.ndarray:
        """The lengths of ``x``'s columns: :attr:`norms`, or measured."""
        return column_norms(self.x) if self.norms is None else self.norms


@attrs.frozen(kw_only=True)
class Outcome:
    """What a driver returns: loadings and how the iterations went."""

    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    iterations: int
    stopping_reasons: tuple[str, ...]
    objective_history: tuple[float, ...] = ()


@attrs.frozen(kw_only=True)
class MissingRecord:
    r"""What was missing in a run's data and how it was imputed (:mod:`spcakit.imputation`).

    Attributes
    ----------
    count
        Missing entries: NaN entries of a dense matrix, stored NaN entries of a
        ``scipy.sparse`` one, empty or ``NA`` cells of a CSV file.
    fraction
        ``count`` over the number of entries :math:`n p` of the data matrix.
    model
        ``"em"``: EM on the sparse low-rank model (iterative imputation by the
        loadings' least-squares reconstruction).
    iterations
        EM iterations, each a fit of the method to the completed data.
    converged
        Whether the imputed entries' change fell below ``tol`` within ``max_iter`` iterations.
    change
        The last relative change of the imputed entries (root mean square of the change over the column
        standard deviations of the observed values).
    tol, max_iter
        The EM's tolerance and iteration cap.
    empty_columns
        Names of the columns without any observed value (zero loadings).
    """

    count: int
    fraction: float
    model: str = "em"
    iterations: int = 0
    converged: bool = True
    change: float = 0.0
    tol: float = 0.0
    max_iter: int = 0
    empty_columns: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``input.missing`` object of the JSON output."""
        return {"count": int(self.count), "fraction": float(self.fraction), "model": self.model,
                "iterations": int(self.iterations), "converged": bool(self.converged), "change": float(self.change),
                "tol": float(self.tol), "max_iter": int(self.max_iter), "empty_columns": list(self.empty_columns)}


@attrs.frozen(kw_only=True)
class InputRecord:
    r"""What a run's input was and what was done to it before the method ran: the record of a result.

    Attributes
    ----------
    kind
        ``"data"`` (a data matrix), ``"covariance"`` (an explicit covariance
        or correlation matrix) or ``"operator"`` (a covariance operator given
        as such: nothing is known of its entries).
    shape
        The matrix's shape as the method saw it (``n x p`` for data, ``p x p``
        for a covariance), after columns were selected (``columns=``/``drop=``).
    sha256
        The content hash of that matrix (see
        :func:`spcakit.inputs.checks.content_sha256`): the SHA-256 of its shape
        and its values as float64; ``None`` for an operator, for a dask
        array, whose hash is not computed (see :mod:`spcakit.inputs.dask_arrays`),
        and for a dense matrix of more than
        :data:`spcakit.inputs.checks.HASH_LIMIT` bytes (see ``sha256_skipped``).
    center
        Whether the data columns were centred (``None`` for a covariance).
    standardize
        Whether the columns were scaled to unit variance (data) or the
        covariance turned into its correlation matrix.
    mean
        The column means :math:`\bar a_j` subtracted from the data (``None``
        when not centred, or for a covariance).
    scale
        The standard deviations :math:`s_j` each column (or variable) was
        divided by when standardising, else ``None``; 1 for a column with
        zero variance, which stays at zero (as scikit-learn's
        ``StandardScaler`` reports it).
    sha256_skipped
        Why ``sha256`` is ``None`` for a dense matrix: it takes more than
        :data:`spcakit.inputs.checks.HASH_LIMIT` bytes, so it was not hashed
        (:func:`spcakit.inputs.checks.content_sha256` hashes it); ``None`` when
        it was hashed, and for other inputs. A note for people: it takes no
        part in comparisons. The JSON output's ``input.sha256`` is then
        ``null`` and ``input.sha256_skipped`` carries this note (absent when
        the data were hashed).
    weights
        For data fitted with observation weights (``sample_weight=``,
        ``--weights``), a summary of them: ``count`` (one per row), ``sum``,
        ``zeros`` (rows left out) and ``sha256`` (of the weights as one float64
        column, as :func:`spcakit.inputs.checks.content_sha256`; ``None`` when
        the data were not hashed); ``None`` without weights. ``mean`` and
        ``scale`` are then the weighted ones.
    missing
        For data with missing values that were imputed (:mod:`spcakit.imputation`), a
        :class:`MissingRecord` (count and fraction missing, EM iterations, convergence); ``None`` for
        complete data. ``sha256`` is then the hash of the data as given (with their NaN), and ``mean`` and
        ``scale`` those of the completed data.
    """

    kind: str
    shape: tuple[int, ...]
    sha256: str | None = None
    center: bool | None = None
    standardize: bool = False
    mean: np.ndarray | None = attrs.field(default=None, eq=attrs.cmp_using(eq=_arrays_equal), repr=False)
    scale: np.ndarray | None = attrs.field(default=None, eq=attrs.cmp_using(eq=_arrays_equal), repr=False)
    sha256_skipped: str | None = attrs.field(default=None, eq=False, repr=False)
    weights: dict[str, Any] | None = attrs.field(default=None, repr=False)
    missing: MissingRecord | None = attrs.field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``input`` object of the JSON output (the mean and scale vectors are left out; ``sha256_skipped`` only
        when the hash was skipped)."""
        return {
            "kind": self.kind,
            "shape": [int(d) for d in self.shape],
            "center": self.center,
            "standardize": self.standardize,
            "sha256": self.sha256,
            **({"sha256_skipped": self.sha256_skipped} if self.sha256_skipped else {}),
            **({"weights": dict(self.weights)} if self.weights is not None else {}),
            **({"missing": self.missing.to_dict()} if self.missing is not None else {}),
        }


def import_pandas(what: str) -> Any:
    """pandas, imported here and only here; a clear :class:`ImportError` naming the extra when it is missing."""
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            f"{what} returns a pandas DataFrame, but pandas is not installed; install it with "
            f"{install_hint('pandas', PANDAS_EXTRA)}, or use the arrays (Result.loadings, "
            f"Result.metrics) instead ({exc})"
        ) from exc
    return pandas


def _elided(values: list[int]) -> str:
    """``[4, 2, 4]``, or the first and last few of a long list around ``...``."""
    if len(values) <= REPR_COMPONENTS:
        return str(values)
    head, tail = values[: REPR_COMPONENTS - 3], values[-2:]
    return "[" + ", ".join(map(str, head)) + ", ..., " + ", ".join(map(str, tail)) + "]"


@attrs.frozen(kw_only=True, repr=False)
class Result:
    """The result of :func:`spcakit.fit`.

    Attributes
    ----------
    method
        Name of the method spec that ran.
    spec
        The full composition that ran, as a plain dictionary.
    loadings
        ``p x r`` array, unit-length columns, sign fixed so that each
        column's largest-magnitude entry is positive.
    feature_names
        One name per row of ``loadings``.
    metrics
        Criteria of the papers (see :mod:`spcakit.metrics`).
    iterations
        Total number of update + truncation steps over all components.
    stopping_reason
        Why the iterations stopped (per component for deflation methods).
    objective_history
        The updater's objective at every step.
    seconds
        Wall-clock time of the driver, initialisation included.
    warnings
        What the user should know about the result, e.g. a component that
        stopped at its iteration cap before converging, or the columns with
        zero variance that got zero loadings (those are also issued as a
        :class:`~spcakit.errors.ConstantColumnWarning`).
    seed
        The seed of the run's random generator (drawn and recorded when
        :func:`spcakit.fit` was given ``seed=None``), so that the run can be
        repeated exactly.
    version
        The spcakit version that computed the result.
    input
        What the input was and what was done to it (an :class:`InputRecord`:
        kind, shape, content hash, centring, standardisation); ``None`` for
        a :class:`~spcakit.problem.Problem` built by hand.

    Notes
    -----
    ``repr(result)`` is a one-line summary (method, r, p, nonzeros per
    component, CPEV); :meth:`to_dict` is the whole record.
    """

    method: str
    spec: dict[str, Any]
    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=_arrays_equal))
    feature_names: tuple[str, ...]
    metrics: dict[str, Any]
    iterations: int
    stopping_reason: str
    objective_history: tuple[float, ...] = ()
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()
    seed: int | None = None
    version: str = ""
    input: InputRecord | None = None

    @property
    def r(self) -> int:
        return self.loadings.shape[1]

    @property
    def p(self) -> int:
        return self.loadings.shape[0]

    @property
    def component_names(self) -> tuple[str, ...]:
        """``("PC1", "PC2", ...)``: the columns of :meth:`loadings_frame`, one per loading."""
        return tuple(f"PC{j + 1}" for j in range(self.r))

    def __repr__(self) -> str:
        nonzeros = [int(count) for count in np.count_nonzero(self.loadings, axis=0)]
        fields = [f"method={self.method!r}", f"r={self.r}", f"p={self.p}", f"nz={_elided(nonzeros)}"]
        cpev = self.metrics.get("cpev")
        if isinstance(cpev, (int, float)) and not isinstance(cpev, bool):
            fields.append(f"cpev={cpev:.4f}")
        if self.warnings:
            fields.append(f"warnings={len(self.warnings)}")
        return f"Result({', '.join(fields)})"

    def loadings_frame(self) -> Any:
        """The loadings as a pandas DataFrame: one row per variable (``feature_names``), one column per
        component (:attr:`component_names`).

        Needs pandas (``pip install -e '.[pandas]'``); raises :class:`ImportError` saying so without it.
        The frame holds a copy: changing it leaves the result unchanged.
        """
        pandas = import_pandas("Result.loadings_frame()")
        return pandas.DataFrame(
            np.array(self.loadings, dtype=float, copy=True),
            index=pandas.Index(list(self.feature_names), name="variable"),
            columns=pandas.Index(list(self.component_names), name="component"),
        )

    def plot_loadings(self, **options: Any) -> Any:
        """A heat-map of the loadings by variable name (:func:`spcakit.plotting.plot_loadings`; needs matplotlib)."""
        from spcakit import plotting

        return plotting.plot_loadings(self, **options)

    def plot_variance(self, **options: Any) -> Any:
        """Bars of each component's additional variance (:func:`spcakit.plotting.plot_variance`; needs matplotlib)."""
        from spcakit import plotting

        return plotting.plot_variance(self, **options)

    def metrics_frame(self) -> Any:
        """The metrics as a pandas DataFrame: one row per component and a last row ``"all"``.

        A metric with one value per component (a list of length ``r``: ``pattern``,
        ``additional_variance``, ``cumulative_variance``, ...) fills the component
        rows; a metric of the whole result (``nz``, ``sp``, ``cpev``, ...) fills the
        ``"all"`` row; the other cells are missing (NaN). Columns are in the order of
        :attr:`metrics`; metrics that are neither (lists of another length, text)
        are left out. Counts (``pattern``, ``nz``) are pandas' nullable ``Int64``,
        the rest floats. Needs pandas, as :meth:`loadings_frame`.
        """
        pandas = import_pandas("Result.metrics_frame()")
        index = pandas.Index([*self.component_names, "all"], name="component")
        columns: dict[str, Any] = {}
        for key, value in self.metrics.items():
            if isinstance(value, (list, tuple)) and len(value) == self.r and all(_is_number(v) for v in value):
                cells = [*value, None]
            elif _is_number(value):
                cells = [None] * self.r + [value]
            else:
                continue
            counts = all(isinstance(v, (int, np.integer)) for v in cells if v is not None)
            columns[key] = pandas.array(cells, dtype="Int64" if counts else "float64")
        return pandas.DataFrame(columns, index=index)

    def components(self, digits: int | None = None) -> list[list[tuple[str, float]]]:
        """Per loading, its nonzero variables as ``(name, weight)``, largest magnitude first.

        With ``digits``, magnitudes equal when rounded to that many decimals
        count as equal and keep the variables' order, so that what is printed
        with ``digits`` decimals is ordered the same on every machine
        (rounding noise in the last bits never reorders equal weights).
        """
        out = []
        for j in range(self.r):
            col = self.loadings[:, j]
            idx = np.nonzero(col)[0]
            magnitude = np.abs(col[idx]) if digits is None else np.round(np.abs(col[idx]), digits)
            idx = idx[np.argsort(-magnitude, kind="stable")]
            out.append([(self.feature_names[i], float(col[i])) for i in idx])
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit run --json``."""
        return {
            "method": self.method,
            "spec": self.spec,
            "r": self.r,
            "p": self.p,
            "feature_names": list(self.feature_names),
            "loadings": self.loadings.tolist(),
            "metrics": self.metrics,
            "iterations": self.iterations,
            "stopping_reason": self.stopping_reason,
            "objective_history": list(self.objective_history),
            "seconds": self.seconds,
            "warnings": list(self.warnings),
            "spcakit_version": self.version,
            "seed": self.seed,
            "input": None if self.input is None else self.input.to_dict(),
        }


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
