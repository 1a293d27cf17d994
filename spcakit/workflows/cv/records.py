"""The records of a cross-validation: one level (:class:`CVLevel`), all of them (:class:`CrossValidation`),
and the choice of a level by a rule (:func:`choose_level`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.workflows.paths.records import rows_csv
from spcakit.workflows.results import Result, import_pandas

#: The rules that choose a level from the curve: the least mean error, or the one-standard-error rule.
RULES = ("min", "1se")


def choose_level(mean_error: Any, std_error: Any, sparseness: Any, rule: str = "min") -> tuple[int, int]:
    """``(chosen, least)``: the positions of the chosen level and of the level of least mean error.

    ``sparseness`` orders the levels from the sparsest (smallest value first; ``k``, or the mean number of
    nonzeros), ties going to the earlier position. ``rule="min"`` chooses the least mean error (the sparsest
    of equals); ``rule="1se"`` the sparsest level whose mean error is at most the least plus its standard
    error. See the module's description.
    """
    check_rule(rule)
    mean = np.asarray(mean_error, dtype=float)
    order = sorted(range(mean.size), key=lambda i: (float(sparseness[i]), i))  # sparsest first
    least = min(order, key=lambda i: mean[i])  # min keeps the first (sparsest) of equals
    if rule == "min":
        return least, least
    bound = mean[least] + float(np.asarray(std_error, dtype=float)[least])
    return next(i for i in order if mean[i] <= bound), least


def check_rule(rule: Any) -> None:
    if rule not in RULES:
        raise InvalidParameterError(
            f"rule must be 'min' (the level of least mean held-out error) or '1se' (the sparsest level within one "
            f"standard error of that least error); got {rule!r}"
        )


@attrs.frozen(kw_only=True)
class CVLevel:
    """One level of a cross-validation, as :func:`cross_validate` hands it to ``on_level``.

    Attributes
    ----------
    level
        The sparsity level: ``k`` or λ.
    mean_error, std_error
        The mean held-out error over the folds, and its standard error :math:`s/\\sqrt K`.
    fold_errors
        The held-out error of each fold.
    nz
        The mean number of nonzero loadings over the folds' fits.
    """

    level: int | float
    mean_error: float
    std_error: float
    fold_errors: tuple[float, ...]
    nz: float


def _array(value: Any) -> np.ndarray:
    array = np.array(value)
    array.flags.writeable = False
    return array


_ARRAY = {"converter": _array, "eq": attrs.cmp_using(eq=np.array_equal)}


@attrs.frozen(kw_only=True, repr=False)
class CrossValidation:
    """The cross-validation curve of one method, the level it chose and the refit there: what
    :func:`cross_validate` returns.

    Attributes
    ----------
    method
        The method's name.
    source
        Where the data came from (a path, ``builtin:...``; empty for arrays).
    r, p, n_samples
        Number of loadings, of variables and of rows.
    knob
        ``"k"`` (nonzeros per loading) or ``"lam"`` (the method's λ).
    levels
        The levels, in the order fitted: increasing ``k``, or λ in the order given.
    mean_error, std_error
        Per level: the mean held-out error over the folds, and its standard error :math:`s/\\sqrt K`.
    fold_errors
        The held-out error of every level (rows) in every fold (columns).
    nz
        Per level: the mean number of nonzero loadings over the folds' fits.
    chosen
        The level the rule chose.
    least
        The level of least mean error (the one ``rule="min"`` chooses).
    rule
        ``"min"`` or ``"1se"``.
    folds
        The number of folds ``K``.
    fold_sizes
        The number of held-out rows of each fold.
    seed
        The seed of the shuffle and of every fit.
    auto
        Whether the grid was ``auto``.
    stop_note
        Why an ``auto`` grid stopped before its last level, in words (empty when it did not): a ``k``
        the method refuses on the training rows (the iterative encoder's ``k`` is at most the rank of
        its residual, which is lower on fewer rows).
    warnings
        Columns that vary in the data but are constant among a fold's training rows (rare values):
        they get zero loadings in that fold's fits and their held-out entries are predicted by the
        training means. Each is also issued as a :class:`~spcakit.core.errors.ConstantColumnWarning`;
        the columns constant in all the rows are in the refit's ``result.warnings``.
    result
        The method fitted on all the rows at the chosen level.
    """

    method: str
    source: str
    r: int
    p: int
    n_samples: int
    knob: str
    levels: np.ndarray = attrs.field(**_ARRAY)
    mean_error: np.ndarray = attrs.field(**_ARRAY)
    std_error: np.ndarray = attrs.field(**_ARRAY)
    fold_errors: np.ndarray = attrs.field(**_ARRAY)
    nz: np.ndarray = attrs.field(**_ARRAY)
    chosen: int | float
    least: int | float
    rule: str
    folds: int
    fold_sizes: tuple[int, ...]
    seed: int
    auto: bool = False
    stop_note: str = ""
    warnings: tuple[str, ...] = ()
    result: Result = attrs.field(eq=False)

    def __len__(self) -> int:
        return len(self.levels)

    def __iter__(self) -> Iterator[CVLevel]:
        for i in range(len(self.levels)):
            yield self._level(i)

    def __repr__(self) -> str:
        values = self.levels.tolist()
        span = f"{values[0]}..{values[-1]}" if len(values) > 1 else str(values[0])
        return (
            f"CrossValidation(method={self.method!r}, r={self.r}, p={self.p}, {self.knob}={span} ({len(values)} levels), "
            f"folds={self.folds}, rule={self.rule!r}, chosen={self.chosen!r})"
        )

    def _level(self, i: int) -> CVLevel:
        return CVLevel(level=self.levels[i].item(), mean_error=float(self.mean_error[i]),
                       std_error=float(self.std_error[i]), fold_errors=tuple(self.fold_errors[i].tolist()),
                       nz=float(self.nz[i]))  # fmt: skip

    def level(self, value: int | float) -> CVLevel:
        """The level ``value`` (a ``k`` or a λ of the grid) with its errors."""
        for i, level in enumerate(self.levels.tolist()):
            if level == value:
                return self._level(i)
        raise InvalidParameterError(
            f"{self.knob} = {value!r} is not a level of this cross-validation; its levels are {self.levels.tolist()}"
        )

    def describe(self) -> str:
        """One line: the rule, the chosen level with its error, and the level of least error when another."""
        chosen = self.level(self.chosen)
        why = ("the least mean held-out error" if self.rule == "min"
               else "the sparsest level within one standard error of the least")  # fmt: skip
        line = (f"rule {self.rule} ({why}): {self.knob} = {shown(self.chosen)}, mean held-out error "
                f"{chosen.mean_error:.4f} ± {chosen.std_error:.4f} (SE, {self.folds} folds)")  # fmt: skip
        if self.least != self.chosen:
            least = self.level(self.least)
            line += f"; the least is {least.mean_error:.4f} ± {least.std_error:.4f} at {self.knob} = {shown(self.least)}"
        return line

    def to_rows(self) -> list[dict[str, Any]]:
        """One flat dictionary per level (the CSV's rows and the DataFrame's): the level, ``mean_error``,
        ``std_error``, ``nz``, ``least`` and ``chosen`` (booleans), and ``fold_1`` .. ``fold_K``."""
        rows = []
        for i, level in enumerate(self.levels.tolist()):
            row: dict[str, Any] = {
                self.knob: level, "mean_error": float(self.mean_error[i]), "std_error": float(self.std_error[i]),
                "nz": float(self.nz[i]), "least": level == self.least, "chosen": level == self.chosen,
            }  # fmt: skip
            row.update({f"fold_{f + 1}": float(e) for f, e in enumerate(self.fold_errors[i])})
            rows.append(row)
        return rows

    def frame(self) -> Any:
        """The rows of :meth:`to_rows` as a pandas DataFrame indexed by the level (``k`` or ``lam``).

        Needs pandas (``pip install -e '.[pandas]'``); raises :class:`ImportError` saying so without it.
        """
        pandas = import_pandas("CrossValidation.frame()")
        return pandas.DataFrame(self.to_rows()).set_index(self.knob)

    def to_csv(self, file: str | Path | None = None) -> str:
        """The rows of :meth:`to_rows` as CSV (a header, then one line per level; numbers written so that they
        read back exactly); with ``file``, also written there atomically (:func:`spcakit.output.files.write_output`).
        Returns the text."""
        return rows_csv(self.to_rows(), file)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``spcakit cv --json``: the curve, the choice and the refit result (as ``spcakit run
        --json`` writes it)."""
        return {
            "method": self.method,
            "data": self.source,
            "r": self.r,
            "p": self.p,
            "n_samples": self.n_samples,
            "knob": self.knob,
            "scheme": "ekf: K-fold over rows, each held-out entry predicted from its row's other variables",
            "levels": self.levels.tolist(),
            "mean_error": self.mean_error.tolist(),
            "std_error": self.std_error.tolist(),
            "fold_errors": self.fold_errors.tolist(),
            "nz": self.nz.tolist(),
            "least": self.least,
            "chosen": self.chosen,
            "rule": self.rule,
            "folds": self.folds,
            "fold_sizes": list(self.fold_sizes),
            "seed": self.seed,
            "auto": self.auto,
            "stop_note": self.stop_note,
            "warnings": list(self.warnings),
            "result": self.result.to_dict(),
        }

    def plot(self, **kwargs: Any) -> Any:
        """The curve with its standard errors and the chosen level: :func:`spcakit.plotting.plot_cv` (needs
        ``spcakit[plot]``); keyword arguments go to it (``ax``, ``title``, ``xscale``, ...). Returns the figure."""
        from spcakit import plotting

        options: dict[str, Any] = {"chosen": self.chosen}
        if self.knob == "lam":
            options["xlabel"] = "λ"
        options.update(kwargs)
        return plotting.plot_cv(self.levels, self.mean_error, self.std_error, **options)


def shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
