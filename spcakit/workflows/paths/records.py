"""The records of a path: one level (:class:`PathLevel`) and the whole trade-off (:class:`SparsityPath`)."""

from __future__ import annotations

import csv
import io
import math
import numbers
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.output.files import check_output, write_output
from spcakit.workflows.paths.grids import k_for_sparsity
from spcakit.inputs.records import MissingRecord
from spcakit.workflows.results import Result, import_pandas

#: Relative tolerance of every CPEV comparison (reaching PCA's CPEV, a target, monotonicity): rounding only.
CPEV_RTOL = 1e-9


#: The metrics a path's fits compute (the encoders' losses are added when that plugin registers them; the path adds
#: ``bound`` itself, from :math:`\lambda_{\max}(C)` found once for all levels).
PATH_METRICS = ("nz", "pattern", "cpev", "nor", "additional_variance")


LOSS_METRICS = ("loss", "normalized_loss")


@attrs.frozen(kw_only=True)
class PathLevel:
    """One level of a :class:`SparsityPath`.

    Attributes
    ----------
    level
        The sparsity level: ``k`` (nonzeros per loading) or λ, as the path's :attr:`SparsityPath.knob` says.
    nz, pattern
        Total nonzeros, and nonzeros per loading.
    cpev
        Cumulative percentage of explained variance of the loadings' span (:func:`spcakit.analysis.metrics.cpev`).
    cpev_ratio
        ``cpev`` over dense PCA's CPEV for the same ``r`` (the path's ceiling): at most 1.
    additional_variance
        The variance each loading adds to the previous ones (Mackey, §2.3.3).
    bound
        Per ``t``, the metric ``bound`` as :func:`spcakit.fit` reports it (:func:`spcakit.analysis.certificate.certify`):
        never below the variance any ``t`` loadings with the first ``t`` cardinalities explain together; for the first
        loading, the best loading of its cardinality (empty when not computed).
    nor
        Nonorthogonality: mean absolute cosine between distinct loadings.
    loss, normalized_loss
        The encoders' reconstruction loss and its ratio to PCA's (``None`` without that plugin).
    seconds, iterations
        The fit's time (its driver's) and iterations.
    warm
        Whether the fit started from the previous level's loadings.
    result
        The fit's :class:`~spcakit.workflows.results.Result`, loadings included (its metrics are the path's).
    """

    level: int | float
    nz: int
    pattern: tuple[int, ...]
    cpev: float
    cpev_ratio: float
    additional_variance: tuple[float, ...]
    nor: float
    bound: tuple[float, ...] = ()
    loss: float | None = None
    normalized_loss: float | None = None
    seconds: float = 0.0
    iterations: int = 0
    warm: bool = False
    result: Result = attrs.field(eq=False, repr=False)

    @classmethod
    def from_result(cls, level: int | float, result: Result, ceiling: float, warm: bool) -> PathLevel:
        m = result.metrics
        return cls(
            level=level, nz=int(m["nz"]), pattern=tuple(int(v) for v in m["pattern"]), cpev=float(m["cpev"]),
            cpev_ratio=float(m["cpev"]) / ceiling,
            additional_variance=tuple(float(v) for v in m["additional_variance"]), nor=float(m["nor"]),
            bound=tuple(float(v) for v in m.get("bound", ())),
            loss=optional_float(m.get("loss")), normalized_loss=optional_float(m.get("normalized_loss")),
            seconds=float(result.seconds), iterations=int(result.iterations), warm=warm, result=result,
        )  # fmt: skip


def optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def reached(value: float, threshold: float, ceiling: float) -> bool:
    """``value >= threshold`` up to rounding (:data:`CPEV_RTOL` relative to the ceiling)."""
    return value >= threshold - CPEV_RTOL * ceiling


@attrs.frozen(kw_only=True, repr=False)
class SparsityPath:
    """The trade-off between sparsity and explained variance of one method: what :func:`path` returns.

    Attributes
    ----------
    method
        The method's name.
    source
        Where the data came from (``builtin:pitprops``, a path; empty for arrays).
    r, p
        Number of loadings and of variables.
    knob
        ``"k"`` (nonzeros per loading) or ``"lam"`` (the method's λ).
    levels
        One :class:`PathLevel` per level, in the order they were fitted: increasing ``k``, or λ in
        the order given.
    ceiling
        Dense PCA's CPEV for the same ``r``: :math:`\\sum_{i\\le r}\\lambda_i / \\operatorname{tr} C`.
    warm_start
        The initializer parameter the levels were warm-started through (``"w0"``), or ``None``.
    warm_start_note
        Why the levels were (or were not) warm-started, in words.
    auto
        Whether the grid was ``auto``.
    stop_note
        Why an ``auto`` grid stopped before its last level, in words (empty when it did not): a
        level whose CPEV reached the ceiling, or a ``k`` the method refuses (the iterative
        encoder's ``k`` is at most the rank of its residual).
    seed
        The seed of every fit.
    total_variance
        :math:`\\operatorname{tr} C`, what CPEV is a share of (``None`` when not recorded): with it,
        :meth:`first_loading` reads the first loading's variance and bound as shares.
    missing
        For data with missing values (:func:`path`'s ``missing=``), the imputation's record: the count and
        fraction missing, the EM iterations of all the levels together, whether every level's EM converged and
        the largest last change (each level's own is its result's ``input.missing``); ``None`` for complete data.
        Each level's CPEV is then on its own completed data, ``cpev_ratio`` over PCA's on the same data, and
        :attr:`ceiling` is the largest of those ceilings.

    Notes
    -----
    ``len(path)`` is the number of levels, iterating gives the levels; :meth:`to_rows`,
    :meth:`frame`, :meth:`to_csv`, :meth:`to_dict` and :meth:`plot` present them.
    """

    method: str
    source: str
    r: int
    p: int
    knob: str
    levels: tuple[PathLevel, ...]
    ceiling: float
    warm_start: str | None = None
    warm_start_note: str = ""
    auto: bool = False
    stop_note: str = ""
    seed: int | None = 0
    total_variance: float | None = None
    missing: MissingRecord | None = None

    @property
    def stopped_early(self) -> bool:
        """Whether an ``auto`` grid stopped before its last level (:attr:`stop_note` says why)."""
        return bool(self.stop_note)

    def __len__(self) -> int:
        return len(self.levels)

    def __iter__(self) -> Iterator[PathLevel]:
        return iter(self.levels)

    def __repr__(self) -> str:
        values = [level.level for level in self.levels]
        span = f"{values[0]}..{values[-1]}" if len(values) > 1 else str(values[0])
        return (
            f"SparsityPath(method={self.method!r}, r={self.r}, p={self.p}, {self.knob}={span} ({len(values)} levels), "
            f"ceiling={self.ceiling:.4f}, warm_start={self.warm_start is not None})"
        )

    def column(self, name: str) -> np.ndarray:
        """One criterion at every level, as an array (``path.column("cpev")``; ``"level"`` for the levels)."""
        fields = {f.name for f in attrs.fields(PathLevel)} - {"result"}
        if name not in fields:
            raise InvalidParameterError(f"SparsityPath has no column {name!r}; valid: {', '.join(sorted(fields))}")
        values = [getattr(level, name) for level in self.levels]
        if any(v is None for v in values):  # a loss the encoders' plugin was not there to compute
            return np.array([math.nan if v is None else v for v in values], dtype=float)
        return np.array(values)

    def level(self, value: int | float) -> PathLevel:
        """The level ``value`` (a ``k`` or a λ of the grid)."""
        for level in self.levels:
            if level.level == value:
                return level
        raise InvalidParameterError(
            f"{self.knob} = {value!r} is not a level of this path; its levels are {[lv.level for lv in self.levels]}"
        )

    def to_rows(self) -> list[dict[str, Any]]:
        """One flat dictionary per level (the CSV's rows and the DataFrame's): the level, ``nz``,
        ``cpev``, ``cpev_ratio``, ``nor``, ``loss`` and ``normalized_loss`` (when computed),
        ``seconds``, ``iterations``, ``warm``, ``additional_variance_1`` .. ``_r``, and ``bound_1`` .. ``_r``
        (when computed)."""
        losses = any(level.loss is not None for level in self.levels)
        bounds = all(len(level.bound) == self.r for level in self.levels)
        rows = []
        for level in self.levels:
            row: dict[str, Any] = {
                self.knob: level.level, "nz": level.nz, "cpev": level.cpev, "cpev_ratio": level.cpev_ratio,
                "nor": level.nor,
            }  # fmt: skip
            if losses:
                row["loss"], row["normalized_loss"] = level.loss, level.normalized_loss
            row.update(seconds=level.seconds, iterations=level.iterations, warm=level.warm)
            row.update({f"additional_variance_{j + 1}": v for j, v in enumerate(level.additional_variance)})
            if bounds:
                row.update({f"bound_{j + 1}": v for j, v in enumerate(level.bound)})
            rows.append(row)
        return rows

    def frame(self) -> Any:
        """The rows of :meth:`to_rows` as a pandas DataFrame indexed by the level (``k`` or ``lam``).

        Needs pandas (``pip install -e '.[pandas]'``); raises :class:`ImportError` saying so without it.
        """
        pandas = import_pandas("SparsityPath.frame()")
        return pandas.DataFrame(self.to_rows()).set_index(self.knob)

    def to_csv(self, file: str | Path | None = None) -> str:
        """The rows of :meth:`to_rows` as CSV (a header, then one line per level; numbers written so that they
        read back exactly, a missing loss as an empty cell); with ``file``, also written there atomically
        (:func:`spcakit.output.files.write_output`). Returns the text."""
        return rows_csv(self.to_rows(), file)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit path --json``."""
        first = self.levels[0].result
        document: dict[str, Any] = {
            "method": self.method,
            "data": self.source,
            "r": self.r,
            "p": self.p,
            "knob": self.knob,
            "ceiling": self.ceiling,
            "total_variance": self.total_variance,
            "warm_start": self.warm_start,
            "warm_start_note": self.warm_start_note,
            "auto": self.auto,
            "stopped_early": self.stopped_early,
            "stop_note": self.stop_note,
            "bound": first.spec.get("bound", "fast"),  # the relaxation of the levels' bounds (spcakit.fit's bound=)
            "warnings": list(dict.fromkeys(w for level in self.levels for w in level.result.warnings)),
            "levels": [
                {self.knob: lv.level, "nz": lv.nz, "pattern": list(lv.pattern), "cpev": lv.cpev, "cpev_ratio": lv.cpev_ratio,
                 "nor": lv.nor, "additional_variance": list(lv.additional_variance), "bound": list(lv.bound), "loss": lv.loss,
                 "normalized_loss": lv.normalized_loss, "seconds": lv.seconds, "iterations": lv.iterations, "warm": lv.warm}
                for lv in self.levels
            ],  # fmt: skip
            "seed": self.seed,
            "spcakit_version": first.version,
            "input": None if first.input is None else first.input.to_dict(),
        }
        if self.missing is not None:  # the whole path's imputation; each level's EM beside its criteria
            document["input"] = {**(document["input"] or {}), "missing": self.missing.to_dict()}
            for entry, lv in zip(document["levels"], self.levels):
                record = None if lv.result.input is None else lv.result.input.missing
                if record is not None:
                    entry["missing"] = {"iterations": record.iterations, "converged": record.converged,
                                        "change": record.change}  # fmt: skip
        return document

    def target(self, *, cpev: float | None = None, sparsity: float | None = None) -> PathLevel:
        """The level of this path that meets a target (no new fit).

        ``cpev=F``: of the levels whose CPEV is at least ``F`` times the ceiling (up to
        :data:`CPEV_RTOL`; with missing values, whose ``cpev_ratio`` is at least ``F``: each level's CPEV
        over PCA's on its own completed data), the smallest ``k`` - or on a λ grid, the one with the fewest nonzeros
        (the first in the grid at a tie). ``sparsity=S``: the level
        ``k = round((1 - S) p)`` (:func:`k_for_sparsity`), which must be in the grid.

        Raises
        ------
        InvalidParameterError
            Neither or both targets, a target out of range, a CPEV that no level reaches (the
            message names the best level), a sparsity level not in the grid.
        """
        fraction = check_targets(cpev, sparsity)
        if sparsity is not None:
            if self.knob != "k":
                raise InvalidParameterError("a target sparsity picks a k; this path is over lam: give a cpev target instead")
            k = k_for_sparsity(sparsity, self.p)
            for level in self.levels:
                if level.level == k:
                    return level
            raise InvalidParameterError(
                f"target sparsity {sparsity:g} means k = round((1 - {sparsity:g}) * {self.p}) = {k}, which is not in "
                f"this path's grid (k = {[lv.level for lv in self.levels]}); add it to the grid"
            )
        threshold = fraction * self.ceiling
        if self.missing is None:
            reaching = [lv for lv in self.levels if reached(lv.cpev, threshold, self.ceiling)]
        else:  # each level's CPEV is on its own completed data: compared with PCA's there
            reaching = [lv for lv in self.levels if reached(lv.cpev_ratio, fraction, 1.0)]
        if not reaching:
            best = max(self.levels, key=lambda lv: lv.cpev if self.missing is None else lv.cpev_ratio)
            ceiling = self.ceiling  # with missing values, PCA's on the best level's completed data
            if self.missing is not None and best.cpev_ratio > 0:
                ceiling = best.cpev / best.cpev_ratio
            raise InvalidParameterError(unreachable(fraction, ceiling, best.cpev, f"{self.knob} = {best.level}",
                                                     f"the levels of this path ({self.knob} = {_span(self)})"))
        if self.knob == "k":
            return min(reaching, key=lambda lv: lv.level)
        return min(reaching, key=lambda lv: lv.nz)  # min keeps the first of equals

    def first_loading(self) -> tuple[np.ndarray, np.ndarray]:
        r"""Per level, ``(share, bound)``: the first loading's share of the total variance, and an upper bound on it.

        ``share`` is :math:`x_1^\top C x_1 / \operatorname{tr} C` for the unit first loading (its additional
        variance; with ``r = 1`` the CPEV), ``bound`` the first entry of :attr:`PathLevel.bound` over
        :math:`\operatorname{tr} C`: no unit loading with as many nonzeros as :math:`x_1` (``k``, unless the
        loading came out sparser) explains a larger share of :math:`C`, so ``bound >= share`` at every
        level, and ``bound - share`` is at least how far the first loading is from the best of its
        cardinality. NaN where a level has no bound.

        The last entry of :attr:`PathLevel.bound` bounds the variance of all the loadings together (CPEV's numerator);
        the plot draws the first loading's alone, and PCA's ceiling for CPEV.

        Raises
        ------
        InvalidParameterError
            The path does not record the total variance (made by hand, without ``total_variance``).
        """
        if not self.total_variance or not self.total_variance > 0:
            raise InvalidParameterError("this path records no total variance (total_variance), which the shares are of")
        share = np.array([lv.additional_variance[0] for lv in self.levels], dtype=float) / self.total_variance
        bound = np.array([lv.bound[0] if lv.bound else math.nan for lv in self.levels], dtype=float) / self.total_variance
        return share, bound

    def plot(self, *, bound: bool | None = None, **kwargs: Any) -> Any:
        """CPEV against the level with the PCA ceiling, and a dashed bound: :func:`spcakit.plotting.plot_tradeoff`
        (needs ``spcakit[plot]``); other keyword arguments go to it (``ax``, ``title``, ``xscale``, ...).

        The bound (when the levels have theirs) is drawn dashed in the path's colour, over the first
        loading's share of the variance (:meth:`first_loading`). With ``r = 1`` that share is the CPEV
        drawn, so the bound lies on or above the curve at every level (label ``METHOD: bound``); it is
        drawn unless ``bound=False``. With ``r > 1`` no per-loading bound covers the CPEV of several
        loadings: with ``bound=True`` the first loading's share is drawn dotted beside the CPEV
        (``METHOD: 1st loading``) with the bound over it (``METHOD: bound on 1st loading``); by default
        (``None``) the plot is then the CPEV and the ceiling alone. Returns the figure."""
        from spcakit import plotting

        options: dict[str, Any] = {"ceiling": self.ceiling, "label": self.method}
        if self.knob == "lam":
            options["xlabel"] = "λ"
        if (bound or (bound is None and self.r == 1)) and self.total_variance and all(lv.bound for lv in self.levels):
            share, upper = self.first_loading()
            if self.r == 1:
                options.update(bound=upper, bound_label=f"{self.method}: bound")
            else:
                options.update(bound=upper, bound_label=f"{self.method}: bound on 1st loading", bounded=share,
                               bounded_label=f"{self.method}: 1st loading")  # fmt: skip
        options.update(kwargs)
        return plotting.plot_tradeoff(self.column("level"), self.column("cpev"), **options)


def _span(path: SparsityPath) -> str:
    values = [lv.level for lv in path.levels]
    return f"{values[0]}..{values[-1]}" if len(values) > 1 else str(values[0])


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def rows_csv(rows: list[dict[str, Any]], file: str | Path | None = None) -> str:
    """``rows`` (dictionaries with the same keys) as CSV: a header, then one line per row, numbers written so
    that they read back exactly and ``None`` as an empty cell; with ``file``, also written there atomically
    (:func:`spcakit.output.files.write_output`, never over an input). Returns the text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(rows[0].keys())
    for row in rows:
        writer.writerow(_csv_cell(v) for v in row.values())
    text = buffer.getvalue()
    if file is not None:
        check_output(Path(file))
        write_output(Path(file), text)
    return text

def check_targets(cpev: Any, sparsity: Any) -> float:
    """Exactly one target; a CPEV fraction in ``(0, 1]`` (returned as a float, 0.0 for a sparsity target)."""
    if (cpev is None) == (sparsity is None):
        raise InvalidParameterError(
            "give one target: cpev=F (the sparsest k whose CPEV is at least F times PCA's, 0 < F <= 1) or "
            "sparsity=S (the fraction of zeros per loading, 0 <= S < 1)"
        )
    if cpev is None:
        return 0.0
    if isinstance(cpev, bool) or not isinstance(cpev, numbers.Real) or not math.isfinite(float(cpev)) or cpev <= 0:
        raise InvalidParameterError(
            f"the target CPEV is a fraction of PCA's CPEV, a number in (0, 1] (e.g. 0.9: 90% of PCA's); got {cpev!r}"
        )
    if cpev > 1:
        raise InvalidParameterError(
            f"target CPEV {cpev:g} x PCA's is unreachable: no r loadings explain more variance than PCA's r "
            "(Ky Fan's theorem); the best reachable is 1 x PCA's, by k = p; give a fraction in (0, 1]"
        )
    return float(cpev)

def unreachable(fraction: float, ceiling: float, best: float, where: str, among: str) -> str:
    return (
        f"no level reaches the target CPEV >= {fraction:g} x PCA's = {fraction * ceiling:.6g} (PCA's CPEV {ceiling:.6g}); "
        f"the best reachable among {among} is {best:.6g} = {best / ceiling:.6g} x PCA's, at {where}; "
        f"give a target of at most {math.floor(best / ceiling * 1e4) / 1e4:g}"
    )
