"""Reading CSV and TSV tables: fast when they are clean, precise when they are not.

``.csv`` or ``.tsv`` - a text table whose first line names the columns.
The separator (comma, semicolon or tab) is read from the first lines;
decimals are written with a point. A first line of numbers only is
refused (a missing header would otherwise turn the first sample into
names). A first column is taken as row labels and dropped when its header
cell is empty, when the header has one cell fewer than the rows (R's
``write.table``), or when every one of its values is text (sample names,
dates). Lines holding nothing but separators and spaces are skipped.
Empty, missing (``NA``, ``NaN``) or non-numeric cells, and lines with the
wrong number of fields, are reported by line number and column name.
NumPy's ``loadtxt`` reads the numbers (each the double nearest its
digits); when it finds anything amiss, Python's ``csv`` module reads the
file again cell by cell to say where. pandas is never imported here.

Every failure is an :class:`~spcakit.core.errors.InvalidDataError` naming the file.
"""

from __future__ import annotations

import array
import csv
import io
import math
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from spcakit.core.errors import SHOWN, InvalidDataError, MissingValuesError
from spcakit.inputs.limits import check_declared_size

# -- CSV: the layout, read from the first lines ---------------------------------------------------------
#: Separators a CSV file may use; its first lines decide which.
CSV_SEPARATORS = (",", ";", "\t")
_SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
#: Non-blank lines after the header that decide the separator and whether the first column holds labels.
_SNIFF_LINES = 20
#: Cells that spreadsheets and statistics packages write for a missing value.
_MISSING_MARKERS = frozenset({"na", "nan", "n/a", "#n/a", "null", "none", "missing", ".", "-", "?"})


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _is_label(cell: str) -> bool:
    """Text that can only be a row label: not empty, not a missing-value marker, not a number (even with a decimal comma)."""
    text = cell.strip()
    return bool(text) and text.lower() not in _MISSING_MARKERS and not _is_number(text) and not _is_number(
        text.replace(",", ".", 1)
    )


def _is_blank(row: list[str]) -> bool:
    """A line with nothing but separators and spaces (spreadsheets write them for empty rows)."""
    return all(not cell.strip() for cell in row)


def _split(line: str, separator: str) -> list[str]:
    return next(csv.reader([line], delimiter=separator), [])


@attrs.frozen
class CsvLayout:
    """How a CSV file is laid out, as read from its first lines.

    Attributes
    ----------
    separator
        ``","``, ``";"`` or ``"\\t"``.
    header
        The header line's cells, stripped of spaces.
    labels
        Where a first column of row labels comes from: ``"none"``;
        ``"header"`` (its header cell is empty); ``"short"`` (the header has
        one cell fewer than the rows, as R's ``write.table`` writes); or
        ``"text"`` (its values are text in the first lines - confirmed on the
        whole file, else the column is data).
    header_lines
        Physical lines up to and including the header.
    data_offset
        Byte offset of the line after the header.
    """

    separator: str
    header: tuple[str, ...]
    labels: str
    header_lines: int
    data_offset: int

    @property
    def names(self) -> tuple[str, ...]:
        """The data columns' names."""
        return self.header[1:] if self.labels in ("header", "text") else self.header

    @property
    def fields(self) -> int:
        """Fields in every data line."""
        return len(self.header) + (self.labels == "short")

    @property
    def has_labels(self) -> bool:
        return self.labels != "none"

    @property
    def separated(self) -> str:
        return f"{_SEPARATOR_NAMES[self.separator]}-separated"


def _not_utf8(path: Path, line: int, raw: bytes, exc: UnicodeDecodeError) -> InvalidDataError:
    return InvalidDataError(
        f"{path}: line {line} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at position {exc.start + 1} of the line); "
        "save the file as UTF-8 ('CSV UTF-8' in a spreadsheet, or e.g. iconv -f latin1 -t utf-8)"
    )


def _csv_error(path: Path, line: int, exc: csv.Error) -> InvalidDataError:
    if "field limit" in str(exc):
        return InvalidDataError(
            f"{path}: line {line}: a field is longer than {csv.field_size_limit():,} characters, which no number is; "
            "look for a quote (\") that opens a field and is never closed: it joins all the lines after it"
        )
    return InvalidDataError(f"{path}: line {line} cannot be read as CSV ({exc}); check its quotes (\")")


def _sniff_separator(header: str, sample: list[str], suffix: str) -> str:
    """The separator that splits the header into the most columns and the sample lines alike.

    Each candidate is scored by the share of sample lines with as many fields
    as the header (or one more: a row label without a header cell), then by
    the header's width; a tie goes to the suffix's separator (tab for
    ``.tsv``, comma otherwise).
    """
    preferred = "\t" if suffix == ".tsv" else ","
    best, best_score = preferred, (-1.0, 0)
    for separator in (preferred, *(s for s in CSV_SEPARATORS if s != preferred)):
        try:
            width = len(_split(header, separator))
            widths = [len(_split(line, separator)) for line in sample]
        except csv.Error:
            continue
        if width < 2:
            continue
        fit = sum(w in (width, width + 1) for w in widths) / len(widths) if widths else 1.0
        if (fit, width) > best_score:
            best, best_score = separator, (fit, width)
    return best


def _example_header(separator: str, p: int) -> str:
    names = [f"x{j + 1}" for j in range(min(p, 3))]
    return ("<TAB>" if separator == "\t" else separator).join(names) + ("..." if p > 3 else "")


def csv_layout(path: Path) -> CsvLayout:
    """Read the header and the first lines of a CSV file: separator, names, label column.

    Refuses an empty file, a file without data lines, a first line of numbers
    only (a missing header), header cells left empty and an unclosed quote in
    the header.
    """
    with open(path, "rb") as fh:
        if fh.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            raise InvalidDataError(
                f"{path}: the file is UTF-16 text (a spreadsheet's 'Unicode text' export); save it as 'CSV UTF-8'"
            )
        fh.seek(0)
        header_text, line = None, 0
        while header_text is None:
            raw = fh.readline()
            if not raw:
                raise InvalidDataError(f"{path}: the CSV file is empty; its first line must name the columns")
            line += 1
            try:
                text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise _not_utf8(path, line, raw, exc) from None
            if text.strip(" \t\r\n,;"):
                header_text = text
        data_offset = fh.tell()
        sample: list[str] = []
        while len(sample) < _SNIFF_LINES:
            raw = fh.readline()
            if not raw:
                break
            text = raw.decode("utf-8", "replace")
            if text.strip(" \t\r\n,;"):
                sample.append(text)
    if "\r" in header_text.rstrip("\r\n"):
        raise InvalidDataError(
            f"{path}: the lines end with a lone carriage return (\\r, as old Mac files do); save the file with "
            "\\n or \\r\\n line ends"
        )
    if header_text.count('"') % 2:
        raise InvalidDataError(
            f"{path}: line {line} (the header) has a quote (\") that is not closed on that line; close or remove it"
        )
    separator = _sniff_separator(header_text, sample, path.suffix.lower())
    try:
        header = tuple(cell.strip() for cell in _split(header_text, separator))
    except csv.Error as exc:
        raise _csv_error(path, line, exc) from None
    if not sample:
        raise InvalidDataError(f"{path}: the CSV file has a header but no data rows")
    rows = []
    for text in sample:
        try:
            rows.append(_split(text, separator))
        except csv.Error:
            continue
    width = len(header)
    if rows and all(len(row) == width + 1 and not row[-1].strip() for row in rows):
        raise InvalidDataError(
            f"{path}: the data lines end with a separator ({separator!r}) that the header line lacks; "
            "remove the separators at the ends of the lines"
        )
    if width > 1 and header[0] == "":
        labels = "header"
    elif rows and all(len(row) == width + 1 for row in rows):
        labels = "short"
    elif width > 1 and rows and all(len(row) == width and _is_label(row[0]) for row in rows):
        labels = "text"
    else:
        labels = "none"
    layout = CsvLayout(separator, header, labels, line, data_offset)
    names = layout.names
    if all(_is_number(name) for name in names):
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        raise InvalidDataError(
            f"{path}: the first line ({shown}) holds only numbers, so the header line is missing: the first line of a "
            f"CSV file must name the columns. Add a header line with one name per column at the top (e.g. "
            f"{_example_header(separator, len(names))}); if these numbers are meant as names, make them non-numeric "
            "(e.g. prefix a letter)"
        )
    offset = len(header) - len(names) + 1
    empty = [j + offset for j, name in enumerate(names) if not name]
    if empty:
        trailing = " (a separator at the end of the line?)" if empty[-1] == len(header) else ""
        raise InvalidDataError(
            f"{path}: the header (line {line}) has no name for column(s) {', '.join(map(str, empty[:SHOWN]))}"
            f"{trailing}; give every column a name"
        )
    return layout


# -- CSV: the fast reader and the careful one -----------------------------------------------------------
def _unread_positions(layout: CsvLayout, unread: frozenset[str]) -> list[int]:
    """The positions (among the data columns) of the columns named in ``unread``."""
    return [j for j, name in enumerate(layout.names) if name in unread]


def _read_fast(path: Path, layout: CsvLayout, unread: frozenset[str] = frozenset()) -> np.ndarray | None:
    """The matrix when every cell is a finite number, read by NumPy's ``loadtxt``; ``None`` when anything is amiss.

    The row labels and the columns named in ``unread`` go through converters that never parse a number
    (unread columns come back as NaN); a number among ``"text"`` labels sends the file to the careful reader.
    """
    numbers_among_labels: list[str] = []

    def label(cell: str) -> float:
        if layout.labels == "text" and not _is_label(cell):
            numbers_among_labels.append(cell)
        return 0.0

    skipped = _unread_positions(layout, unread)
    offset = int(layout.has_labels)
    converters: dict[int, Any] = {j + offset: lambda cell: math.nan for j in skipped}
    if layout.has_labels:
        converters[0] = label
    try:
        with open(path, "rb") as fh, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data"
            fh.seek(layout.data_offset)
            table = np.loadtxt(
                io.TextIOWrapper(fh, encoding="utf-8", newline=""), delimiter=layout.separator, dtype=float,
                comments=None, quotechar='"', ndmin=2, converters=converters or None,
            )  # fmt: skip
    except MemoryError:
        raise InvalidDataError(f"{path}: the table does not fit in memory") from None
    except Exception:  # any complaint of the parser: the careful reader finds it and names the line
        return None
    if table.size == 0 or table.shape[1] != layout.fields or numbers_among_labels:
        return None
    table = table[:, offset:]
    checked = np.delete(table, skipped, axis=1) if skipped else table  # np.delete copies even when nothing goes
    return table if np.isfinite(checked).all() else None


def _cell_problem(cell: str) -> str:
    text = cell.strip()
    if not text:
        return "empty"
    if text.lower() in _MISSING_MARKERS:
        return f"{cell!r} (a missing value)"
    if _is_number(text):
        return f"{cell!r} (not finite)"
    return repr(cell if len(cell) <= 40 else cell[:37] + "...")


def _bad_cells_message(path: Path, layout: CsvLayout, cells: list[tuple[int, int, str]], count: int) -> str:
    names = layout.names
    shown = "; ".join(f"line {line}, column {names[j]!r}: {_cell_problem(cell)}" for line, j, cell in cells)
    more = f"; and {count - len(cells)} more" if count > len(cells) else ""
    hints = []
    texts = [cell.strip() for _, _, cell in cells]
    if any(not t or t.lower() in _MISSING_MARKERS or t.lower() in ("nan", "inf", "-inf") for t in texts):
        hints.append("fill in or remove the lines with missing values, or let spcakit impute them "
                     "(run, compose, cv and path: --missing auto or em; spcakit.fit, spcakit.cross_validate, spcakit.path and spcakit.target_k: missing='auto' or 'em')")
    if layout.separator != "," and any(t.replace(",", "", 1).lstrip("+-").isdigit() and "," in t for t in texts):
        hints.append("decimal commas are not read: write 1.5, not 1,5")
    if any(len(t.split()) > 1 and all(_is_number(part) for part in t.split()) for t in texts):
        hints.append("spaces do not separate fields: use commas, semicolons or tabs")
    if any("\n" in cell for _, _, cell in cells):
        hints.append("a quote (\") that is never closed joins lines")
    if layout.labels == "none" and len(names) > 1 and any(j == 0 and _is_label(t) for _, j, t in cells):
        hints.append("a first column is read as row labels only when every one of its values is text")
    labelled = sorted({names[j] for _, j, cell in cells if _is_label(cell)}, key=names.index)
    if labelled:
        listed = ",".join(labelled)
        hints.append(f"a column of labels or IDs is not a variable: leave it out with --drop {listed} "
                     f"(drop={labelled!r} in spcakit.fit)")
    return (
        f"{path}: {count} cell{'s are not numbers' if count > 1 else ' is not a number'}: {shown}{more}; every cell below the "
        f"header must be a finite number{' - ' if hints else ''}{'; '.join(hints)}"
    )


def _undecodable(path: Path, layout: CsvLayout) -> InvalidDataError:
    with open(path, "rb") as fh:
        fh.seek(layout.data_offset)
        for line, raw in enumerate(fh, start=layout.header_lines + 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return _not_utf8(path, line, raw, exc)
    return InvalidDataError(f"{path}: the file is not UTF-8 text; save it as UTF-8")


def _is_missing(cell: str) -> bool:
    """An empty cell or a missing-value marker (``NA``, ``NaN``, ``null``, ...): a missing value."""
    text = cell.strip()
    return not text or text.lower() in _MISSING_MARKERS


def _read_checked(
    path: Path, layout: CsvLayout, unread: frozenset[str] = frozenset(), missing: bool = False
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Read every cell with Python's ``csv`` and ``float``, naming the lines and columns of anything wrong.

    Returns the matrix and its columns' names; the columns named in ``unread`` are NaN, never parsed.
    With ``missing``, empty cells and missing-value markers are read as NaN; without, they are refused
    (a :class:`~spcakit.core.errors.MissingValuesError` when they are all that is wrong).
    """
    skip = 1 if layout.has_labels else 0
    skipped = frozenset(_unread_positions(layout, unread))
    bad_lines: list[tuple[int, int]] = []
    bad_cells: list[tuple[int, int, str]] = []
    n_bad_lines = n_bad_cells = n_missing = 0
    labels_are_data = False
    numbers = array.array("d")  # 8 bytes a value, not a Python float's 24
    n_rows = 0
    line = layout.header_lines
    with open(path, "rb") as fh:
        fh.seek(layout.data_offset)
        reader = csv.reader(io.TextIOWrapper(fh, encoding="utf-8", newline=""), delimiter=layout.separator)
        try:
            for row in reader:
                first, line = line + 1, layout.header_lines + reader.line_num
                if _is_blank(row):
                    continue
                if len(row) != layout.fields:
                    n_bad_lines += 1
                    if len(bad_lines) < SHOWN:
                        bad_lines.append((first, len(row)))
                    continue
                if layout.labels == "text" and not _is_label(row[0]):
                    labels_are_data = True
                values = []
                for j, cell in enumerate(row[skip:]):
                    if j in skipped:
                        values.append(math.nan)
                        continue
                    if _is_missing(cell):
                        values.append(math.nan)
                        n_missing += 1
                        if missing:
                            continue
                        n_bad_cells += 1
                        if len(bad_cells) < SHOWN:
                            bad_cells.append((first, j, cell))
                        continue
                    try:
                        value = float(cell)
                    except ValueError:
                        value = math.nan
                    if not math.isfinite(value):
                        n_bad_cells += 1
                        if len(bad_cells) < SHOWN:
                            bad_cells.append((first, j, cell))
                    values.append(value)
                if not (n_bad_lines or n_bad_cells):
                    numbers.extend(values)
                    n_rows += 1
        except csv.Error as exc:
            raise _csv_error(path, line + 1, exc) from None
        except UnicodeDecodeError:
            raise _undecodable(path, layout) from None
    if labels_are_data:  # a number among the first column's values: it is data after all
        return _read_checked(path, attrs.evolve(layout, labels="none"), unread, missing)
    if n_bad_lines:
        shown = ", ".join(f"line {line} has {fields}" for line, fields in bad_lines)
        more = f", and {n_bad_lines - len(bad_lines)} more" if n_bad_lines > len(bad_lines) else ""
        label = " (a row label and the values)" if layout.labels == "short" else ""
        raise InvalidDataError(
            f"{path}: {n_bad_lines} line{'s have' if n_bad_lines > 1 else ' has'} the wrong number of fields: {shown}"
            f"{more}; the header has {len(layout.header)}, and every data line needs {layout.fields}{label} "
            f"{layout.separated} fields"
        )
    if n_bad_cells:
        only_missing = not n_bad_lines and n_bad_cells == n_missing  # spcakit.fit can impute those
        error = MissingValuesError if only_missing else InvalidDataError
        raise error(_bad_cells_message(path, layout, bad_cells, n_bad_cells))
    if not n_rows:
        raise InvalidDataError(f"{path}: the CSV file has a header but no data rows")
    return np.frombuffer(numbers, dtype=float).reshape(n_rows, len(layout.names)).copy(), layout.names


def load_csv(path: Path, unread: Collection[str] = (), missing: bool = False) -> tuple[np.ndarray, tuple[str, ...]]:
    """A CSV or TSV file's numbers and column names (see the module's description).

    The cells of the columns named in ``unread`` are not read (they may hold
    text: labels, IDs): those columns come back as NaN, under their names, for
    the caller to drop. Names that are not in the header are ignored here.
    With ``missing``, empty cells and missing-value markers (``NA``, ``NaN``,
    ``null``, ``?``, ...) come back as NaN, for :mod:`spcakit.workflows.imputation`;
    without, they are refused, with a :class:`~spcakit.core.errors.MissingValuesError`
    when nothing else is wrong.
    """
    layout = csv_layout(path)
    rows = max(1, (path.stat().st_size - layout.data_offset) // (2 * layout.fields))  # a cell takes 2 bytes or more
    check_declared_size(f"{path}: its header and size", rows, len(layout.names), verb="allow up to")
    unread = frozenset(unread)
    matrix = _read_fast(path, layout, unread)
    if matrix is None:
        return _read_checked(path, layout, unread, missing)
    return matrix, layout.names
