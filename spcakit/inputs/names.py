"""Variable names made unique: repeated names (probes of one gene in a gene table, a CSV header that names two columns
alike) are welcome, renamed the same way by every entry point (:func:`unique_names`)."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import warnings
from collections.abc import Iterator, Sequence

from spcakit.core.errors import InvalidDataError, InvalidParameterError

__all__ = ["DUPLICATE_NAMES", "SHOWN_NAMES", "DuplicateNamesWarning", "duplicate_names_policy", "unique_names"]

#: What to do with repeated variable names: make them unique (with a warning), or refuse them.
DUPLICATE_NAMES = ("rename", "error")

#: The policy of the input being read (:func:`duplicate_names_policy`): every entry point reads names through
#: :func:`unique_names`, so one setting reaches them all.
_POLICY: contextvars.ContextVar[str] = contextvars.ContextVar("spcakit_duplicate_names", default="rename")


def check_duplicate_names(policy: object) -> str:
    if policy not in DUPLICATE_NAMES:
        raise InvalidParameterError(
            f"duplicate_names must be 'rename' (repeated names become NAME-1, NAME-2, ..., with a warning) or 'error' "
            f"(refuse them); got {policy!r}"
        )
    return str(policy)


@contextlib.contextmanager
def duplicate_names_policy(policy: str) -> Iterator[None]:
    """Read the inputs of the ``with`` block under ``policy`` (:data:`DUPLICATE_NAMES`): ``"error"`` makes
    :func:`unique_names` refuse repeated names instead of renaming them."""
    token = _POLICY.set(check_duplicate_names(policy))
    try:
        yield
    finally:
        _POLICY.reset(token)


class DuplicateNamesWarning(UserWarning):
    """Some variables share a name: the later copies were renamed (:func:`unique_names`)."""


#: :func:`unique_names`' warning shows at most this many of the repeated names.
SHOWN_NAMES = 5


def unique_names(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` with every repeated name made unique, with a :class:`DuplicateNamesWarning`.

    The first column of a name keeps it; the later ones become ``NAME-1``, ``NAME-2``, ... in the order of the columns
    (a suffix a name already in ``names`` uses is skipped), so the renaming is the same on every run, as pandas'
    ``a.1`` or scanpy's ``var_names_make_unique``. Real gene tables repeat names (probes of one gene), so they are
    welcome; the warning says how many and how to choose names instead."""
    taken = set(names)
    seen: dict[str, int] = {}
    renamed: list[str] = []
    repeated: list[str] = []
    for name in names:
        if name not in seen:
            seen[name] = 0
            renamed.append(name)
            continue
        if seen[name] == 0:
            repeated.append(name)
        while True:
            seen[name] += 1
            candidate = f"{name}-{seen[name]}"
            if candidate not in taken:
                break
        taken.add(candidate)
        renamed.append(candidate)
    shown = ", ".join(repr(name.strip()) for name in repeated[:SHOWN_NAMES]) + (", ..." if len(repeated) > SHOWN_NAMES else "")
    copies = len(names) - len(seen)
    if repeated and _POLICY.get() == "error":
        raise InvalidDataError(
            f"{len(repeated)} variable name(s) are repeated ({shown}; {copies} later column(s) in all), and repeated "
            "names are refused here (duplicate_names='error', --duplicate-names error): make the names unique, or "
            "have them renamed NAME-1, NAME-2, ... in column order with a warning (the default, 'rename')"
        )
    warnings.warn(
        f"{len(repeated)} variable name(s) are repeated ({shown}): the {copies} later column(s) of those names were "
        "renamed NAME-1, NAME-2, ... in column order; to choose the names yourself, make them unique before the fit",
        DuplicateNamesWarning, stacklevel=_caller_level())
    return tuple(renamed)


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside spcakit (the user's call)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = inspect.stack(0)[2:]
    return 2 + next((i for i, f in enumerate(frames) if not os.path.abspath(f.filename).startswith(package)), 0)
