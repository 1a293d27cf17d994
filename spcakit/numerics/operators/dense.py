"""An explicit covariance matrix as an operator (:class:`DenseCovariance`)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from spcakit.numerics.operators.base import OperatorAccess, array_eq
from spcakit.numerics.operators.eigen import explicit_is_direct, leading_eigenpairs


@attrs.frozen(eq=False)
class DenseCovariance(OperatorAccess):
    """An explicit symmetric :math:`p\\times p` covariance matrix.

    Its leading eigenpairs are kept per ``r`` once computed (copies are returned): cross-validation fits each
    fold's covariance at every level of the grid, and each fit asks for the same pairs again."""

    matrix: np.ndarray
    _spectra: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False)

    @property
    def p(self) -> int:
        return self.matrix.shape[0]

    def matmat(self, v: np.ndarray) -> np.ndarray:
        return self.matrix @ v

    def diagonal(self) -> np.ndarray:
        return np.diag(self.matrix).copy()

    def trace(self) -> float:
        return float(np.trace(self.matrix))

    def direct_spectrum(self, r: int) -> bool:
        return explicit_is_direct(self.p, r)

    def top_eigenpairs(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        key = ("pairs", r)
        if key not in self._spectra:
            self._spectra[key] = leading_eigenpairs(self.matrix, r)
        values, vectors = self._spectra[key]
        return values.copy(), vectors.copy()

    def top_eigenvalues(self, r: int) -> np.ndarray:
        key = ("values", min(r, self.p))
        if key not in self._spectra:
            self._spectra[key] = np.clip(leading_eigenpairs(self.matrix, min(r, self.p), vectors=False), 0.0, None)
        return self._spectra[key].copy()  # type: ignore[no-any-return]

    def kept_top_eigenvalues(self, r: int) -> np.ndarray | None:
        wanted = min(r, self.p)
        for (kind, count), kept in self._spectra.items():
            values = kept[0] if kind == "pairs" else kept
            if count >= wanted and self.direct_spectrum(count):
                return np.clip(np.asarray(values[:wanted], dtype=float), 0.0, None)
        return None

    def columns(self, index: np.ndarray) -> np.ndarray:
        return self.matrix[:, np.asarray(index, dtype=int)]

    def submatrix(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=int)
        sub = self.matrix[np.ix_(index, index)]
        return (sub + sub.T) / 2

    def matmat_rows(self, w: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.matrix[:, rows] @ w[rows]

    def explicit(self) -> np.ndarray | None:
        return self.matrix

    def restrict(self, index: np.ndarray) -> DenseCovariance:
        """The covariance of the variables ``index`` alone: :math:`C_{II}`, a copy."""
        index = np.asarray(index, dtype=int)
        return DenseCovariance(self.matrix[np.ix_(index, index)])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DenseCovariance) and array_eq(self.matrix, other.matrix)

    __hash__ = None  # type: ignore[assignment]
