r"""Tuning a penalty to a sparsity: the GPower rows of a sweep (``spcakit reproduce NAME --tune``).

GPower is parametrised by a penalty :math:`\gamma`, not by a sparsity. For a sweep's series listed in
``sweep.tune`` (series → the parameter that holds :math:`\gamma`), the row at sparsity ``r`` takes the
*smallest* :math:`\gamma` in :math:`[0, 1)` (the densest loadings) for which every loading has at most ``r``
nonzeros: a grid of steps 0.02 brackets it, bisection narrows it, and it is rounded up to 6 significant
digits (kept only if still feasible). :func:`rewrite_spec` writes the values into the spec file in place.
"""

from __future__ import annotations

from functools import partial

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from spcakit.workflows.fit import fit

#: A paper's tables list the components in its method's order: every fit here keeps it.
paper_fit = partial(fit, order="method")
from spcakit.core.errors import SpcakitError, SpecError
from spcakit.output.files import write_output
from spcakit.inputs import as_problem
from spcakit.workflows.reproduce.common import fit_data
from spcakit.workflows.reproduce.sweeps import point, settings
from spcakit.workflows.reproduce.experiment_specs import ExperimentSpec


def densest_penalty(data: Any, method: str, parameter: str, r: int, k: int, steps: int = 30,
                    pinned: Mapping[str, Any] | None = None) -> float | None:
    """The smallest penalty in [0, 1) whose ``k`` loadings have at most ``r`` nonzeros each, or ``None``.

    Parameters
    ----------
    data
        What the rows are fitted on.
    method, parameter
        The method and its penalty parameter (``gpower-l0`` and ``penalty``).
    r
        The most nonzeros a loading may have.
    k
        The number of loadings.
    steps
        Bisection steps after the grid 0.02, 0.04, ..., 0.98 has bracketed the boundary.
    pinned
        Further fit keywords of every run (the row's other parameters).

    Returns
    -------
    float or None
        The penalty rounded up to 6 significant digits (if that is still feasible, else the bisection's
        bound); ``None`` when no penalty of the grid is feasible. A run that fails, or zeroes a whole loading,
        counts as infeasible.
    """
    def feasible(gamma: float) -> bool:
        try:
            result = paper_fit(data, method, r=k, **{parameter: gamma}, **(pinned or {}))
        except SpcakitError:
            return False
        return max(result.metrics["pattern"]) <= r

    lo, hi = 0.0, None
    for gamma in (i / 50 for i in range(1, 50)):
        if feasible(gamma):
            hi = gamma
            break
        lo = gamma
    if hi is None:
        return None
    for _ in range(steps):
        mid = (lo + hi) / 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    digits = 5 - math.floor(math.log10(hi))
    rounded = math.ceil(hi * 10**digits) / 10**digits
    return rounded if feasible(rounded) else hi


def tune_sweep(spec: ExperimentSpec, root: Path | None = None,
               on_value: Callable[[str, float | None], None] | None = None) -> dict[str, float | None]:
    """The tuned penalty of every row of a series in ``sweep.tune``, by row label (``None``: none is feasible).

    A row's other parameters (its ``tie_order``, say) are kept in every run; the experiment's ``overrides``
    are not applied, as the specs were first tuned without them.
    """
    sweep = settings(spec)
    if not sweep.tune:
        raise SpecError(f"{spec.source or spec.name}: sweep.tune names no series: nothing to tune")
    data = as_problem(fit_data(spec.data, root, spec.covariance))
    values: dict[str, float | None] = {}
    for row in spec.rows:
        series, r = point(row)
        parameter = sweep.tune.get(series)
        if parameter is None:
            continue
        pinned = {key: value for key, value in row.params.items() if key != parameter}
        values[row.label] = densest_penalty(data, row.method, parameter, r, spec.r, pinned=pinned)
        if on_value is not None:
            on_value(row.label, values[row.label])
    return values


def rewrite_spec(path: Path, spec: ExperimentSpec, values: Mapping[str, float | None]) -> list[str]:
    """Write the tuned ``values`` into the spec file at ``path``, in place; the labels of the rows left as they were.

    Each row's ``params = { PARAMETER = VALUE, ... }`` line (the first ``params`` line after its ``label``) gets
    the new value; a row with no feasible value, or whose line does not have that form, is left unchanged.
    """
    sweep = settings(spec)
    text = Path(path).read_text(encoding="utf-8")
    left = []
    for label, value in values.items():
        parameter = sweep.tune[label.rpartition(", r = ")[0]]
        pattern = re.compile(r'(label = "' + re.escape(label) + r'"\n(?:[^\[\n][^\n]*\n)*?params = \{ '
                             + re.escape(parameter) + r" = )[-+0-9.eE]+")
        if value is None or pattern.search(text) is None:
            left.append(label)
            continue
        new = repr(value)
        text = pattern.sub(lambda match, new=new: match.group(1) + new, text, count=1)
    write_output(Path(path), text)  # atomically: a failure leaves the spec as it was
    return left
