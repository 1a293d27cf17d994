"""Choosing columns: ``columns=`` keeps the named columns, ``drop=`` removes some (an ID or label column).

A DataFrame is cut before its values are read, so the non-numeric columns it drops never need to be
numbers. A misspelt name is refused with the closest names (:func:`column_positions`).
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from spcakit.core.errors import InvalidParameterError, listed
from spcakit.inputs.checks import check_frame_order, check_names, label_text, numeric_array, pandas_class
from spcakit.inputs.csv_files import csv_layout

# -- choosing columns -----------------------------------------------------------------------------------
#: Column names a message lists before "and N more".
LISTED_NAMES = 12


def name_list(items: object, option: str) -> tuple[str, ...] | None:
    """``columns=``/``drop=`` as a tuple of names: one name (a string) or a sequence of them."""
    if items is None:
        return None
    if isinstance(items, (str, int, np.integer)) and not isinstance(items, bool):
        return (str(items),)
    if isinstance(items, Iterable) and not isinstance(items, (bytes, Mapping)):
        values = list(items)
        if all(isinstance(v, (str, int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
            return tuple(str(v) for v in values)
    raise InvalidParameterError(
        f"{option} takes column names: a name or a list of names, e.g. {option}=['age', 'income']; got {items!r}"
    )


def unknown_column_message(name: str, names: Sequence[str], option: str) -> str:
    """``option`` named ``name``, which is not among ``names``: say so, suggest close names, list the valid ones."""
    folded = [n for n in names if n.casefold() == name.casefold()]
    close = folded or difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"{option}: the data have no column {name!r}{hint} (the {len(names)} columns: {listed(names, limit=LISTED_NAMES)})"


def column_positions(
    names: Sequence[str], columns: Sequence[str] | None = None, drop: Sequence[str] | None = None
) -> list[int]:
    """The positions of the columns to use: those named in ``columns`` (all by default), in that
    order, less those named in ``drop``.

    Every name must be a column's (a misspelt one is refused with the closest
    names); a name given twice in ``columns``, and a selection that leaves no
    column, are refused too (:class:`~spcakit.core.errors.InvalidParameterError`).
    """
    position = {name: j for j, name in enumerate(names)}
    for option, given in (("columns", columns), ("drop", drop)):
        for name in given or ():
            if name not in position:
                raise InvalidParameterError(unknown_column_message(name, names, option))
    if columns is not None:
        twice = sorted(name for name, count in Counter(columns).items() if count > 1)
        if twice:
            raise InvalidParameterError(f"columns: {', '.join(map(repr, twice))} named more than once; name each column once")
    kept = list(columns) if columns is not None else list(names)
    dropped = set(drop or ())
    chosen = [position[name] for name in kept if name not in dropped]
    if not chosen:
        raise InvalidParameterError(
            f"no column is left after {'columns= and drop=' if columns is not None and drop else 'drop=' if drop else 'columns='}"
            f" ({len(names)} column(s): {', '.join(names[:LISTED_NAMES])}); keep at least one"
        )
    return chosen


def unread_columns(
    source: str | os.PathLike[str], columns: Sequence[str] | None, drop: Sequence[str] | None
) -> frozenset[str]:
    """The columns of a CSV/TSV ``source`` that need not be read as numbers: those dropped and those not kept.

    :func:`~spcakit.datasets.load_source` leaves their cells unread, so that they may hold text (labels,
    IDs); other sources need no such care (they hold numbers only).
    """
    unread = set(drop or ())
    path = Path(source)
    if columns is not None and path.suffix.lower() in (".csv", ".tsv") and path.is_file():
        try:
            unread |= set(csv_layout(path).names) - set(columns)
        except OSError:
            pass  # load_source says what is wrong with the file
    return frozenset(unread)


def _table_names(data: object, feature_names: Sequence[str] | None, p: int) -> tuple[str, ...]:
    """The names ``columns=``/``drop=`` refer to: ``feature_names``, a DataFrame's labels, or the default names."""
    if feature_names is None and pandas_class(data) == "DataFrame":
        feature_names = [label_text(label) for label in data.columns]  # type: ignore[attr-defined]
    return check_names(feature_names, p)  # unique, one per column


def selected_columns(
    data: object, covariance: bool, feature_names: Sequence[str] | None, columns: tuple[str, ...] | None,
    drop: tuple[str, ...] | None,
) -> tuple[object, tuple[str, ...] | None]:
    """The table with only the chosen columns (rows too, for a covariance), and their names.

    A DataFrame holding data is cut before its values are read, so that the
    non-numeric columns it drops (labels, IDs) never need to be numbers.
    """
    if pandas_class(data) == "DataFrame" and not covariance:
        names = _table_names(data, feature_names, data.shape[1])  # type: ignore[attr-defined]
        chosen = column_positions(names, columns, drop)
        return data.iloc[:, chosen], tuple(names[j] for j in chosen)  # type: ignore[attr-defined]
    if covariance:
        check_frame_order(data)
    what = "the covariance matrix" if covariance else "the data matrix"
    matrix, _ = numeric_array(data, what)
    if matrix.ndim != 2 or (covariance and matrix.shape[0] != matrix.shape[1]):
        return data, None  # not a table: the builder says what is wrong
    names = _table_names(data, feature_names, matrix.shape[1])
    chosen = column_positions(names, columns, drop)
    picked = matrix[np.ix_(chosen, chosen)] if covariance else matrix[:, chosen]
    return picked, tuple(names[j] for j in chosen)
