r"""Choosing the sparsity: the trade-off path over sparsity levels, and sparsity targets.

:func:`path` fits a method at a grid of sparsity levels - the number ``k`` of nonzero variables
per loading (:func:`spcakit.fit`'s knob ``k``), or the papers' own λ - and records at each the
criteria of the trade-off: the nonzeros, CPEV (and CPEV as a fraction of dense PCA's), the
additional variance of each component, NOR, the encoders' loss and normalized loss when that
plugin is loaded, and the time. Dense PCA's CPEV for the same ``r``,

.. math::

    \mathrm{CPEV}_{\mathrm{PCA}} = \frac{\sum_{i=1}^r \lambda_i(C)}{\operatorname{tr} C},

is the ceiling of every level (Ky Fan: no ``r``-dimensional subspace explains more), reported as
:attr:`SparsityPath.ceiling`.

:func:`target_k` picks one level by a target: a fraction of zeros per loading
(``sparsity=S``), or the sparsest ``k`` whose CPEV is at least ``F`` times PCA's (``cpev=F``),
found by a linear scan of ``k`` from below (exact) or, for more than :data:`MAX_SCAN_LEVELS`
levels, by bisection over ``k`` (which assumes CPEV grows with ``k``).

Monotonicity
------------
CPEV is not the objective of any method here, so it need not grow with ``k``. Measured on
Pitprops with ``r = 6`` (``k = 1..13``):

* **SPCArt** stops when its loadings change by less than 1% per iteration (the paper's rule),
  so each level ends near, not at, its fixed point; the curve dips by 0.0035 at ``k = 8``
  (0.8658 at ``k = 7``, 0.8623 at ``k = 8``). With the stopping tolerance at ``1e-6`` the same
  curve is non-decreasing.
* The **deflation** methods (rSVD-GP, TPower, SPCA-SP, greedy, exhaustive, the iterative
  encoder) choose each loading for its own variance after deflating the previous ones; the
  variance of the span of all ``r`` is not what they maximise, and dips by up to 0.013.
* **ST**, **rSVD-GPB** and the **FSPCA** methods rose with ``k`` there (FSPCA-exhaustive is
  monotone by construction: a larger support contains the smaller one's best).

Warm starts
-----------
With ``warm_start=True``, a level starts from the previous level's loadings when the method's
initializer takes a start - a parameter named :data:`WARM_START_PARAMETER` (``w0``, a
``p x r`` matrix), as FSPCA's ``subspace-start`` does - its driver does not deflate (a
deflating driver starts every component afresh), and neither the method nor the call sets any
of the initializer's parameters. With the built-in plugins that is ``fspca-ipu`` alone; every
other method starts each level as :func:`spcakit.fit` does. SPCArt cannot be warm-started
through its initializer: its rotation updater takes the PCA basis :math:`V` from the start
itself, so a sparse start would change the method, not only its start; ST, Go and the encoders
do not iterate.

Warm starts are off by default because they cost quality: IPU's own start (the ``m`` leading
eigenvectors, which make its first step Go) finds better supports than the previous level's.
Measured with ``fspca-ipu``, ``r = 3``, on spiked models (three planted supports of 10
variables in Gaussian noise), 30 log-spaced levels, CPU seconds of the whole path:

* ``n = 300, p = 400``: warm 6.4 s, cold 9.7 s (drivers 0.85 s and 4.1 s; 67 and 61
  iterations), but the warm CPEV is lower at 24 of the 30 levels, by up to 0.047;
* ``n = 200, p = 1000``: warm 5.5 s, cold 10.2 s (drivers 1.8 s and 4.2 s), the warm CPEV lower
  by up to 0.018 at 22 levels;
* Pitprops (``r = 6``, ``k = 6..13``) and Zou's model (``r = 2``, ``k = 2..10``): the same
  time (0.01 s in the drivers), CPEV within 0.0038 and 0.0047 of the cold path's, either way.

Cold, a path's level ``k`` is exactly ``spcakit.fit(data, method, r, k=k)``, whatever the grid;
warm, it depends on the levels before it (:attr:`PathLevel.warm` says which were warm-started).
"""

from __future__ import annotations

import csv
import io
import math
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import numpy as np

from spcakit.api import K_MEANING, check_r, configure, fit, set_k, takes_k
from spcakit.errors import InvalidDataError, InvalidParameterError, UnknownNameError, ZeroLoadingError
from spcakit.metrics import compute_metrics
from spcakit.output import check_output, write_output
from spcakit.plugins import get_registry
from spcakit.problem import Problem
from spcakit.inputs import as_problem
from spcakit.registry import Registry
from spcakit.specs import MethodSpec
from spcakit.state import Result, _import_pandas

__all__ = [
    "AUTO", "CPEV_RTOL", "MAX_AUTO_LEVELS", "MAX_SCAN_LEVELS", "SEARCHES", "WARM_START_PARAMETER", "PathLevel",
    "SparsityPath", "Target", "auto_levels", "k_for_sparsity", "parse_k_levels", "parse_lam_levels", "path",
    "pca_ceiling", "smallest_reaching", "target_k", "warm_start_parameter",
]  # fmt: skip

#: The grid that covers ``k`` from its smallest valid value to ``p`` (log-spaced above :data:`MAX_AUTO_LEVELS`).
AUTO = "auto"
#: The ``auto`` grid has at most this many levels.
MAX_AUTO_LEVELS = 30
#: Relative tolerance of every CPEV comparison (reaching PCA's CPEV, a target, monotonicity): rounding only.
CPEV_RTOL = 1e-9
#: How :func:`target_k` searches for the smallest ``k`` that reaches a CPEV target.
SEARCHES = ("auto", "scan", "bisection")
#: ``search="auto"`` scans every ``k`` from below when there are at most this many, else bisects.
MAX_SCAN_LEVELS = 100
#: The initializer parameter through which a level is started from the previous level's loadings.
WARM_START_PARAMETER = "w0"
#: The metrics a path reports (the encoders' losses are added when that plugin registers them).
PATH_METRICS = ("nz", "pattern", "cpev", "nor", "additional_variance")
LOSS_METRICS = ("loss", "normalized_loss")
#: How a grid is written, for messages.
K_GRID_FORMS = "FROM:TO (e.g. 1:13, or 1:p up to p), FROM:TO:STEP, a list (2,4,6), or auto"

T = TypeVar("T")


# -- grids -----------------------------------------------------------------------------------------
def _integer(value: Any) -> int | None:
    """``value`` as an ``int`` when it is an integral number (not a boolean), else ``None``."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _grid_bound(text: str, p: int, grid: str) -> int:
    word = text.strip()
    if word.lower() == "p":
        return p
    value = _integer(_number(word))
    if value is None:
        raise InvalidParameterError(f"k grid {grid!r}: {word!r} is not an integer; write the grid as {K_GRID_FORMS}")
    return value


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_k_levels(levels: Any, p: int) -> list[int] | str:
    """The ``k`` grid as sorted distinct integers in ``[1, p]``, or :data:`AUTO`.

    ``levels`` is ``"auto"``, text as the command line takes it (``"1:13"``, ``"1:p"``,
    ``"2:12:2"``, ``"2,4,6"``, ``"5"``; ``p`` stands for the number of variables; ranges include
    both ends), one integer, or a sequence of integers.

    Raises
    ------
    InvalidParameterError
        An entry that is not an integer in ``[1, p]``, an empty range or grid, a step below 1.
    """
    grid = levels
    if isinstance(levels, str):
        text = levels.strip()
        if text.lower() == AUTO:
            return AUTO
        if ":" in text:
            bounds = text.split(":")
            if len(bounds) not in (2, 3):
                raise InvalidParameterError(f"k grid {levels!r}: write the grid as {K_GRID_FORMS}")
            start, stop = _grid_bound(bounds[0], p, levels), _grid_bound(bounds[1], p, levels)
            step = _grid_bound(bounds[2], p, levels) if len(bounds) == 3 else 1
            if step < 1:
                raise InvalidParameterError(
                    f"k grid {levels!r}: the step must be a positive integer; got {step}; write the grid as {K_GRID_FORMS}"
                )
            if start > stop:
                raise InvalidParameterError(
                    f"k grid {levels!r} is empty: FROM ({start}) is larger than TO ({stop}); write FROM:TO with "
                    f"FROM <= TO, e.g. 1:{p}"
                )
            grid = list(range(start, stop + 1, step))
        else:
            items = [item.strip() for item in text.strip("[]").split(",")]
            if not all(items):
                raise InvalidParameterError(f"k grid {levels!r}: an empty entry; write the grid as {K_GRID_FORMS}")
            grid = [p if item.lower() == "p" else _number(item) for item in items]
    elif _integer(levels) is not None:
        grid = [levels]
    elif isinstance(levels, np.ndarray):
        grid = levels.ravel().tolist()
    if not isinstance(grid, Sequence) or isinstance(grid, str | bytes):
        raise InvalidParameterError(f"k must be a grid of sparsity levels: {K_GRID_FORMS}; got {levels!r}")
    if not grid:
        raise InvalidParameterError(f"the k grid is empty; give at least one level: {K_GRID_FORMS}")
    values = []
    for entry in grid:
        value = _integer(entry)
        if value is None or not 1 <= value <= p:
            raise InvalidParameterError(
                f"k = {entry!r} in the grid {levels!r} is not a sparsity level: k ({K_MEANING}) is an integer in "
                f"[1, p] = [1, {p}]; write the grid as {K_GRID_FORMS}"
            )
        values.append(value)
    return sorted(set(values))


def parse_lam_levels(levels: Any) -> list[float]:
    """The λ grid as distinct finite numbers in the order given (text ``"0.1,0.2,0.3"`` or a sequence).

    The levels run in this order, each warm-started from the one before where the method allows;
    give them from the sparsest to the densest (for every built-in truncation, the largest λ
    first).
    """
    grid = levels
    if isinstance(levels, str):
        items = [item.strip() for item in levels.strip().strip("[]").split(",")]
        if not all(items):
            raise InvalidParameterError(
                f"lam grid {levels!r}: an empty entry; give numbers separated by commas, e.g. 0.3,0.2,0.1"
            )
        grid = [_number(item) for item in items]
    elif isinstance(levels, numbers.Real) and not isinstance(levels, bool):
        grid = [levels]
    elif isinstance(levels, np.ndarray):
        grid = levels.ravel().tolist()
    if not isinstance(grid, Sequence) or isinstance(grid, str | bytes) or not grid:
        raise InvalidParameterError(f"lam must be a non-empty list of numbers (e.g. [0.3, 0.2, 0.1]); got {levels!r}")
    values: list[float] = []
    for entry in grid:
        if isinstance(entry, bool) or not isinstance(entry, numbers.Real) or not math.isfinite(float(entry)):
            raise InvalidParameterError(
                f"lam = {entry!r} in the grid {levels!r} is not a finite number; give numbers, e.g. 0.3,0.2,0.1"
            )
        value = int(entry) if isinstance(entry, numbers.Integral) else float(entry)
        if value not in values:
            values.append(value)
    return values


def auto_levels(p: int, low: int = 1, max_levels: int = MAX_AUTO_LEVELS) -> list[int]:
    r"""Every ``k`` from ``low`` to ``p`` when there are at most ``max_levels``, else ``max_levels`` of them, log-spaced.

    The log-spaced levels are :math:`\operatorname{round}(low\,(p/low)^{i/(n-1)})`, each raised to
    one above the level before where rounding repeats it (so the small ``k``, where CPEV changes
    fastest, are all there) and never past what the levels after it need; ``low`` and ``p`` are
    always included.
    """
    if p - low + 1 <= max_levels:
        return list(range(low, p + 1))
    ideal = np.geomspace(low, p, max_levels)
    levels: list[int] = []
    for i, value in enumerate(ideal):
        previous = levels[-1] if levels else low - 1
        level = max(int(round(value)), previous + 1)
        levels.append(min(level, p - (max_levels - 1 - i)))
    return levels


def k_for_sparsity(sparsity: Any, p: int) -> int:
    r"""The ``k`` of a target fraction ``S`` of zeros per loading: :math:`k = \lfloor (1-S)\,p + 1/2 \rfloor`.

    The nearest integer to :math:`(1 - S)\,p`, a half rounded up (to the denser level, so that the
    loadings are never sparser than asked at a tie); a relative slack of :math:`10^{-9}` absorbs
    the rounding of ``S`` in binary (``S = 0.3``, ``p = 10``: ``k = 7``).

    Raises
    ------
    InvalidParameterError
        ``S`` is not a number in ``[0, 1)``, or it is so close to 1 that no variable is left
        (``k = 0``); the message names the sparsest level, ``k = 1``.
    """
    if isinstance(sparsity, bool) or not isinstance(sparsity, numbers.Real) or not 0 <= float(sparsity) < 1:
        raise InvalidParameterError(
            f"the target sparsity is the fraction of zeros per loading, a number in [0, 1) (e.g. 0.7: 70% zeros); "
            f"got {sparsity!r}"
        )
    dense = (1.0 - float(sparsity)) * p
    k = math.floor(dense + 0.5 + 1e-9 * max(dense, 1.0))
    if k < 1:
        raise InvalidParameterError(
            f"target sparsity {sparsity:g} leaves no variable: k = round((1 - {sparsity:g}) * {p}) = 0; the sparsest "
            f"level is k = 1, a sparsity of 1 - 1/p = {1 - 1 / p:.4g} (any target up to {1 - 0.5 / p:.4g} rounds to it)"
        )
    return k


# -- records ----------------------------------------------------------------------------------
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
        Cumulative percentage of explained variance of the loadings' span (:func:`spcakit.metrics.cpev`).
    cpev_ratio
        ``cpev`` over dense PCA's CPEV for the same ``r`` (the path's ceiling): at most 1.
    additional_variance
        The variance each loading adds to the previous ones (Mackey, §2.3.3).
    nor
        Nonorthogonality: mean absolute cosine between distinct loadings.
    loss, normalized_loss
        The encoders' reconstruction loss and its ratio to PCA's (``None`` without that plugin).
    seconds, iterations
        The fit's time (its driver's) and iterations.
    warm
        Whether the fit started from the previous level's loadings.
    result
        The fit's :class:`~spcakit.state.Result`, loadings included (its metrics are the path's).
    """

    level: int | float
    nz: int
    pattern: tuple[int, ...]
    cpev: float
    cpev_ratio: float
    additional_variance: tuple[float, ...]
    nor: float
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
            loss=_optional_float(m.get("loss")), normalized_loss=_optional_float(m.get("normalized_loss")),
            seconds=float(result.seconds), iterations=int(result.iterations), warm=warm, result=result,
        )  # fmt: skip


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _reached(value: float, threshold: float, ceiling: float) -> bool:
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
        ``seconds``, ``iterations``, ``warm``, and ``additional_variance_1`` .. ``_r``."""
        losses = any(level.loss is not None for level in self.levels)
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
            rows.append(row)
        return rows

    def frame(self) -> Any:
        """The rows of :meth:`to_rows` as a pandas DataFrame indexed by the level (``k`` or ``lam``).

        Needs pandas (``pip install 'spcakit[pandas]'``); raises :class:`ImportError` saying so without it.
        """
        pandas = _import_pandas("SparsityPath.frame()")
        return pandas.DataFrame(self.to_rows()).set_index(self.knob)

    def to_csv(self, file: str | Path | None = None) -> str:
        """The rows of :meth:`to_rows` as CSV (a header, then one line per level; numbers written so that they
        read back exactly, a missing loss as an empty cell); with ``file``, also written there atomically
        (:func:`spcakit.output.write_output`). Returns the text."""
        return _rows_csv(self.to_rows(), file)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit path --json``."""
        first = self.levels[0].result
        return {
            "method": self.method,
            "data": self.source,
            "r": self.r,
            "p": self.p,
            "knob": self.knob,
            "ceiling": self.ceiling,
            "warm_start": self.warm_start,
            "warm_start_note": self.warm_start_note,
            "auto": self.auto,
            "stopped_early": self.stopped_early,
            "stop_note": self.stop_note,
            "warnings": list(dict.fromkeys(w for level in self.levels for w in level.result.warnings)),
            "levels": [
                {self.knob: lv.level, "nz": lv.nz, "pattern": list(lv.pattern), "cpev": lv.cpev, "cpev_ratio": lv.cpev_ratio,
                 "nor": lv.nor, "additional_variance": list(lv.additional_variance), "loss": lv.loss,
                 "normalized_loss": lv.normalized_loss, "seconds": lv.seconds, "iterations": lv.iterations, "warm": lv.warm}
                for lv in self.levels
            ],  # fmt: skip
            "seed": self.seed,
            "spcakit_version": first.version,
            "input": None if first.input is None else first.input.to_dict(),
        }

    def target(self, *, cpev: float | None = None, sparsity: float | None = None) -> PathLevel:
        """The level of this path that meets a target (no new fit).

        ``cpev=F``: of the levels whose CPEV is at least ``F`` times the ceiling (up to
        :data:`CPEV_RTOL`), the smallest ``k`` - or on a λ grid, the one with the fewest nonzeros
        (the first in the grid at a tie). ``sparsity=S``: the level
        ``k = round((1 - S) p)`` (:func:`k_for_sparsity`), which must be in the grid.

        Raises
        ------
        InvalidParameterError
            Neither or both targets, a target out of range, a CPEV that no level reaches (the
            message names the best level), a sparsity level not in the grid.
        """
        fraction = _check_targets(cpev, sparsity)
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
        reaching = [lv for lv in self.levels if _reached(lv.cpev, threshold, self.ceiling)]
        if not reaching:
            best = max(self.levels, key=lambda lv: lv.cpev)
            raise InvalidParameterError(_unreachable(fraction, self.ceiling, best.cpev, f"{self.knob} = {best.level}",
                                                     f"the levels of this path ({self.knob} = {_span(self)})"))
        if self.knob == "k":
            return min(reaching, key=lambda lv: lv.level)
        return min(reaching, key=lambda lv: lv.nz)  # min keeps the first of equals

    def plot(self, **kwargs: Any) -> Any:
        """CPEV against the level with the PCA ceiling: :func:`spcakit.plotting.plot_tradeoff` (needs
        ``spcakit[plot]``); keyword arguments go to it (``ax``, ``title``, ``xscale``, ...). Returns the figure."""
        from spcakit import plotting

        options: dict[str, Any] = {"ceiling": self.ceiling, "label": self.method}
        if self.knob == "lam":
            options["xlabel"] = "λ"
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


def _rows_csv(rows: list[dict[str, Any]], file: str | Path | None = None) -> str:
    """``rows`` (dictionaries with the same keys) as CSV: a header, then one line per row, numbers written so
    that they read back exactly and ``None`` as an empty cell; with ``file``, also written there atomically
    (:func:`spcakit.output.write_output`, never over an input). Returns the text."""
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


# -- the path ---------------------------------------------------------------------------------
def pca_ceiling(problem: Problem, r: int) -> float:
    r"""Dense PCA's CPEV for ``r`` loadings: :math:`\sum_{i=1}^r \lambda_i(C) / \operatorname{tr} C`."""
    trace = problem.covariance.trace()
    if not trace > 0:
        raise InvalidDataError("the covariance has zero trace (every variable is constant): there is no variance to explain")
    return float(np.sum(problem.covariance.top_eigenvalues(r)) / trace)


def _method_spec(method: str | MethodSpec | None, registry: Registry) -> MethodSpec:
    """The spec :func:`spcakit.fit` would run for ``method``."""
    if method is None:
        spec = registry.default_method()
        if spec is None:
            raise UnknownNameError("no method named and no plugin declares a default composition; name a method")
        return spec
    spec = registry.method(method) if isinstance(method, str) else method
    if not isinstance(spec, MethodSpec):
        raise UnknownNameError(f"method must be a name or a MethodSpec; got {type(method).__name__}")
    return spec


def warm_start_parameter(
    spec: MethodSpec, registry: Registry, params: Mapping[str, Any] | None = None
) -> tuple[str | None, str]:
    """``(parameter, note)``: the initializer parameter a level of ``spec`` warm-starts through, or ``None``,
    and why, in words (see the module's description for the rule)."""
    info = registry.part("initializer", spec.initializer.name)
    accepted = info.parameters()
    if WARM_START_PARAMETER not in accepted:
        return None, f"no: its initializer {info.name!r} takes no start ({WARM_START_PARAMETER})"
    if registry.part("driver", spec.driver).cls.deflates:
        return None, f"no: its driver {spec.driver!r} deflates, starting every component afresh"
    given = set(spec.initializer.params)
    for key in params or {}:
        role, _, bare = key.rpartition(".")
        if role in ("", "initializer") and bare in accepted:
            given.add(bare)
    if given:
        return None, f"no: the initializer {info.name!r} is set ({', '.join(sorted(given))})"
    return (
        f"initializer.{WARM_START_PARAMETER}",
        f"yes: each level starts from the previous level's loadings ({info.name} {WARM_START_PARAMETER})",
    )


def _path_metrics(registry: Registry) -> list[str]:
    names = {m.name for m in registry.metrics()}
    return [*PATH_METRICS, *(name for name in LOSS_METRICS if name in names)]


def _with_level(exc: Exception, knob: str, level: Any) -> Exception:
    """``exc`` with the level named first, for the errors whose message is all they carry."""
    if type(exc) in (InvalidParameterError, InvalidDataError, ZeroLoadingError):
        return type(exc)(f"{knob} = {level}: {exc}")
    return exc


def path(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int = 2,
    *,
    k: Any = None,
    lam: Any = None,
    warm_start: bool = False,
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_level: Callable[[PathLevel], None] | None = None,
    registry: Registry | None = None,
    **fit_kwargs: Any,
) -> SparsityPath:
    r"""Fit ``method`` at a grid of sparsity levels: the trade-off between sparsity and explained variance.

    Parameters
    ----------
    data, method, r
        As for :func:`spcakit.fit`; the data are read (and standardised, columns chosen) once.
    k
        The grid of ``k`` (nonzero variables per loading, :func:`spcakit.fit`'s knob): a sequence
        of integers in :math:`[1, p]`, text (``"1:13"``, ``"1:p"``, ``"2:12:2"``, ``"2,4,6"``;
        :func:`parse_k_levels`), or ``"auto"`` (the default when neither ``k`` nor ``lam`` is
        given). The levels run in increasing order. ``auto`` is every ``k`` from 1 to ``p`` (to the
        number of columns that vary, when some are constant: a ``k`` above it is lowered to it), or
        :data:`MAX_AUTO_LEVELS` of them log-spaced for larger ``p`` (:func:`auto_levels`); it
        starts at ``r`` for the methods that refuse ``k < r`` (FSPCA's shared support, the batch
        encoder) and stops at the first level whose CPEV reaches PCA's (up to :data:`CPEV_RTOL`), or
        before the first level above it that the method refuses (:attr:`SparsityPath.stop_note`).
    lam
        Instead of ``k``: the grid of the method's λ (:func:`parse_lam_levels`), run in the order
        given.
    warm_start
        Start each level from the previous level's loadings where the method allows it (see the
        module's description: with the built-in plugins, ``fspca-ipu`` only, faster but with a
        lower CPEV at many levels; the other methods start every level afresh whatever this
        says). Off by default: each level is then ``spcakit.fit`` at that level.
    seed
        The seed of every level's fit (the same for all, so each level is reproducible alone).
    covariance, center, standardize, feature_names, columns, drop
        How the data are read, as for :func:`spcakit.fit`.
    on_level
        Called with each :class:`PathLevel` when it is done (for progress displays).
    registry
        The registry to look names up in.
    **fit_kwargs
        The rest of :func:`spcakit.fit`'s arguments (``truncator``, ``deflator``, ``stopper``,
        ``refiner``, ``on_step``, part parameters); not ``metrics``: the path computes the ones
        it reports, and only those.

    Returns
    -------
    SparsityPath
        The levels with their criteria and results, and the PCA ceiling.

    Raises
    ------
    InvalidParameterError
        Both ``k`` and ``lam``, a bad grid (an entry outside :math:`[1, p]`, not an integer, an
        empty range), a method that takes no ``k`` with a ``k`` grid; a level the method refuses
        is named first in the message (``k = 2: ...``).

    Examples
    --------
    >>> p = spcakit.path("builtin:pitprops", "spcart", r=6, k="1:13")  # doctest: +SKIP
    >>> p.frame()[["nz", "cpev", "cpev_ratio"]]                       # doctest: +SKIP
    >>> p.plot()                                                      # doctest: +SKIP
    """
    registry = registry or get_registry()
    if "metrics" in fit_kwargs:
        raise InvalidParameterError(
            "path computes the metrics it reports (nz, pattern, cpev, nor, additional_variance and the encoders' "
            "losses); drop metrics=, and fit a chosen level with spcakit.fit for others"
        )
    if k is not None and lam is not None:
        raise InvalidParameterError("give the grid as k (nonzeros per loading) or as lam (the method's λ), not both")
    if not isinstance(warm_start, bool | np.bool_):
        raise InvalidParameterError(f"warm_start must be True or False; got {warm_start!r}")
    spec = _method_spec(method, registry)
    problem = as_problem(data, covariance=covariance, center=center, standardize=standardize,
                         feature_names=feature_names, columns=columns, drop=drop)  # fmt: skip
    r = check_r(r, problem)
    ceiling = pca_ceiling(problem, r)
    knob = "k" if lam is None else "lam"
    if knob == "k":
        _check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    grid = parse_k_levels(AUTO if k is None else k, problem.p) if lam is None else parse_lam_levels(lam)
    auto = grid == AUTO
    if warm_start:
        parameter, note = warm_start_parameter(spec, registry, fit_kwargs)
    else:
        parameter, note = None, "off (each level starts as spcakit.fit does)"
    metrics = _path_metrics(registry)

    def fit_level(level: Any, previous: PathLevel | None) -> PathLevel:
        knob_value = {knob: level}
        if parameter is not None and previous is not None:  # the rows of the columns that vary: what the method sees
            start = {parameter: previous.result.loadings[problem.varying_columns].tolist()}
            try:
                result = fit(problem, spec, r, seed=seed, metrics=metrics, registry=registry, **knob_value, **start,
                             **fit_kwargs)  # fmt: skip
                return PathLevel.from_result(level, result, ceiling, warm=True)
            except InvalidParameterError:
                pass  # the start is unusable (e.g. its columns are dependent): this level starts afresh
        try:
            result = fit(problem, spec, r, seed=seed, metrics=metrics, registry=registry, **knob_value, **fit_kwargs)
        except (InvalidParameterError, InvalidDataError, ZeroLoadingError) as exc:
            raise _with_level(exc, knob, level) from None
        return PathLevel.from_result(level, result, ceiling, warm=False)

    levels: list[PathLevel] = []
    stop_note = ""
    if auto:
        low, first = _lowest_level(lambda level: fit_level(level, None), r)
        values: list[Any] = auto_levels(problem.varying.p, low)  # up to the number of columns that vary
    else:
        values, first = list(grid), None  # type: ignore[arg-type]
    for index, value in enumerate(values):
        if index == 0 and first is not None:
            level = first
        else:
            try:
                level = fit_level(value, levels[-1] if levels else None)
            except InvalidParameterError as exc:
                if not (auto and levels):
                    raise
                stop_note = f"stopped after k = {levels[-1].level}: the method refuses {exc}"
                break
        levels.append(level)
        if on_level is not None:
            on_level(level)
        if auto and index + 1 < len(values) and _reached(level.cpev, ceiling, ceiling):
            stop_note = f"stopped at k = {value}: its CPEV reached PCA's"
            break
    return SparsityPath(
        method=spec.name, source=problem.source, r=r, p=problem.p, knob=knob, levels=tuple(levels), ceiling=ceiling,
        warm_start=parameter, warm_start_note=note, auto=auto, stop_note=stop_note, seed=levels[0].result.seed,
    )  # fmt: skip


def _check_takes_k(spec: MethodSpec, truncator: Any, registry: Registry) -> None:
    """Refuse a method that cannot read ``k`` (with the truncator the call gives) before fitting any level."""
    formed = configure(spec, truncator=truncator, registry=registry)
    if not takes_k(formed, registry):
        set_k(formed, 1, registry)  # raises the message that names the methods taking k


def _lowest_level(fit_level: Callable[[int], T], r: int) -> tuple[int, T]:
    """The smallest ``k`` the method takes, and what ``fit_level`` gives there: 1, else ``r`` (for the methods
    that refuse ``k < r``: FSPCA's shared support of ``m = r`` loadings, the batch encoder). An error at ``r``
    too is the error at 1."""
    try:
        return 1, fit_level(1)
    except InvalidParameterError as exc:
        if r == 1:
            raise
        try:
            return r, fit_level(r)
        except InvalidParameterError:
            raise exc from None


# -- targets ------------------------------------------------------------------------------------
def _check_targets(cpev: Any, sparsity: Any) -> float:
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


def _unreachable(fraction: float, ceiling: float, best: float, where: str, among: str) -> str:
    return (
        f"no level reaches the target CPEV >= {fraction:g} x PCA's = {fraction * ceiling:.6g} (PCA's CPEV {ceiling:.6g}); "
        f"the best reachable among {among} is {best:.6g} = {best / ceiling:.6g} x PCA's, at {where}; "
        f"give a target of at most {math.floor(best / ceiling * 1e4) / 1e4:g}"
    )


@attrs.frozen(kw_only=True)
class Target:
    """The level :func:`target_k` chose; unpacks as ``k, result = spcakit.target_k(...)``.

    Attributes
    ----------
    k
        The chosen number of nonzero variables per loading.
    result
        The fit at ``k``, with the metrics :func:`spcakit.fit` computes (all by default).
    kind, value
        The target: ``"cpev"`` and the fraction ``F`` of PCA's CPEV, or ``"sparsity"`` and the
        fraction ``S`` of zeros.
    cpev
        The CPEV at ``k``.
    ceiling
        Dense PCA's CPEV for the same ``r``.
    search
        How ``k`` was found: ``"linear scan"``, ``"bisection"``, ``"bisection, then linear scan"``
        (bisection met a CPEV that decreased with ``k`` and scanned instead), or ``"rounding"``
        (a sparsity target).
    fitted
        ``(k, CPEV)`` of every level fitted, by ``k``.
    """

    k: int
    result: Result = attrs.field(eq=False, repr=False)
    kind: str
    value: float
    cpev: float
    ceiling: float
    search: str
    fitted: tuple[tuple[int, float], ...] = ()

    def __iter__(self) -> Iterator[Any]:
        yield self.k
        yield self.result

    def describe(self) -> str:
        """One line: the target, the chosen ``k`` and its CPEV as a fraction of PCA's."""
        cpev = self.cpev
        if self.kind == "sparsity":
            head = (f"target sparsity {self.value:g} (fraction of zeros per loading): k = {self.k} = "
                    f"round((1 - {self.value:g}) * {self.result.p})")  # fmt: skip
        else:
            assumed = " if CPEV grows with k" if self.search == "bisection" else ""
            head = (f"target CPEV >= {self.value:g} x PCA's ({self.value * self.ceiling:.4f}): k = {self.k}, the smallest "
                    f"that reaches it{assumed} ({self.search}, {len(self.fitted)} level(s) fitted)")  # fmt: skip
        return f"{head}; CPEV {cpev:.4f} = {cpev / self.ceiling:.4f} x PCA's {self.ceiling:.4f}"

    def to_dict(self) -> dict[str, Any]:
        """The ``target`` object of ``spcakit run --json``."""
        return {
            "kind": self.kind, "value": self.value, "k": self.k, "cpev": self.cpev, "ceiling": self.ceiling,
            "search": self.search, "fitted": [{"k": k, "cpev": v} for k, v in self.fitted],
        }  # fmt: skip


def target_k(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int = 2,
    *,
    cpev: float | None = None,
    sparsity: float | None = None,
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    search: str = "auto",
    metrics: Sequence[str] | None = None,
    registry: Registry | None = None,
    **fit_kwargs: Any,
) -> Target:
    r"""The ``k`` that meets a sparsity target, and the fit there.

    ``sparsity=S`` (the fraction of zeros per loading) gives
    :math:`k = \lfloor (1-S)\,p + 1/2\rfloor` (:func:`k_for_sparsity`: the nearest integer,
    halves to the denser level).

    ``cpev=F`` gives the smallest ``k`` whose CPEV is at least :math:`F \cdot
    \mathrm{CPEV}_{\mathrm{PCA}}`, with :math:`0 < F \le 1`, comparing up to :data:`CPEV_RTOL`
    (:math:`10^{-9}` of PCA's CPEV: rounding only, so ``F = 1`` is met by ``k = p`` where that is
    PCA). The levels run from :math:`k_{\min}` (1, or ``r`` for the methods that refuse
    ``k < r``) to ``p`` (to the number of columns that vary, when some are constant); each is
    fitted at most once (cached) and cold, so that its CPEV does not
    depend on which levels were visited. ``search`` chooses how (:func:`smallest_reaching`):

    * ``"scan"``: every ``k`` from :math:`k_{\min}` up, stopping at the first that reaches the
      target: exact however CPEV varies with ``k``, at the cost of ``k - k_min + 1`` fits;
    * ``"bisection"``: verify the bracket (``k = p`` must reach the target, else the error names
      the best value fitted; :math:`k_{\min}` is the answer if it does), then halve it keeping
      :math:`\mathrm{CPEV}(lo) <` target :math:`\le \mathrm{CPEV}(hi)`: about
      :math:`\log_2 p + 2` fits. It assumes that CPEV grows with ``k``, which is not guaranteed
      (see the module's description): when the levels fitted contradict it (a CPEV lower than a
      smaller ``k``'s, beyond :data:`CPEV_RTOL`), it falls back to a linear scan of
      :math:`[k_{\min}, hi]` from below; a dip that it never sees can still make it return a
      larger ``k`` than the smallest (TPower on a spiked model with ``p = 40``: 11 instead of 7,
      as CPEV falls from 0.545 at ``k = 8`` to 0.488 at ``k = 10``);
    * ``"auto"`` (the default): ``"scan"`` when there are at most :data:`MAX_SCAN_LEVELS` levels,
      else ``"bisection"``.

    The other arguments are :func:`spcakit.fit`'s; ``metrics`` are those of the returned result
    (default: all), the search itself computes only CPEV.

    Returns
    -------
    Target
        ``k``, the result at ``k`` and how they were found; ``k, result = target_k(...)`` unpacks it.

    Raises
    ------
    InvalidParameterError
        Neither or both targets, a fraction out of range, a target that no level reaches (the
        message names the best reachable value), a method that takes no ``k``.
    """
    registry = registry or get_registry()
    fraction = _check_targets(cpev, sparsity)
    if search not in SEARCHES:
        raise InvalidParameterError(f"search must be one of {', '.join(SEARCHES)}; got {search!r}")
    spec = _method_spec(method, registry)
    _check_takes_k(spec, fit_kwargs.get("truncator"), registry)
    problem = as_problem(data, covariance=covariance, center=center, standardize=standardize,
                         feature_names=feature_names, columns=columns, drop=drop)  # fmt: skip
    r = check_r(r, problem)
    ceiling = pca_ceiling(problem, r)
    chosen_metrics = registry.metrics() if metrics is None else [registry.metric(name) for name in _names(metrics)]
    cache: dict[int, Result] = {}

    def evaluate(level: int) -> float:
        if level not in cache:
            cache[level] = fit(problem, spec, r, k=level, seed=seed, metrics=["cpev"], registry=registry, **fit_kwargs)
        return _cpev(cache[level])

    def done(level: int, search: str) -> Target:
        found = cache[level]
        result = attrs.evolve(found, metrics=compute_metrics(problem, found.loadings, chosen_metrics))
        kind, value = ("cpev", fraction) if cpev is not None else ("sparsity", float(sparsity))  # type: ignore[arg-type]
        return Target(k=level, result=result, kind=kind, value=value, cpev=_cpev(found), ceiling=ceiling, search=search,
                      fitted=tuple((lv, _cpev(cache[lv])) for lv in sorted(cache)))  # fmt: skip

    if sparsity is not None:
        level = k_for_sparsity(sparsity, problem.p)
        try:
            evaluate(level)
        except InvalidParameterError as exc:
            raise InvalidParameterError(
                f"target sparsity {sparsity:g} means k = round((1 - {sparsity:g}) * {problem.p}) = {level}: {exc}"
            ) from None
        return done(level, "rounding")

    low, _ = _lowest_level(evaluate, r)
    high = problem.varying.p  # no truncation: p, or the number of columns that vary when some are constant
    if search == "auto":
        search = "scan" if high - low + 1 <= MAX_SCAN_LEVELS else "bisection"
    found = smallest_reaching(evaluate, low, high, fraction * ceiling, CPEV_RTOL * ceiling, search)
    if found is None:
        best = max(cache, key=lambda level: _cpev(cache[level]))
        bound = f"k = p = {high}" if high == problem.p else f"k = {high}, the number of variables that vary,"
        raise InvalidParameterError(_unreachable(
            fraction, ceiling, _cpev(cache[best]), f"k = {best}",
            f"the levels fitted (k = {', '.join(map(str, sorted(cache)))}; {bound} is no truncation)",
        ))  # fmt: skip
    return done(*found)


def smallest_reaching(
    value: Callable[[int], float], low: int, high: int, threshold: float, tol: float, search: str = "bisection"
) -> tuple[int, str] | None:
    r"""The smallest integer level in ``[low, high]`` whose ``value`` is at least ``threshold - tol``, and how it was
    found; ``None`` when no level reaches it. Each level is evaluated at most once.

    ``search="scan"`` evaluates the levels from ``low`` up and stops at the first that reaches the threshold
    (exact whatever the shape of ``value``; ``"linear scan"``). ``search="bisection"`` first verifies the
    bracket (``high`` reaches the threshold, else ``None``; ``low`` is the answer if it reaches it), then halves
    it keeping :math:`value(lo) <` threshold :math:`\le value(hi)`, which assumes ``value`` non-decreasing; as
    soon as the values seen decrease somewhere (by more than ``tol``) that premise is false, and it scans
    ``[low, hi]`` from below instead (``"bisection, then linear scan"``).
    """
    if search not in SEARCHES[1:]:
        raise InvalidParameterError(f"search must be one of {', '.join(SEARCHES[1:])}; got {search!r}")
    seen: dict[int, float] = {}

    def reached(level: int) -> bool:
        if level not in seen:
            seen[level] = float(value(level))
        return seen[level] >= threshold - tol

    if search == "scan":
        return next(((level, "linear scan") for level in range(low, high + 1) if reached(level)), None)
    if not reached(high):
        return None
    if reached(low):
        return low, "bisection"
    lo, hi = low, high
    while hi - lo > 1:
        mid = (lo + hi) // 2
        mid_reached = reached(mid)
        ordered = [seen[level] for level in sorted(seen)]
        if any(b < a - tol for a, b in zip(ordered, ordered[1:])):  # not monotone: bisection's premise is false
            return next(level for level in range(low, hi + 1) if reached(level)), "bisection, then linear scan"
        lo, hi = (lo, mid) if mid_reached else (mid, hi)
    return hi, "bisection"


def _cpev(result: Result) -> float:
    return float(result.metrics["cpev"])


def _names(metrics: Any) -> list[str]:
    if isinstance(metrics, str):
        return [metrics]
    return list(metrics)
