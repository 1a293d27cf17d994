"""Declarative method and experiment specs (TOML).

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
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from spcakit.errors import SpecError

SPEC_VERSION = 1
_SPEC_KEYS = {"name", "summary", "paper", "driver", "initializer", "updater", "truncator", "deflator", "stopper", "refiner",
              "version", "extends", "compose_default"}


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

    @staticmethod
    def check_keys(data: Mapping[str, Any], where: str = "spec") -> None:
        """Refuse unknown keys and other spec versions (before ``extends`` is resolved)."""
        unknown = set(data) - _SPEC_KEYS
        if unknown:
            raise SpecError(
                f"{where}: unknown key(s) {sorted(unknown)}; valid keys are {sorted(_SPEC_KEYS)}"
            )
        version = data.get("version", SPEC_VERSION)
        if version != SPEC_VERSION:
            raise SpecError(f"{where}: spec version {version!r} is not supported (this spcakit reads version {SPEC_VERSION})")
        if not isinstance(data.get("compose_default", False), bool):
            raise SpecError(f"{where}: compose_default must be true or false")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "spec") -> MethodSpec:
        cls.check_keys(data, where)
        if "extends" in data:
            raise SpecError(f"{where}: 'extends' is resolved by the registry; register the spec instead of building it")
        missing = [k for k in ("name", "driver", "initializer", "updater", "truncator", "stopper") if k not in data]
        if missing:
            raise SpecError(f"{where}: missing required key(s): {', '.join(missing)}")
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
        }


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None


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


@attrs.frozen(kw_only=True)
class ExperimentRow:
    """One row of a published table: a run and the paper's numbers."""

    label: str
    method: str
    params: dict[str, Any] = attrs.field(factory=dict)
    paper: dict[str, Any] = attrs.field(factory=dict)
    #: columns that must print as the paper's (``true`` in TOML: every paper column)
    must_match: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class ExperimentSpec:
    """A reproduction of a paper's table: data, shared settings, rows."""

    name: str
    title: str
    paper: str
    data: str
    r: int
    covariance: bool = False
    columns: tuple[str, ...] = ()
    rows: tuple[ExperimentRow, ...] = ()
    notes: str = ""
    #: ``fit`` keywords per method name, applied to every row of that method (a row's params win):
    #: how the paper ran a method when that differs from spcakit's default (e.g. its stopping rule).
    overrides: dict[str, dict[str, Any]] = attrs.field(factory=dict)


def load_experiment_spec(path: str | Path) -> ExperimentSpec:
    """Read an experiment spec (``specs/experiments/*.toml``)."""
    path = Path(path)
    data = read_toml(path)
    where = str(path)
    for key in ("name", "title", "data", "r", "rows"):
        if key not in data:
            raise SpecError(f"{where}: missing required key {key!r}")
    rows = []
    for i, row in enumerate(data["rows"]):
        if "method" not in row:
            raise SpecError(f"{where}: row {i} needs a 'method'")
        paper = dict(row.get("paper", {}))
        must = row.get("must_match", False)
        if must is True:
            must = tuple(paper)
        elif must is False:
            must = ()
        elif isinstance(must, list) and all(c in paper for c in must):
            must = tuple(must)
        else:
            raise SpecError(f"{where}: row {i}: must_match is true, false, or a list of its paper columns; got {must!r}")
        rows.append(
            ExperimentRow(
                label=str(row.get("label", row["method"])),
                method=str(row["method"]),
                params=dict(row.get("params", {})),
                paper=paper,
                must_match=must,
            )
        )
    overrides = data.get("overrides", {})
    if not isinstance(overrides, dict) or not all(isinstance(v, dict) for v in overrides.values()):
        raise SpecError(f"{where}: overrides is a table of method names, each a table of fit keywords; got {overrides!r}")
    return ExperimentSpec(
        overrides={str(k): dict(v) for k, v in overrides.items()},
        name=str(data["name"]),
        title=str(data["title"]),
        paper=str(data.get("paper", "")),
        data=str(data["data"]),
        r=int(data["r"]),
        covariance=bool(data.get("covariance", False)),
        columns=tuple(data.get("columns", ())),
        rows=tuple(rows),
        notes=str(data.get("notes", "")),
    )


def specs_root() -> Path:
    """The folder holding ``methods/`` and ``experiments/`` (the repo's ``specs/``)."""
    import spcakit_specs

    return Path(spcakit_specs.__file__).parent
