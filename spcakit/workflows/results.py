"""The result of a fit: loadings by variable name, metrics, how the run went, and what its input was.

The record knows no pandas nor matplotlib: its tables and plots are made on request by pandas (imported here
when asked) and by :mod:`spcakit.plotting`.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError, install_hint
from spcakit.core.records import arrays_equal
from spcakit.inputs.records import InputRecord

#: The optional dependency that :meth:`Result.loadings_frame` and :meth:`Result.metrics_frame` need.
PANDAS_EXTRA = "pandas"


#: Components shown one by one in :meth:`Result.__repr__` (more are elided).
REPR_COMPONENTS = 10


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
        Criteria of the papers (see :mod:`spcakit.analysis.metrics`).
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
        :class:`~spcakit.core.errors.ConstantColumnWarning`).
    seed
        The seed of the run's random generator (drawn and recorded when
        :func:`spcakit.fit` was given ``seed=None``), so that the run can be
        repeated exactly.
    version
        The spcakit version that computed the result.
    input
        What the input was and what was done to it (an :class:`InputRecord`:
        kind, shape, content hash, centring, standardisation); ``None`` for
        a :class:`~spcakit.inputs.problem.Problem` built by hand.

    Notes
    -----
    ``repr(result)`` is a one-line summary (method, r, p, nonzeros per
    component, CPEV); :meth:`to_dict` is the whole record.
    """

    method: str
    spec: dict[str, Any]
    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=arrays_equal))
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

    def components(self, digits: int | None = None, top: int | None = None) -> list[list[tuple[str, float]]]:
        """Per loading, its nonzero variables as ``(name, weight)``, largest magnitude first.

        Parameters
        ----------
        digits : int, optional
            Round the weights to that many decimals. Magnitudes equal once rounded keep the variables' order, so
            that the list is the same on every machine (rounding noise in the last bits never reorders equal
            weights). A weight that rounds to zero stays listed (its variable is in the support).
        top : int, optional
            Keep only each loading's ``top`` largest-magnitude nonzero variables: the first ``top`` entries of the
            full list, in the same order (ties broken as above); a loading with fewer nonzeros lists them all.
            A positive integer (``top >= 1``); default: every nonzero variable.

        Returns
        -------
        list of list of (str, float)
            One list per loading (``r`` lists). How many nonzero variables each loading has in all, the ones
            ``top`` leaves out included, is ``np.count_nonzero(result.loadings, axis=0)`` (or
            ``result.metrics["pattern"]``).

        Raises
        ------
        InvalidParameterError
            ``top`` is not a positive integer (a bool, a float, zero or a negative number).
        """
        if top is not None and (isinstance(top, (bool, np.bool_)) or not isinstance(top, (int, np.integer)) or top < 1):
            raise InvalidParameterError(
                f"top (variables listed per loading) must be a positive integer (1, 2, ...) or None for all of "
                f"them; got {top!r}"
            )
        out = []
        for j in range(self.r):
            col = self.loadings[:, j]
            idx = np.nonzero(col)[0]
            magnitude = np.abs(col[idx]) if digits is None else np.round(np.abs(col[idx]), digits)
            idx = idx[np.argsort(-magnitude, kind="stable")]
            if top is not None:
                idx = idx[: int(top)]
            # Python's round is correctly rounded (what formatting with that many decimals shows); + 0.0: never -0.0
            out.append([(self.feature_names[i], float(col[i]) if digits is None else round(float(col[i]), digits) + 0.0)
                        for i in idx])  # fmt: skip
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
