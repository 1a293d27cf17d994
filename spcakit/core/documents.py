"""Bounded parsing of the JSON and TOML a user feeds: nesting depth and number sizes are limited.

Python's parsers recurse once per nested bracket and turn digits into integers of any length, so 5000
nested brackets (``[[[[...]]]]``) or a 5000-digit number in a model file, a path or CV result, an
experiment spec or a ``--param`` value would end in ``RecursionError`` or in ``ValueError: Exceeds the
limit (4300 digits)``: internal errors for what is bad input. Here the text is measured first
(:func:`nesting_depth`, linear, without recursion) and numbers are checked as they are read:

* at most :data:`MAX_NESTING` nested arrays and tables (objects, inline tables): spcakit's own documents
  nest a few levels;
* numbers of at most :data:`MAX_NUMBER_LENGTH` characters: a double's shortest form takes at most 24,
  the integers spcakit reads (seeds, counts, versions) at most 20.

Each refusal is an :class:`~spcakit.core.errors.InvalidDataError` that names the document and the limit.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from spcakit.core.errors import InvalidDataError

#: Most arrays and tables (objects) nested in one another that a document may hold.
MAX_NESTING = 64
#: Most characters of one number in a document.
MAX_NUMBER_LENGTH = 100

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_TOML_SKIPPED = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
)  # multi-line and single-line strings, then comments
_TOML_LONG_NUMBER = re.compile(rf"[0-9_]{{{MAX_NUMBER_LENGTH + 1},}}")
_OPENING, _CLOSING = np.frombuffer(b"[{", dtype=np.uint8), np.frombuffer(b"]}", dtype=np.uint8)


def _code(text: str, syntax: str) -> str:
    """``text`` without its strings (and, in TOML, its comments): what is left holds the structure."""
    return (_JSON_STRING if syntax == "json" else _TOML_SKIPPED).sub('""', text)


def nesting_depth(text: str, syntax: str = "json") -> int:
    """The deepest nesting of brackets and braces in ``text`` (``"json"`` or ``"toml"``) outside strings and
    comments, counted without recursion (an unbalanced text counts as far as it goes)."""
    code = np.frombuffer(_code(text, syntax).encode("utf-8", "replace"), dtype=np.uint8)
    steps = np.isin(code, _OPENING).astype(np.int64) - np.isin(code, _CLOSING).astype(np.int64)
    return int(np.cumsum(steps).max(initial=0))


def _too_deep(what: str, depth: int) -> InvalidDataError:
    return InvalidDataError(
        f"{what}: nests arrays or tables {depth} deep, more than {MAX_NESTING} "
        "(spcakit.core.documents.MAX_NESTING); no spcakit document nests more than a few levels: the text is "
        "damaged or not what it should be"
    )


def _too_long(what: str, digits: str) -> InvalidDataError:
    return InvalidDataError(
        f"{what}: a number of {len(digits):,} characters ({digits[:12]}...), more than {MAX_NUMBER_LENGTH} "
        "(spcakit.core.documents.MAX_NUMBER_LENGTH); numbers take at most a few dozen digits"
    )


def check_toml_text(text: str, what: str) -> None:
    """Refuse TOML text nested more than :data:`MAX_NESTING` deep or holding a number longer than
    :data:`MAX_NUMBER_LENGTH` characters, before ``tomllib`` reads it. ``what`` names it (a path)."""
    depth = nesting_depth(text, "toml")
    if depth > MAX_NESTING:
        raise _too_deep(what, depth)
    long = _TOML_LONG_NUMBER.search(_code(text, "toml"))
    if long is not None:
        raise _too_long(what, long.group())


def load_json(text: str, what: str) -> Any:
    """``json.loads(text)`` within the limits: :class:`~spcakit.core.errors.InvalidDataError` naming ``what`` for
    text nested too deeply or a number too long; :class:`json.JSONDecodeError` for text that is not JSON."""
    depth = nesting_depth(text, "json")
    if depth > MAX_NESTING:
        raise _too_deep(what, depth)

    def number(kind: type) -> Any:
        def convert(digits: str) -> Any:
            if len(digits) > MAX_NUMBER_LENGTH:
                raise _too_long(what, digits)
            return kind(digits)

        return convert

    return json.loads(text, parse_int=number(int), parse_float=number(float))
