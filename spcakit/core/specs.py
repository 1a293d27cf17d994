"""Declarative method specs (TOML).

Experiment specs build on them in :mod:`spcakit.workflows.reproduce.experiment_specs`.

A method is a composition of named parts, each with its parameters::

    name = "spcart"
    summary = "Sparse PCA via rotation and truncation"
    paper = "Hu, Pan, Wang, Wu - Sparse Principal Component Analysis via Rotation and Truncation"
    driver = "block"
    initializer = "pca"
    updater = "rotation"
    truncator = { name = "hard" }
    stopper = { name = "any-of", stoppers = [
        { name = "relative-change", tol = 0.01 },
        { name = "max-iterations", n = 200 },
    ] }

A part is a name or a table ``{ name = ..., <param> = ... }``. A parameter
whose value is such a table (or a list of them) is itself a part of the same
role, built first (this is how ``any-of`` holds other stoppers).

A spec may extend another registered method and replace some of its keys::

    name = "tpower"
    extends = "rsvd-gp"
    truncator = { name = "sparsity" }

``compose_default = true`` marks a method whose parts :func:`spcakit.compose`
takes as defaults for that method's driver (not inherited by ``extends``).
``fit_default = true`` marks the method :func:`spcakit.fit` runs when none is
named (not inherited either; with the built-in plugins, ``auto``).

``cardinality`` says how the method reads the sparsity knob ``k`` (the
number of nonzero variables per loading) when none of its parts holds a
cardinality itself: the parts, by role, that replace the method's own when
``k`` is given. SPCArt's hard thresholding has no cardinality, but the
paper's truncation by sparsity keeps the ``k`` largest entries::

    cardinality = { truncator = "sparsity" }

so ``spcakit.fit(data, "spcart", k=5)`` runs SPCArt with the truncation by
sparsity, λ = p − 5 zeros per loading. ``extends`` inherits
the form for the roles the child does not replace; ``cardinality = {}``
removes it.

Every spec is checked against a schema (:mod:`spcakit.core.schema`) when
it is read: an unknown key (with the closest valid one as a hint), a value
of the wrong type or out of range is a :class:`~spcakit.core.errors.SpecError`
naming the file and the key's path, e.g. ``x.toml: rows[3]: unknown key(s)
['parmas'] (did you mean 'params'?)`` or ``x.toml: r: must be a positive
integer; got 2.7 (a float)``. A part's own parameters are checked by the part
when it is built (and, for experiments, by :func:`spcakit.workflows.reproduce.check_experiment`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from spcakit.core.documents import check_toml_text
from spcakit.core.errors import InvalidDataError, SpecError
from spcakit.core.protocols import REQUIRED_PART_ROLES, means_none
from spcakit.core.schema import (
    Bool,
    Field,
    Int,
    Invalid,
    KeyPath,
    Str,
    Table,
    did_you_mean,
    show,
    type_name,
    validate,
)

SPEC_VERSION = 1


def _freeze_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(params or {})


@attrs.frozen
class PartRef:
    """A part by registered name, with its parameters."""

    name: str
    params: dict[str, Any] = attrs.field(factory=dict, converter=_freeze_params)

    @classmethod
    def parse(cls, value: Any, where: str) -> PartRef:
        if isinstance(value, PartRef):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            if "name" not in value or not isinstance(value["name"], str):
                raise SpecError(f"{where}: a part table needs a string 'name'; got {dict(value)!r}")
            params = {k: v for k, v in value.items() if k != "name"}
            return cls(value["name"], params)
        raise SpecError(f"{where}: expected a part name or a table with 'name'; got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        def plain(v: Any) -> Any:
            if isinstance(v, PartRef):
                return v.to_dict()
            if isinstance(v, (list, tuple)):
                return [plain(x) for x in v]
            return v

        return {"name": self.name, **{k: plain(v) for k, v in self.params.items()}}

    def evolve_params(self, **changes: Any) -> PartRef:
        return attrs.evolve(self, params={**self.params, **changes})


@attrs.frozen
class PartKind:
    """Schema kind of a part: a registered name, or a table ``{ name = ..., <parameter> = ... }``.

    Tables (or arrays of tables) with a ``name`` among the parameters are parts too and are checked
    the same way. ``optional``: ``"none"`` or ``""`` (and ``None`` from Python) mean no part.
    """

    optional: bool = False
    expected: str = "a part name or a table { name = ..., <parameter> = ... }"

    def __call__(self, value: Any, path: KeyPath) -> Any:
        if self.optional and means_none(value):
            return value
        if isinstance(value, PartRef):
            return value
        if isinstance(value, str):
            return Str(empty=False)(value, path)
        if not isinstance(value, Mapping):
            raise Invalid(path, f"must be {self.expected}; got {show(value)} ({type_name(value)})")
        if "name" not in value:
            raise Invalid(path, f"a part table needs a 'name' (the part's registered name); got the keys {sorted(map(str, value))}"
                                + _name_hint(value))
        Str(empty=False)(value["name"], (*path, "name"))
        for key, param in value.items():
            if key != "name":
                _check_nested_parts(param, (*path, key))
        return value


def _name_hint(table: Mapping[str, Any]) -> str:
    guess = next((k for k in table if did_you_mean(k, ["name"]) is not None), None)
    return f" (did you mean 'name' for {guess!r}?)" if guess is not None else ""


def _check_nested_parts(value: Any, path: KeyPath) -> None:
    """Parameters that are parts: a table with ``name``, or an array in which some table has one (then all must)."""
    if isinstance(value, Mapping) and "name" in value:
        PartKind()(value, path)
    elif isinstance(value, (list, tuple)) and any(isinstance(v, PartRef) or (isinstance(v, Mapping) and "name" in v) for v in value):
        for i, item in enumerate(value):
            PartKind()(item, (*path, i))


#: The roles a ``solver`` stands for, and what it sets them to: its one proposal is the loading, with nothing
#: truncated and no second step.
SOLVER_ROLES: dict[str, Any] = {"truncator": "none", "stopper": {"name": "max-iterations", "n": 1}}


def expand_solver(data: Mapping[str, Any], where: str = "spec") -> dict[str, Any]:
    """A method table with its ``solver`` key written out as the parts that run it.

    A one-shot solver (greedy selection, exhaustive search, the encoders, FSPCA's Go, a branch and bound)
    computes each loading (or the block of them) in one call. A spec says so with ``solver = PART``: the
    part is the updater, called once per component by the deflation driver or once by the block driver,
    whose proposal is the loading (``truncator = "none"``, one step: ``stopper = { name =
    "max-iterations", n = 1 }`` unless the spec names a stopper that ends after the first step and says
    more, as the exact solver's ``certified`` and the exhaustive search's ``enumerated`` do). A spec that gives
    ``solver`` gives no ``updater`` or ``truncator``.
    """
    if "solver" not in data:
        return dict(data)
    clash = [role for role in ("updater", "truncator") if role in data]
    if clash:
        raise SpecError(
            f"{where}: solver: a solver gives each loading in one step, so the spec sets no {' or '.join(clash)}; "
            "remove it, or write the method as an iteration (updater, truncator, stopper) instead of a solver"
        )
    table = {key: value for key, value in data.items() if key != "solver"}
    return {**SOLVER_ROLES, **table, "updater": data["solver"], "truncator": SOLVER_ROLES["truncator"]}


#: The roles whose part a method's ``cardinality`` form may replace.
CARDINALITY_ROLES = ("initializer", "updater", "truncator")

#: The keys of a method spec and what each may hold (required keys are checked once ``extends`` is resolved).
METHOD_SCHEMA = Table(
    {
        "name": Field(Str(empty=False)),
        "summary": Field(Str()),
        "paper": Field(Str()),
        "driver": Field(Str(empty=False)),
        "initializer": Field(PartKind()),
        "updater": Field(PartKind()),
        "solver": Field(PartKind()),
        "truncator": Field(PartKind()),
        "deflator": Field(PartKind(optional=True)),
        "stopper": Field(PartKind()),
        "refiner": Field(PartKind(optional=True)),
        "version": Field(Int()),
        "extends": Field(Str(empty=False)),
        "compose_default": Field(Bool()),
        "fit_default": Field(Bool()),
        "cardinality": Field(Table(
            {role: Field(PartKind()) for role in CARDINALITY_ROLES},
            expected='a table of parts by role that express the cardinality k, e.g. { truncator = "sparsity" }',
        )),
    },
    expected="a table of method keys",
)
_REQUIRED_METHOD_KEYS = ("name", "driver", *REQUIRED_PART_ROLES)


@attrs.frozen(kw_only=True)
class MethodSpec:
    """A method: which driver runs which parts."""

    name: str
    driver: str
    initializer: PartRef
    updater: PartRef
    truncator: PartRef
    stopper: PartRef
    deflator: PartRef | None = None
    refiner: PartRef | None = None
    summary: str = ""
    paper: str = ""
    #: the parts (by role) that replace the method's own when the cardinality ``k`` is given (see above)
    cardinality: dict[str, PartRef] = attrs.field(factory=dict)

    @staticmethod
    def check_keys(data: Mapping[str, Any], where: str = "spec") -> None:
        """Check a method table against :data:`METHOD_SCHEMA` (before ``extends`` is resolved).

        Refuses unknown keys (with the closest valid key as a hint), values of the wrong type (each
        part a name or a table with a string ``name``, ``compose_default`` a boolean, ``version`` an
        integer) and other spec versions; the message names ``where`` and the key's path.
        """
        validate(METHOD_SCHEMA, data, where)
        version = data.get("version", SPEC_VERSION)
        if version != SPEC_VERSION:
            raise SpecError(f"{where}: version: spec version {version!r} is not supported (this spcakit reads version {SPEC_VERSION})")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "spec") -> MethodSpec:
        cls.check_keys(data, where)
        if "extends" in data:
            raise SpecError(f"{where}: 'extends' is resolved by the registry; register the spec instead of building it")
        data = expand_solver(data, where)
        missing = [k for k in _REQUIRED_METHOD_KEYS if k not in data]
        if missing:
            raise SpecError(f"{where}: missing required key(s): {', '.join(missing)} (a method spec needs "
                            f"{', '.join(_REQUIRED_METHOD_KEYS)}, unless it extends another method)")
        deflator = data.get("deflator")
        refiner = data.get("refiner")
        return cls(
            name=str(data["name"]),
            driver=str(data["driver"]),
            initializer=PartRef.parse(data["initializer"], f"{where}: initializer"),
            updater=PartRef.parse(data["updater"], f"{where}: updater"),
            truncator=PartRef.parse(data["truncator"], f"{where}: truncator"),
            stopper=PartRef.parse(data["stopper"], f"{where}: stopper"),
            deflator=None if deflator in (None, "", "none") else PartRef.parse(deflator, f"{where}: deflator"),
            refiner=None if refiner in (None, "", "none") else PartRef.parse(refiner, f"{where}: refiner"),
            summary=str(data.get("summary", "")),
            paper=str(data.get("paper", "")),
            cardinality={
                role: PartRef.parse(ref, f"{where}: cardinality.{role}")
                for role, ref in (data.get("cardinality") or {}).items()
                if ref is not None
            },
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "paper": self.paper,
            "driver": self.driver,
            "initializer": self.initializer.to_dict(),
            "updater": self.updater.to_dict(),
            "truncator": self.truncator.to_dict(),
            "deflator": None if self.deflator is None else self.deflator.to_dict(),
            "stopper": self.stopper.to_dict(),
            "refiner": None if self.refiner is None else self.refiner.to_dict(),
            **({"cardinality": {role: ref.to_dict() for role, ref in self.cardinality.items()}} if self.cardinality else {}),
        }


def read_toml(path: str | Path) -> dict[str, Any]:
    """The table of a TOML file; every way of not getting one is a :class:`SpecError` naming the file.

    Missing files, folders, devices, unreadable files, text that is not UTF-8, invalid TOML, TOML nested
    deeper or with longer numbers than :mod:`spcakit.core.documents` allows, and files with no keys (empty,
    or only comments) are refused.
    """
    path = Path(path)
    try:
        if path.is_dir():
            raise SpecError(f"{path}: is a folder; give a TOML spec file (*.toml)")
        if path.is_char_device() or path.is_block_device() or path.is_socket():  # /dev/zero would be read forever
            raise SpecError(f"{path}: is a device or a socket, not a regular file; give a TOML spec file (*.toml)")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}") from None
    except PermissionError:
        raise SpecError(f"{path}: cannot be read (permission denied)") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(
            f"{path}: not UTF-8 text (byte {raw[exc.start:exc.start + 1]!r} on line {line}); TOML files are UTF-8: "
            "save it as UTF-8"
        ) from None
    try:
        check_toml_text(text, str(path))  # tomllib recurses once per nested bracket: measure the nesting first
        data = tomllib.loads(text)
    except InvalidDataError as exc:
        raise SpecError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    if not data:
        raise SpecError(f"{path}: the file has no keys (it is empty or only comments); a spec needs at least a 'name'")
    return data


def load_method_spec(path: str | Path) -> MethodSpec:
    """Read one method spec from a TOML file (one without ``extends``)."""
    path = Path(path)
    return MethodSpec.from_dict(read_toml(path), where=str(path))


def spec_files(path: str | Path) -> list[Path]:
    """The TOML spec files at ``path``: the file itself, or a folder's ``*.toml`` in name order."""
    path = Path(path)
    if path.is_dir():
        return sorted(path.glob("*.toml"))
    return [path]


