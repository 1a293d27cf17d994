"""Values JSON can hold: what plugins hand over (sets, NumPy numbers, non-finite floats) made plain JSON data
(:func:`json_value`), or refused naming where (:class:`NotJsonError`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any


class NotJsonError(TypeError):
    """A value :func:`json_value` cannot turn into JSON; ``where`` says which part of it (``[2]``, ``.name``)."""

    def __init__(self, value: Any, where: str) -> None:
        self.value, self.where = value, where
        super().__init__(f"{where or 'the value'} is a {type(value).__name__}, which JSON cannot hold")


def json_value(value: Any, on_non_finite: Callable[[float], None] | None = None, where: str = "") -> Any:
    """``value`` as plain JSON data: ``None``, booleans, integers, finite floats, strings, lists, string-keyed tables.

    Tuples become lists; sets and frozensets sorted lists (by value, else by ``repr``); NumPy numbers, booleans
    and arrays their Python values and nested lists. A NaN or infinite float becomes ``None`` (JSON's
    ``null``) after ``on_non_finite(value)`` is called, when given. Anything else (an object, bytes, a table
    with keys that are not strings) raises :class:`NotJsonError` naming where it is.
    """
    import numpy as np  # noqa: PLC0415 - numpy is imported by every command already

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
        if not isinstance(value, (bool, int, float, str)):
            raise NotJsonError(value, where)
        return json_value(value, on_non_finite, where)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        if on_non_finite is not None:
            on_non_finite(value)
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (set, frozenset)):
        try:
            value = sorted(value)
        except TypeError:
            value = sorted(value, key=repr)
    if isinstance(value, (list, tuple)):
        return [json_value(v, on_non_finite, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        table = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJsonError(key, f"{where} key {key!r}")
            table[key] = json_value(item, on_non_finite, f"{where}.{key}")
        return table
    raise NotJsonError(value, where)
