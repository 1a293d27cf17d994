r"""Truncations of Hu, Pan, Wang & Wu, *Sparse Principal Component Analysis via
Rotation and Truncation* (Table 2, §3.3), as pure column-wise operators.

For a vector :math:`x` (the paper's λ beside each parameter):

* :math:`H_\lambda` **hard** thresholding (T-ℓ0), ``threshold`` = λ:
  :math:`H_\lambda(x)_i = x_i` if :math:`|x_i| > \lambda`, else 0;
* :math:`S_\lambda` **soft** thresholding (T-ℓ1), ``threshold`` = λ:
  :math:`S_\lambda(x)_i = \operatorname{sign}(x_i)(|x_i| - \lambda)_+`;
* :math:`P_\lambda` truncation by **sparsity** (T-sp), ``n_zeros`` = λ:
  zero the λ entries of smallest magnitude;
* :math:`E_\lambda` truncation by **energy** (T-en), ``energy`` = λ: zero
  the :math:`k` smallest entries, :math:`k = \max\{i : \sum_{j\le i}\bar x_j^2/\|x\|_2^2 \le \lambda\}`
  with :math:`\bar x` the magnitudes in ascending order.

Thresholds act in one of two forms. The **relative** form (SPCArt, rSVD-GP,
§5.2) truncates the unit vector, :math:`x = \|z\|\,T_\lambda(z/\|z\|)`, so one
λ fits loadings of any length; the **absolute** form (original GPower)
truncates :math:`z` itself. Sparsity and energy truncations are
scale-invariant, so both forms agree for them. The drivers normalise each
truncated column to unit length (Algorithm 1, line 7).
"""

from __future__ import annotations

import math
import numbers

import attrs
import numpy as np

from spcakit.errors import InvalidParameterError, ZeroLoadingError

FORMS = ("relative", "absolute")
PAPER = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation (Table 2)"


# -- pure vector/column operators ------------------------------------------------
def hard_threshold(z: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """:math:`H_\\lambda`: keep entries with :math:`|z_i| > \\lambda` (column-wise λ may be an array)."""
    return np.where(np.abs(z) > threshold, z, 0.0)


def soft_threshold(z: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """:math:`S_\\lambda`: shrink magnitudes by λ, zeroing those at most λ."""
    return np.sign(z) * np.maximum(np.abs(z) - threshold, 0.0)


def truncate_by_sparsity(z: np.ndarray, n_zeros: int) -> np.ndarray:
    """:math:`P_\\lambda`: zero the ``n_zeros`` smallest-magnitude entries of each column (O(p) per column)."""
    if n_zeros <= 0:
        return z.copy()
    matrix = z.reshape(z.shape[0], -1)
    smallest = np.argpartition(np.abs(matrix), n_zeros - 1, axis=0)[:n_zeros]
    out = matrix.copy()
    np.put_along_axis(out, smallest, 0.0, axis=0)
    return out.reshape(z.shape)


def truncate_by_energy(z: np.ndarray, energy: float) -> np.ndarray:
    """:math:`E_\\lambda`: zero the smallest entries whose energy share is at most ``energy``."""
    matrix = z.reshape(z.shape[0], -1)
    squares = matrix**2
    order = np.argsort(squares, axis=0, kind="stable")
    sorted_sq = np.take_along_axis(squares, order, axis=0)
    totals = sorted_sq.sum(axis=0)
    shares = np.cumsum(sorted_sq, axis=0) / np.where(totals > 0, totals, 1.0)
    # entries whose cumulative share stays within the budget (a relative 1e-12 absorbs rounding);
    # the largest entry is always kept, so no loading is ever emptied
    removed = shares <= energy * (1.0 + 1e-12)
    removed[-1] = False
    out = matrix.copy()
    mask = np.zeros_like(removed)
    np.put_along_axis(mask, order, removed, axis=0)
    out[mask] = 0.0
    return out.reshape(z.shape)


# -- parts -------------------------------------------------------------------------
def _check_form(form: str) -> str:
    if form not in FORMS:
        raise InvalidParameterError(f"truncation form must be one of {', '.join(FORMS)}; got {form!r}")
    return form


def _raise_if_zeroed(x: np.ndarray, z: np.ndarray, what: str, hint: str) -> np.ndarray:
    zeroed = np.nonzero(~np.any(x != 0, axis=0) & np.any(z != 0, axis=0))[0]
    if zeroed.size:
        raise ZeroLoadingError(f"{what} zeroed loading {int(zeroed[0]) + 1} entirely; {hint}")
    return x


def _as_float(value: object, name: str) -> float:
    if isinstance(value, bool):
        raise InvalidParameterError(f"{name} must be a number; got {value!r}")
    if not isinstance(value, numbers.Real):
        try:
            value = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InvalidParameterError(f"{name} must be a number; got {value!r}") from None
    value = float(value)  # type: ignore[arg-type]
    if not math.isfinite(value):
        raise InvalidParameterError(f"{name} must be finite; got {value}")
    return value


@attrs.frozen
class NoTruncation:
    """The identity: dense loadings (PCA)."""

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return z

    def check(self, p: int) -> None:
        return None


@attrs.frozen
class ThresholdTruncation:
    """Hard (T-ℓ0) or soft (T-ℓ1) thresholding at ``threshold`` (λ).

    In the relative form the default λ is :math:`1/\\sqrt p`, "the minimal
    threshold to ensure sparsity and the maximal threshold to avoid
    truncating to zero vector" (§6); valid λ: :math:`0 \\le \\lambda < 1`.
    In the absolute form λ must be given (any :math:`\\lambda \\ge 0`).
    """

    kind: str
    threshold: float | None = None
    form: str = attrs.field(default="relative", converter=_check_form)

    def _value(self, p: int) -> float:
        if self.threshold is None:
            return 1.0 / math.sqrt(p) if p > 1 else 0.0
        return _as_float(self.threshold, f"the {self.kind} threshold (lambda)")

    def resolved(self, p: int) -> dict[str, float | str]:
        """The parameters as used for dimension ``p`` (the default threshold made explicit)."""
        return {"threshold": self._value(p), "form": self.form}

    def check(self, p: int) -> None:
        if self.threshold is None and self.form == "absolute":
            raise InvalidParameterError(
                f"{self.kind} thresholding in the absolute form (GPower) has no default threshold; give --lam (>= 0)"
            )
        lam = self._value(p)
        if self.form == "relative" and not 0.0 <= lam < 1.0:
            raise InvalidParameterError(
                f"{self.kind} threshold lambda={lam:g} is outside [0, 1): loadings are thresholded as unit vectors, "
                f"so lambda >= 1 zeroes every loading; lambda < 1/sqrt(p) = {1 / math.sqrt(p):.4g} never zeroes one"
            )
        if self.form == "absolute" and lam < 0:
            raise InvalidParameterError(f"{self.kind} threshold lambda={lam:g} must be >= 0")

    def __call__(self, z: np.ndarray) -> np.ndarray:
        lam = self._value(z.shape[0])
        scale = np.linalg.norm(z, axis=0) if self.form == "relative" else 1.0
        op = hard_threshold if self.kind == "hard" else soft_threshold
        x = op(z, lam * scale)
        hint = (
            f"no entry of the unit vector exceeds lambda={lam:g}; use lambda < 1/sqrt(p) = {1 / math.sqrt(z.shape[0]):.4g}"
            if self.form == "relative"
            else f"no entry exceeds the absolute threshold {lam:g}; use a smaller --lam"
        )
        return _raise_if_zeroed(x, z, f"{self.kind} thresholding", hint)


@attrs.frozen
class PenaltyL0Truncation:
    """GPower's ℓ0-penalty solution :math:`H_{\\sqrt\\gamma}` (absolute): keep :math:`z_i^2 > \\gamma`.

    This is the closed form of :math:`\\min_x \\|z - x\\|^2 + \\gamma\\|x\\|_0`
    (SPCArt paper eq. 24), with ``penalty`` = γ, the GPower-ℓ0 λ.
    """

    penalty: float | None = None

    def check(self, p: int) -> None:
        if self.penalty is None:
            raise InvalidParameterError("the l0-penalty truncation (GPower-l0) needs --lam gamma >= 0; it has no default")
        if _as_float(self.penalty, "the l0 penalty gamma") < 0:
            raise InvalidParameterError(f"the l0 penalty gamma={self.penalty} must be >= 0")

    def __call__(self, z: np.ndarray) -> np.ndarray:
        gamma = _as_float(self.penalty, "the l0 penalty gamma")
        x = hard_threshold(z, math.sqrt(gamma))
        return _raise_if_zeroed(x, z, "l0-penalty thresholding", f"no entry has z_i^2 > gamma={gamma:g}; use a smaller --lam")


@attrs.frozen
class SparsityTruncation:
    """Truncation by sparsity (T-sp): ``n_zeros`` (λ) zeros per loading, :math:`0 \\le \\lambda \\le p-1`.

    Alternatively ``k``, the cardinality (nonzeros) per loading, :math:`\\lambda = p - k`.
    """

    n_zeros: int | None = None
    k: int | None = None

    def _zeros(self, p: int) -> int | float | None:
        return self.n_zeros if self.k is None else p - self.k  # type: ignore[operator]

    def resolved(self, p: int) -> dict[str, int]:
        return {"n_zeros": int(self._zeros(p)), "k": p - int(self._zeros(p))}  # type: ignore[arg-type]

    def check(self, p: int) -> None:
        if self.n_zeros is not None and self.k is not None:
            raise InvalidParameterError("truncation by sparsity takes the number of zeros (--lam) or the cardinality k, not both")
        if self.k is not None:
            k = self.k
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p:
                raise InvalidParameterError(f"truncation by sparsity: the cardinality k must be an integer in [1, {p}]; got {k!r}")
            return
        if self.n_zeros is None:
            raise InvalidParameterError(
                f"truncation by sparsity needs --lam: the number of zeros per loading, an integer in [0, {p - 1}] "
                f"(or --param k=CARDINALITY)"
            )
        value = self.n_zeros
        try:
            integral = not isinstance(value, bool) and float(value).is_integer()  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            integral = False
        if not integral:
            raise InvalidParameterError(
                f"truncation by sparsity needs an integer number of zeros in [0, {p - 1}]; got {value!r}"
            )
        if not 0 <= int(value) <= p - 1:
            raise InvalidParameterError(
                f"truncation by sparsity: lambda={int(value)} zeros is outside [0, {p - 1}] for p={p} variables "
                "(at least one entry must remain)"
            )

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return truncate_by_sparsity(z, int(self._zeros(z.shape[0])))  # type: ignore[arg-type]


@attrs.frozen
class EnergyTruncation:
    """Truncation by energy (T-en): remove at most a fraction ``energy`` (λ) of each loading's energy, :math:`0 \\le \\lambda < 1`."""

    energy: float = 0.15

    def check(self, p: int) -> None:
        value = _as_float(self.energy, "the energy fraction (lambda)")
        if not 0.0 <= value < 1.0:
            raise InvalidParameterError(
                f"truncation by energy: lambda={value:g} is outside [0, 1) (the fraction of each loading's energy removed)"
            )

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return truncate_by_energy(z, _as_float(self.energy, "energy"))


# -- factories (what the registry calls) -------------------------------------------
def make_none() -> NoTruncation:
    return NoTruncation()


def make_hard(threshold: float | None = None, form: str = "relative") -> ThresholdTruncation:
    return ThresholdTruncation("hard", threshold, form)


def make_soft(threshold: float | None = None, form: str = "relative") -> ThresholdTruncation:
    return ThresholdTruncation("soft", threshold, form)


def make_l0_penalty(penalty: float | None = None) -> PenaltyL0Truncation:
    return PenaltyL0Truncation(penalty)


def make_sparsity(n_zeros: int | None = None, k: int | None = None) -> SparsityTruncation:
    return SparsityTruncation(n_zeros, k)


def make_energy(energy: float = 0.15) -> EnergyTruncation:
    return EnergyTruncation(energy)
