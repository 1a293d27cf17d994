"""The records of a stability analysis: :class:`Stability` (one sparsity, many resamples) and :class:`StableK`
(the choice of ``k`` by the size of the stable support)."""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.core.records import arrays_equal
from spcakit.workflows.results import Result, import_pandas
from spcakit.workflows.stability.resamples import false_selection_bound

_array = attrs.field(eq=attrs.cmp_using(eq=arrays_equal))


def check_threshold(threshold: Any, name: str = "threshold") -> float:
    """A selection threshold: a number in (0, 1]; above 1/2 for Meinshausen & Bühlmann's bound to say anything."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a number in (0.5, 1] (a selection probability); got {threshold!r}")
    value = float(threshold)
    if not 0.5 < value <= 1.0:
        raise InvalidParameterError(
            f"{name} must be in (0.5, 1] (a selection probability above one half, where Meinshausen & Bühlmann's "
            f"error bound holds; 0.6 to 0.9 are usual); got {threshold!r}"
        )
    return value


@attrs.frozen(kw_only=True, repr=False)
class Stability:
    r"""How stable a sparse PCA fit's supports are under resampling of the rows (:func:`spcakit.stability`).

    Attributes
    ----------
    result
        The fit on all the rows (:class:`~spcakit.Result`): the loadings whose supports are judged.
    probabilities
        ``p x r``: for each variable and component, the share of resamples whose (matched) loading selects it.
    intervals
        ``p x r x 2``: the percentile interval of each loading entry over the resamples, at ``level``
        (signs matched to the full fit's; a variable a resample leaves out counts as 0 there).
    jaccard
        ``n_resamples x r``: the Jaccard index of each resample's support with the full fit's.
    sizes
        ``n_resamples x r``: the number of variables each resample's loading selects.
    threshold
        The selection probability from which a variable is *stable* (:math:`\pi_{thr}`).
    level
        The coverage of :attr:`intervals`.
    scheme
        ``"subsample"`` (half the rows, without replacement) or ``"bootstrap"`` (``n`` rows, with replacement).
    n_samples
        The number of rows of the data.
    selectable
        The number of variables that can be selected (those that vary): the :math:`p` of the error bound.
    seed
        The seed of the resamples (and of the fits).
    seconds
        Wall-clock time of the resamples' fits (the full fit's is :attr:`Result.seconds`).
    warm_start
        How the resamples' fits started, in words.
    workers
        How many workers fitted the resamples (threads, or a Dask cluster's).
    warnings
        What the user should know, e.g. that the error bound is not proved for the bootstrap.
    """

    result: Result
    probabilities: np.ndarray = _array
    intervals: np.ndarray = _array
    jaccard: np.ndarray = _array
    sizes: np.ndarray = _array
    threshold: float
    level: float
    scheme: str
    n_samples: int
    selectable: int
    seed: int
    seconds: float = 0.0
    warm_start: str = ""
    workers: str = "1 thread"
    warnings: tuple[str, ...] = ()

    @property
    def n_resamples(self) -> int:
        return int(self.jaccard.shape[0])

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.result.feature_names

    @property
    def r(self) -> int:
        return self.result.r

    @property
    def average_size(self) -> np.ndarray:
        """Per component, the mean number of variables a resample selects: the :math:`q` of the error bound."""
        return self.sizes.mean(axis=0)

    def error_bound(self, threshold: float | None = None) -> np.ndarray:
        r"""Per component, Meinshausen & Bühlmann's bound on the expected number of variables in its stable support
        that are not in the true one: :math:`q^2 / ((2\pi_{thr} - 1)\,p)` (see
        :func:`~spcakit.workflows.stability.resamples.false_selection_bound`). Their sum bounds the whole."""
        pi = self.threshold if threshold is None else check_threshold(threshold)
        return np.array([false_selection_bound(float(q), pi, self.selectable) for q in self.average_size])

    def stable_support(self, threshold: float | None = None) -> list[np.ndarray]:
        """Per component, the variables selected in at least ``threshold`` of the resamples (default: the run's),
        most often selected first, then by the full fit's loading magnitude, then by position."""
        pi = self.threshold if threshold is None else check_threshold(threshold)
        out = []
        for j in range(self.r):
            prob = self.probabilities[:, j]
            rows = np.flatnonzero(prob >= pi - 1e-12)  # counts over n_resamples: exact fractions, a hair of slack
            order = np.lexsort((rows, -np.abs(self.result.loadings[rows, j]), -prob[rows]))
            out.append(rows[order])
        return out

    def stable(self, threshold: float | None = None, top: int | None = None) -> list[list[tuple[str, float, float]]]:
        """Per component, its stable variables as ``(name, probability, loading)`` (the full fit's loading), in the
        order of :meth:`stable_support`; with ``top``, the first ``top`` of them."""
        lists = []
        for j, rows in enumerate(self.stable_support(threshold)):
            rows = rows if top is None else rows[:top]
            lists.append([(self.feature_names[i], float(self.probabilities[i, j]), float(self.result.loadings[i, j]))
                          for i in rows])  # fmt: skip
        return lists

    def mean_jaccard(self) -> np.ndarray:
        """Per component, the mean Jaccard index of the resamples' supports with the full fit's (1: always the same)."""
        return self.jaccard.mean(axis=0)

    def __repr__(self) -> str:
        sizes = [rows.size for rows in self.stable_support()]
        return (f"Stability(method={self.result.method!r}, r={self.r}, p={self.result.p}, "
                f"n_resamples={self.n_resamples}, scheme={self.scheme!r}, threshold={self.threshold:g}, "
                f"stable={sizes}, jaccard={[round(float(v), 3) for v in self.mean_jaccard()]})")  # fmt: skip

    def frame(self) -> Any:
        """A pandas DataFrame, one row per variable and component that any resample selected: ``variable``,
        ``component`` (``PC1``, ...), ``probability``, ``loading`` (the full fit's), ``lower``, ``upper`` (the
        percentile interval) and ``stable``; most often selected first within each component. Needs pandas."""
        pandas = import_pandas("Stability.frame()")
        rows = []
        for j, component in enumerate(self.result.component_names):
            prob = self.probabilities[:, j]
            chosen = np.flatnonzero((prob > 0) | (self.result.loadings[:, j] != 0))
            chosen = chosen[np.lexsort((chosen, -np.abs(self.result.loadings[chosen, j]), -prob[chosen]))]
            for i in chosen:
                rows.append({"variable": self.feature_names[i], "component": component, "probability": float(prob[i]),
                             "loading": float(self.result.loadings[i, j]), "lower": float(self.intervals[i, j, 0]),
                             "upper": float(self.intervals[i, j, 1]),
                             "stable": bool(prob[i] >= self.threshold - 1e-12)})  # fmt: skip
        columns = ["variable", "component", "probability", "loading", "lower", "upper", "stable"]
        return pandas.DataFrame(rows, columns=columns)

    def probabilities_frame(self) -> Any:
        """The selection probabilities as a pandas DataFrame: variables x components (as
        :meth:`Result.loadings_frame`). Needs pandas."""
        pandas = import_pandas("Stability.probabilities_frame()")
        return pandas.DataFrame(
            np.array(self.probabilities, copy=True),
            index=pandas.Index(list(self.feature_names), name="variable"),
            columns=pandas.Index(list(self.result.component_names), name="component"),
        )

    def plot(self, **options: Any) -> Any:
        """The selection probabilities as a heat-map, variables by components (:func:`spcakit.plotting.plot_stability`;
        needs matplotlib)."""
        from spcakit import plotting

        return plotting.plot_stability(self, **options)

    def describe(self, top: int | None = None) -> str:
        """The stable supports and the error bound, in words (what ``spcakit stability`` prints)."""
        scheme = (f"{self.n_resamples} subsamples of {self.n_samples // 2} of the {self.n_samples} rows"
                  if self.scheme == "subsample" else f"{self.n_resamples} bootstrap samples of the {self.n_samples} rows")  # fmt: skip
        lines = [f"Stability of {self.result.method} (r = {self.r}) over {scheme}, seed {self.seed}",
                 f"stable: selected in at least {self.threshold:.0%} of the resamples", ""]  # fmt: skip
        bounds = self.error_bound()
        for j, (component, listed) in enumerate(zip(self.result.component_names, self.stable(top=top))):
            size = self.stable_support()[j].size
            bound = "no bound (threshold <= 1/2)" if math.isinf(bounds[j]) else f"at most {bounds[j]:.3g} expected false"
            lines.append(f"{component}: {size} stable of {int(np.count_nonzero(self.result.loadings[:, j]))} selected "
                         f"on all rows; mean Jaccard {self.mean_jaccard()[j]:.3f}; {bound} "
                         f"(q = {self.average_size[j]:.3g} per resample, p = {self.selectable})")  # fmt: skip
            for name, prob, loading in listed:
                lines.append(f"  {name:<24} {prob:6.2f}  {loading:+.4f}")
            if top is not None and size > top:
                lines.append(f"  ... and {size - top} more")
        total = float(np.sum(bounds))
        lines.append("")
        lines.append(f"Expected false selections in all stable supports: at most {total:.3g} (Meinshausen & Bühlmann "
                     "2010, Theorem 1" + (")" if self.scheme == "subsample" else "; proved for subsamples of half the "
                                          "rows, not for the bootstrap)"))  # fmt: skip
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit stability --json``: the full fit (as ``spcakit run --json``) under
        ``result``, and the stability's arrays as nested lists."""
        bounds = self.error_bound()
        return {
            "result": self.result.to_dict(),
            "feature_names": list(self.feature_names),
            "n_resamples": self.n_resamples,
            "scheme": self.scheme,
            "n_samples": self.n_samples,
            "selectable": self.selectable,
            "threshold": self.threshold,
            "level": self.level,
            "seed": self.seed,
            "probabilities": self.probabilities.tolist(),
            "intervals": self.intervals.tolist(),
            "stable_support": [[self.feature_names[i] for i in rows] for rows in self.stable_support()],
            "error_bound": [None if math.isinf(b) else float(b) for b in bounds],
            "average_size": self.average_size.tolist(),
            "mean_jaccard": self.mean_jaccard().tolist(),
            "jaccard": self.jaccard.tolist(),
            "sizes": self.sizes.tolist(),
            "seconds": self.seconds,
            "warm_start": self.warm_start,
            "workers": self.workers,
            "warnings": list(self.warnings),
        }


@attrs.frozen(kw_only=True, repr=False)
class StableK:
    r"""The choice of ``k`` by the size of the stable support (:func:`spcakit.stable_k`).

    At each level ``k`` the stability analysis runs, the threshold is the least that keeps Meinshausen &
    Bühlmann's bound on the expected false selections at ``error_bound`` (and at least ``min_threshold``), and
    the stable support is counted. The chosen ``k`` is the smallest whose stable support is within
    ``error_bound`` of the largest: a larger ``k`` adds variables that are selected by chance, and does not
    make the stable support larger than the bound's slack.

    Attributes
    ----------
    levels
        The ``k`` tried, increasing.
    stable_sizes
        At each level, the number of stable variables over all components.
    thresholds
        At each level, the threshold used.
    chosen
        The chosen ``k``.
    error_bound
        The bound on the expected number of false selections per component that set the thresholds.
    stability
        The :class:`Stability` at the chosen level.
    reason
        Why that ``k``, in words.
    """

    levels: tuple[int, ...]
    stable_sizes: tuple[int, ...]
    thresholds: tuple[float, ...]
    chosen: int
    error_bound: float
    stability: Stability
    reason: str
    seconds: float = 0.0

    def __repr__(self) -> str:
        return f"StableK(chosen={self.chosen}, levels={list(self.levels)}, stable_sizes={list(self.stable_sizes)})"

    def to_dict(self) -> dict[str, Any]:
        return {"levels": list(self.levels), "stable_sizes": list(self.stable_sizes),
                "thresholds": list(self.thresholds), "chosen": self.chosen, "error_bound": self.error_bound,
                "reason": self.reason, "seconds": self.seconds, "stability": self.stability.to_dict()}  # fmt: skip

    def plot(self, **options: Any) -> Any:
        """The stable support's size against ``k`` (:func:`spcakit.plotting.plot_stable_k`; needs matplotlib)."""
        from spcakit import plotting

        return plotting.plot_stable_k(self, **options)
