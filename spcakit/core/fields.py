r"""Validators and converters for part parameters (attrs fields).

A part is an attrs class whose fields are its parameters (see
:func:`spcakit.part`). Its fields use these helpers so that every part checks
its parameters the same way and says the same things to users::

    @spcakit.part("firm", lam="threshold")
    class FirmThreshold(spcakit.Truncator):
        threshold: float | None = attrs.field(default=None, validator=optional(number(0, 1, high_open=True)))
        ratio: float = attrs.field(default=2.0, validator=number(1, low_open=True))

Converters never raise: they turn what TOML and the command line give
(``5.0`` for 5, a list for a tuple) into the field's type when they can and
leave anything else unchanged for the validator to refuse. Validators raise
:class:`~spcakit.core.errors.InvalidParameterError` naming the part and the
parameter, what was given and what would be valid.

Checks that need the problem's dimension (a cardinality ``k <= p``) are
functions called from the part's ``check(p)`` or step:
:func:`check_cardinality`, :func:`refuse_zeroed_columns`.

:func:`check_arguments` checks the Python API's own arguments where they
enter (:func:`spcakit.fit`, :func:`spcakit.path`, :func:`spcakit.cross_validate`,
:class:`spcakit.SparsePCA`): types and callbacks, before any work.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import InvalidParameterError, ZeroLoadingError

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _where(instance: Any, attribute: attrs.Attribute[Any]) -> str:
    meta = getattr(type(instance), "__part__", None)
    owner = meta.name if meta is not None else type(instance).__name__
    return f"{owner}: {attribute.name}"


# -- converters (never raise) ---------------------------------------------------------------
def to_int(value: Any) -> Any:
    """``5.0 -> 5`` (and NumPy integers to ``int``); anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def to_float(value: Any) -> Any:
    """Real numbers (not booleans) to ``float``; anything else unchanged."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value


def to_int_or_tuple(value: Any) -> Any:
    """An integer, or a list of them (one per component) to a tuple of ``int``; anything else unchanged."""
    if isinstance(value, (list, tuple)):
        return tuple(to_int(v) for v in value)
    return to_int(value)


def to_tuple(value: Any) -> Any:
    """Lists (from TOML) to tuples, so that frozen parts stay hashable; anything else unchanged."""
    if isinstance(value, list):
        return tuple(value)
    return value


# -- validators ----------------------------------------------------------------------------
def number(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    hint: str = "",
) -> Validator:
    """A finite real number (not a boolean) in the interval ``[low, high]`` (ends open as asked)."""
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    left = "(" if low is None else left
    right = ")" if high is None else right
    span = f"{left}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{right}"

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))
        if ok:
            v = float(value)
            ok = (low is None or (v > low if low_open else v >= low)) and (high is None or (v < high if high_open else v <= high))
        if not ok:
            if low is None and high is None:
                what = "a finite number"
            elif high is None and low == 0 and low_open:
                what = "a positive number"
            elif high is None:
                what = f"a number {'>' if low_open else '>='} {low:g}"
            elif low is None:
                what = f"a number {'<' if high_open else '<='} {high:g}"
            else:
                what = f"a number in {span}"
            raise InvalidParameterError(
                f"{_where(instance, attribute)} must be {what}; got {value!r}{'; ' + hint if hint else ''}"
            )

    return validate


def positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A finite number > 0."""
    number(0, low_open=True)(instance, attribute, value)


def integer(low: int | None = None, high: int | None = None, *, hint: str = "") -> Validator:
    """An integer (not a boolean) in ``[low, high]``."""
    span = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if ok and ((low is not None and value < low) or (high is not None and value > high)):
            ok = False
        if not ok:
            what = {(1, None): "a positive integer", (0, None): "a non-negative integer", (None, None): "an integer"}.get(
                (low, high), f"an integer in {span}"
            )
            raise InvalidParameterError(
                f"{_where(instance, attribute)} must be {what}; got {value!r}{'; ' + hint if hint else ''}"
            )

    return validate


#: A positive integer (>= 1).
positive_int = integer(1)


def _is_int(value: Any, low: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low


def int_or_list(low: int = 1, *, hint: str = "") -> Validator:
    """An integer ``>= low``, or a non-empty tuple of them (one per component, e.g. ``k = [3, 5, 8]``)."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if _is_int(value, low) or (isinstance(value, tuple) and value and all(_is_int(v, low) for v in value)):
            return
        shown = list(value) if isinstance(value, tuple) else value
        what = "a positive integer" if low == 1 else f"an integer >= {low}"
        raise InvalidParameterError(
            f"{_where(instance, attribute)} must be {what} or a non-empty list of {what.split(' ', 1)[1]}s "
            f"(one per component){'; ' + hint if hint else ''}; got {shown!r}"
        )

    return validate


def boolean(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """``true`` or ``false`` (not 0/1 or a string)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{_where(instance, attribute)} must be true or false; got {value!r}")


def one_of(*choices: Any) -> Validator:
    """One of ``choices``."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            raise InvalidParameterError(
                f"{_where(instance, attribute)} must be one of {', '.join(map(str, choices))}; got {value!r}"
            )

    return validate


def optional(validator: Validator) -> Validator:
    """``None`` or what ``validator`` accepts."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            validator(instance, attribute, value)

    return validate


def index_list(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A sequence of distinct non-negative integers (0-based variable indices)."""
    ok = isinstance(value, Sequence) and not isinstance(value, (str, bytes))
    if ok:
        ok = all(isinstance(i, numbers.Integral) and not isinstance(i, bool) and i >= 0 for i in value)
        ok = ok and len(set(value)) == len(value)
    if not ok:
        raise InvalidParameterError(
            f"{_where(instance, attribute)} must list distinct non-negative variable indices (0-based); got {value!r}"
        )


# -- checks against the problem's dimension -----------------------------------------------------
def check_cardinality(k: Any, p: int, what: str, *, low: int = 1, hint: str = "") -> int:
    """``k`` as an integer in ``[low, p]``: a number of nonzeros (variables) per loading.

    ``None`` is refused with a message saying how to give it (``-k K``).
    """
    if k is None:
        raise InvalidParameterError(
            f"{what} needs the cardinality: -k K with K an integer in [{low}, {p}]{'; ' + hint if hint else ''}"
        )
    value = to_int(k)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= p:
        raise InvalidParameterError(
            f"{what}: the cardinality k must be an integer in [{low}, {p}]{'; ' + hint if hint else ''}; got {k!r}"
        )
    return value


def refuse_zeroed_columns(x: np.ndarray, z: np.ndarray, what: str, hint: str) -> np.ndarray:
    """Return ``x`` unless a truncation emptied a column of ``z`` that had a nonzero entry.

    Raises :class:`~spcakit.core.errors.ZeroLoadingError` naming the (1-based)
    loading, with ``hint`` saying which parameter values would keep it.
    """
    x2, z2 = x.reshape(x.shape[0], -1), np.asarray(z).reshape(np.shape(z)[0], -1)
    zeroed = np.nonzero(~np.any(x2 != 0, axis=0) & np.any(z2 != 0, axis=0))[0]
    if zeroed.size:
        raise ZeroLoadingError(f"{what} zeroed loading {int(zeroed[0]) + 1} entirely; {hint}")
    return x


__all__ = [
    "boolean", "check_cardinality", "index_list", "int_or_list", "integer", "number", "one_of", "optional", "positive",
    "positive_int", "refuse_zeroed_columns", "to_float", "to_int", "to_int_or_tuple", "to_tuple",
]  # fmt: skip
