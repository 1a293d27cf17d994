"""What a run's input was and what was done to it: the input record of a result, and its missing values."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.core.records import arrays_equal


@attrs.frozen(kw_only=True)
class MissingRecord:
    r"""What was missing in a run's data and how it was imputed (:mod:`spcakit.inputs.imputation`).

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
        For data with missing values that were imputed (:mod:`spcakit.inputs.imputation`), a
        :class:`MissingRecord` (count and fraction missing, EM iterations, convergence); ``None`` for
        complete data. ``sha256`` is then the hash of the data as given (with their NaN), and ``mean`` and
        ``scale`` those of the completed data.
    """

    kind: str
    shape: tuple[int, ...]
    sha256: str | None = None
    center: bool | None = None
    standardize: bool = False
    mean: np.ndarray | None = attrs.field(default=None, eq=attrs.cmp_using(eq=arrays_equal), repr=False)
    scale: np.ndarray | None = attrs.field(default=None, eq=attrs.cmp_using(eq=arrays_equal), repr=False)
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
