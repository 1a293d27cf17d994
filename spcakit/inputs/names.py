"""Variable names made unique: repeated names (probes of one gene in a gene table, a CSV header that names two columns
alike) are welcome, renamed the same way by every entry point (:func:`unique_names`)."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Sequence

__all__ = ["SHOWN_NAMES", "DuplicateNamesWarning", "unique_names"]


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
