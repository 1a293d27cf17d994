"""A small declarative schema for the TOML tables of method and experiment specs.

A schema is a tree of *kinds*: callables ``kind(value, path) -> value`` that
return the (possibly normalised) value or raise :class:`Invalid` with the
path of the key at fault. :class:`Table` holds named :class:`Field` s (kind,
required, default) and refuses unknown keys with a "did you mean" drawn from
its field names; :class:`TableOf` is a table with free keys (a method's
parameters); :class:`ListOf` an array (of tables: ``[[rows]]``). Paths print
as TOML reads them: ``rows[3].params.k``, ``overrides.spcart.stopper``::

    ROW = Table({"method": Field(Str(), required=True), "params": Field(TableOf(Anything()), default={})})
    validate(Table({"r": Field(Int(low=1)), "rows": Field(ListOf(ROW))}), data, where="x.toml")

:func:`validate` turns the first :class:`Invalid` into a
:class:`~spcakit.core.errors.SpecError` prefixed by the file name.
"""

from __future__ import annotations

import copy
import datetime
import difflib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from spcakit.core.errors import SpecError

KeyPath = tuple[str | int, ...]
#: A kind: checks a value found at ``path`` and returns it (normalised), or raises :class:`Invalid`.
Kind = Callable[[Any, KeyPath], Any]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class Invalid(Exception):
    """A value that does not fit its schema: the key path and what is wrong (and what would be valid)."""

    def __init__(self, path: KeyPath, message: str) -> None:
        self.path, self.message = tuple(path), message
        super().__init__(self.text())

    def text(self, where: str = "") -> str:
        """``where: path: message``, leaving out the parts that are empty."""
        return ": ".join(s for s in (where, format_path(self.path), self.message) if s)


def format_path(path: Iterable[str | int]) -> str:
    """A key path as TOML writes it: ``rows[3].params.k`` (keys that are not bare are quoted)."""
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            key = step if _BARE_KEY.fullmatch(step) else json.dumps(step)
            out += f".{key}" if out else key
    return out


def type_name(value: Any) -> str:
    """What a TOML reader calls the type of ``value``: ``a string``, ``an array``, ``a table``..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return "a date/time"
    if value is None:
        return "nothing (None)"
    return f"a {type(value).__name__}"


def show(value: Any, limit: int = 60) -> str:
    """``value`` as TOML would print it (``true``, ``"no"``, ``2.7``), cut to ``limit`` characters."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, float) and not math.isfinite(value):
        text = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def did_you_mean(word: Any, options: Iterable[str]) -> str | None:
    """The closest of ``options`` to ``word`` (:func:`difflib.get_close_matches`), or ``None``."""
    if not isinstance(word, str):
        return None
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return close[0] if close else None


def _hint(guess: str | None) -> str:
    return f" (did you mean {guess!r}?)" if guess is not None else ""


def unknown_name(kind: str, word: Any, options: Sequence[str]) -> str:
    """``unknown <kind> 'spcrat' (did you mean 'spcart'?); valid: a, b`` (the hint only when one is close)."""
    name = repr(word) if isinstance(word, str) else show(word)
    return f"unknown {kind} {name}{_hint(did_you_mean(word, options))}; valid: {', '.join(options) or '(none)'}"


def _wrong(path: KeyPath, expected: str, value: Any) -> Invalid:
    return Invalid(path, f"must be {expected}; got {show(value)} ({type_name(value)})")


# -- kinds ------------------------------------------------------------------------------------------
@attrs.frozen
class Anything:
    """Any value (checked elsewhere, e.g. a part's parameters by the part)."""

    expected: str = "any value"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        return value


@attrs.frozen
class Str:
    """A string; non-empty unless ``empty``."""

    empty: bool = True

    @property
    def expected(self) -> str:
        return "a string" if self.empty else "a non-empty string"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if not isinstance(value, str) or (not self.empty and not value.strip()):
            raise _wrong(path, self.expected, value)
        return value


@attrs.frozen
class Bool:
    """``true`` or ``false`` (not a string, not a number)."""

    expected: str = "true or false"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if not isinstance(value, bool):
            raise _wrong(path, self.expected, value)
        return value


@attrs.frozen
class Int:
    """An integer (not a float, not a boolean) with ``low <= value``."""

    low: int | None = None

    @property
    def expected(self) -> str:
        if self.low == 1:
            return "a positive integer"
        if self.low == 0:
            return "a non-negative integer"
        return "an integer" if self.low is None else f"an integer >= {self.low}"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or (self.low is not None and value < self.low):
            raise _wrong(path, self.expected, value)
        return value


@attrs.frozen
class Number:
    """A finite integer or float (not a boolean)."""

    expected: str = "a number"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _wrong(path, self.expected, value)
        return value


@attrs.frozen
class OneOf:
    """The first of ``kinds`` that accepts the value; the message says what ``expected`` is."""

    kinds: tuple[Kind, ...]
    expected: str

    def __call__(self, value: Any, path: KeyPath) -> Any:
        deepest: Invalid | None = None
        for kind in self.kinds:
            try:
                return kind(value, path)
            except Invalid as exc:  # an error inside the value (deeper path) says more than "wrong type"
                if len(exc.path) > len(path) and (deepest is None or len(exc.path) > len(deepest.path)):
                    deepest = exc
        raise deepest if deepest is not None else _wrong(path, self.expected, value)


@attrs.frozen
class ListOf:
    """An array of ``item`` (at least ``min_items``); ``expected`` names it in messages."""

    item: Kind
    expected: str = "an array"
    min_items: int = 0

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if not isinstance(value, (list, tuple)):
            raise _wrong(path, self.expected, value)
        if len(value) < self.min_items:
            raise Invalid(path, f"must be {self.expected} with at least {self.min_items} entr{'y' if self.min_items == 1 else 'ies'}; got {len(value)}")
        return [self.item(v, (*path, i)) for i, v in enumerate(value)]


@attrs.frozen
class TableOf:
    """A table with free keys (strings), each value of kind ``value``."""

    value: Kind
    expected: str = "a table"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if not isinstance(value, Mapping):
            raise _wrong(path, self.expected, value)
        return {k: self.value(v, (*path, k)) for k, v in value.items()}


@attrs.frozen
class Field:
    """A key of a :class:`Table`: its kind, whether it must be given, its default when it is not."""

    kind: Kind
    required: bool = False
    default: Any = None


@attrs.frozen
class Table:
    """A table with the keys ``fields`` and no others; missing keys get their field's default."""

    fields: Mapping[str, Field]
    expected: str = "a table"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if not isinstance(value, Mapping):
            raise _wrong(path, self.expected, value)
        unknown = [k for k in value if k not in self.fields]
        if unknown:
            raise Invalid(path, unknown_keys_message(unknown, self.fields))
        missing = [k for k, f in self.fields.items() if f.required and k not in value]
        if missing:
            raise Invalid(
                path, f"missing required key{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; "
                      f"required keys: {', '.join(k for k, f in self.fields.items() if f.required)}"
            )
        out = {}
        for key, field in self.fields.items():
            if key in value:
                out[key] = field.kind(value[key], (*path, key))
            elif not field.required:  # a copy, so that no caller shares (and changes) the default
                out[key] = copy.copy(field.default)
        return out


def unknown_keys_message(unknown: Sequence[Any], valid: Iterable[str]) -> str:
    """``unknown key(s) ['titel'] (did you mean 'title'?); valid keys: ...``."""
    valid = list(valid)
    guesses = [(k, g) for k in unknown if (g := did_you_mean(k, valid)) is not None]
    if len(unknown) == 1:
        hint = _hint(guesses[0][1] if guesses else None)
    else:
        hint = (" (did you mean " + ", ".join(f"{g!r} for {k!r}" for k, g in guesses) + "?)") if guesses else ""
    return f"unknown key(s) {sorted(map(str, unknown))}{hint}; valid keys: {', '.join(valid)}"


def validate(kind: Kind, value: Any, where: str) -> Any:
    """``kind(value)``, its first :class:`Invalid` raised as a :class:`SpecError` ``where: path: message``."""
    try:
        return kind(value, ())
    except Invalid as exc:
        raise SpecError(exc.text(where)) from None
