"""The Python API's arguments, checked where they enter.

:func:`spcakit.fit`, :func:`spcakit.path`, :func:`spcakit.cross_validate` and :class:`spcakit.SparsePCA` check the
arguments they share before any work, so that a wrong type (a string for a list of names, a number for a
callback) is refused by name rather than failing deep inside the run, blaming a part.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from spcakit.core.errors import InvalidParameterError
from spcakit.core.registry import Registry


# -- the Python API's arguments, where they enter -------------------------------------------------------------
# spcakit.fit, spcakit.path, spcakit.cross_validate and SparsePCA check the arguments they share before any work,
# so that a wrong type (a string for a list of names, a number for a callback) is refused by name rather than
# failing deep inside the run, blaming a part.
def _kind(value: Any) -> str:
    text = repr(value)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({type(value).__name__})"


def _names(one_allowed: bool) -> Callable[[str, Any], None]:
    """A list of names: a sequence (list, tuple, array, index), never a string split into letters, a set or a
    table; ``one_allowed``: also one name as a string (``columns``, ``drop``, which take names alone)."""

    def check(name: str, value: Any) -> None:
        if value is None or (one_allowed and isinstance(value, str)):
            return
        ordered = not isinstance(value, (str, bytes, Mapping, set, frozenset)) and isinstance(value, Iterable)
        entries = list(value) if ordered and iter(value) is not value else None
        if one_allowed:
            if entries is None or not all(isinstance(entry, (str, np.str_)) for entry in entries):
                raise InvalidParameterError(
                    f"{name} takes column names: a name or a list of names, e.g. {name}=['age', 'income']; got {value!r}"
                )
            return
        advice = f"give a list of names, one per variable, e.g. {name}=['height', 'weight']"
        if isinstance(value, (str, bytes)):
            raise InvalidParameterError(
                f"{name} must be a list of names, not a string (it would be read as one name per letter); "
                f"{advice}; got {_kind(value)}"
            )
        if entries is None:
            raise InvalidParameterError(f"{name} must be an ordered list of names; {advice}; got {_kind(value)}")
        for entry in entries:
            if not isinstance(entry, (str, np.str_)) and not (
                isinstance(entry, numbers.Number) and not isinstance(entry, (bool, np.bool_))
            ):
                raise InvalidParameterError(f"{name} must list names (strings); {advice}; it holds {_kind(entry)}")

    return check


def _callback(signature: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and not callable(value):
            raise InvalidParameterError(
                f"{name} must be a function, called as {signature}, or None; got {_kind(value)}"
            )

    return check


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False; got {_kind(value)}")


def _count(name: str, value: Any) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameterError(f"{name} (number of loadings) must be a positive integer; got {value!r}")


def _table(name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, Mapping) and all(isinstance(key, str) for key in value)):
        raise InvalidParameterError(
            f"{name} must be a mapping of part parameters, e.g. {{'stopper.tol': 1e-4}}, or None; got {value!r}"
        )


def _registry(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, Registry):
        raise InvalidParameterError(
            f"{name} must be a spcakit.core.registry.Registry (spcakit.get_registry()) or None; got {_kind(value)}"
        )


#: What each argument :func:`check_arguments` takes must be, by name.
ARGUMENT_CHECKS: dict[str, Callable[[str, Any], None]] = {
    "feature_names": _names(one_allowed=False),
    "columns": _names(one_allowed=True),
    "drop": _names(one_allowed=True),
    "on_step": _callback("on_step(component, n_components, iteration)"),
    "on_level": _callback("on_level(level)"),
    "center": _flag,
    "standardize": _flag,
    "covariance": _flag,
    "warm_start": _flag,
    "r": _count,
    "n_components": _count,
    "params": _table,
    "registry": _registry,
}


def check_arguments(**arguments: Any) -> None:
    """Refuse any of ``arguments`` (by name, as :data:`ARGUMENT_CHECKS` lists them) of the wrong type, before any work.

    Raises
    ------
    InvalidParameterError
        Naming the first argument that is wrong, what it got and what it takes.
    """
    for name, value in arguments.items():
        ARGUMENT_CHECKS[name](name, value)
