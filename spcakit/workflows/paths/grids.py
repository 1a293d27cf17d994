"""The sparsity levels of a path: grids of ``k`` (``1:13``, ``auto``) and of the papers' λ."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from spcakit.workflows.configure import K_MEANING
from spcakit.core.errors import InvalidParameterError

#: The grid that covers ``k`` from its smallest valid value to ``p`` (log-spaced above :data:`MAX_AUTO_LEVELS`).
AUTO = "auto"


#: The ``auto`` grid has at most this many levels.
MAX_AUTO_LEVELS = 30


#: How a grid is written, for messages.
K_GRID_FORMS = "FROM:TO (e.g. 1:13, or 1:p up to p), FROM:TO:STEP, a list (2,4,6), or auto"



def integer_or_none(value: Any) -> int | None:
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
    value = integer_or_none(_number(word))
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
            for bound in (start, stop):  # before the grid is built: TO may be any size
                if not 1 <= bound <= p:
                    raise InvalidParameterError(
                        f"k = {bound} in the grid {levels!r} is not a sparsity level: k ({K_MEANING}) is an integer "
                        f"in [1, p] = [1, {p}]; write the grid as {K_GRID_FORMS}"
                    )
            grid = range(start, stop + 1, step)
        else:
            items = [item.strip() for item in text.strip("[]").split(",")]
            if not all(items):
                raise InvalidParameterError(f"k grid {levels!r}: an empty entry; write the grid as {K_GRID_FORMS}")
            grid = [p if item.lower() == "p" else _number(item) for item in items]
    elif integer_or_none(levels) is not None:
        grid = [levels]
    elif isinstance(levels, np.ndarray):
        grid = levels.ravel().tolist()
    if not isinstance(grid, Sequence) or isinstance(grid, str | bytes):
        raise InvalidParameterError(f"k must be a grid of sparsity levels: {K_GRID_FORMS}; got {levels!r}")
    if not grid:
        raise InvalidParameterError(f"the k grid is empty; give at least one level: {K_GRID_FORMS}")
    values = []
    for entry in grid:
        value = integer_or_none(entry)
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
