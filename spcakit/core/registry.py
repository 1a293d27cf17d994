"""The typed registry of parts, metrics and methods.

Plugins add entries through the ``register`` callbacks their hooks receive:
``register(PartClass)`` (or a list of them) for parts, ``register(metric)``
for metrics, ``register(path)`` for method specs. A name can be registered
once per role, and a second registration raises
:class:`~spcakit.core.errors.DuplicateNameError` naming both plugins. Building a
part checks its parameters against the class's fields, so a typo in a spec
or on the command line is an error, not a silently ignored setting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from spcakit.core.errors import (
    DuplicateNameError, InvalidParameterError, PartFailure, SpcakitError, SpecError, UnknownNameError,
)  # fmt: skip
from spcakit.core.protocols import BASES, PART_ROLES, ROLES, Part, PartMeta, parameters
from spcakit.core.specs import SOLVER_ROLES, MethodSpec, PartRef, expand_solver

if TYPE_CHECKING:
    from spcakit.core.protocols import Metric


@attrs.frozen(kw_only=True)
class PartInfo:
    """A registered part: its class and what it says about itself.

    Attributes
    ----------
    role, name
        Where it is registered (``truncator``, ``hard``).
    cls
        The part class; ``cls(**params)`` builds the part.
    summary, paper, lam, k, k_per_component
        From the class (see :class:`~spcakit.core.protocols.PartMeta`).
    plugin
        Name of the plugin that registered it.
    """

    role: str
    name: str
    cls: type = attrs.field(eq=False)
    summary: str = ""
    paper: str = ""
    lam: str | None = None
    k: str | None = None
    k_per_component: bool = False
    plugin: str = ""

    def parameters(self) -> dict[str, Any]:
        """The part's parameters and their defaults (``None`` where there is none)."""
        return parameters(self.cls)


@attrs.frozen(kw_only=True)
class _RegisteredSpec:
    """A method spec as registered: its TOML table (``extends`` is resolved on look-up)."""

    raw: Mapping[str, Any] = attrs.field(eq=False)
    where: str = ""
    plugin: str = ""


@attrs.frozen(kw_only=True)
class MethodInfo:
    """A registered method: its resolved spec and the plugin that registered it."""

    spec: MethodSpec
    plugin: str = ""


@attrs.frozen(kw_only=True)
class MetricInfo:
    metric: Metric
    plugin: str = ""


#: The kinds of experiment piece (:func:`~spcakit.core.hookspecs.spcakit_register_experiment_pieces`) and what each is.
PIECE_KINDS = {
    "generator": "random problems of a realizations case: f(rng, **parameters) -> covariance matrix",
    "start": "a row's given start: f(covariance, m, keywords) -> p x m matrix (fit's w0)",
    "score": "how a curve row is scored: f(result, *, covariance, eigenvalues, m, r, value) -> number",
}


@attrs.frozen(kw_only=True)
class PieceInfo:
    kind: str
    name: str
    function: Callable[..., Any]
    plugin: str = ""


def _part_meta(cls: Any) -> PartMeta:
    meta = getattr(cls, "__part__", None) if isinstance(cls, type) else None
    if not isinstance(meta, PartMeta) or not issubclass(cls, Part):
        what = cls.__name__ if isinstance(cls, type) else repr(cls)
        raise TypeError(
            f"register() takes part classes made with @spcakit.part(...) deriving from one of "
            f"{', '.join(b.__name__ for b in BASES.values())}; got {what}"
        )
    return meta


def _contained_format(metric: Metric, plugin: str) -> Callable[[Any], str]:
    """``metric.format`` that never breaks a report: a value recorded as ``null`` shows as ``n/a``; a format that
    raises or returns no string shows the value as JSON instead, with a
    :class:`~spcakit.core.protocols.MetricWarning` naming the metric and its plugin."""
    shown = metric.format
    if getattr(shown, "contained", False):
        return shown

    def fmt(value: Any) -> str:
        import json  # noqa: PLC0415
        import warnings  # noqa: PLC0415

        from spcakit.core.protocols import MetricWarning  # noqa: PLC0415

        if value is None:
            return "n/a"
        try:
            text = shown(value)
            if isinstance(text, str):
                return text
            problem = f"returned {type(text).__name__}, not a string"
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:
            problem = f"failed ({type(exc).__name__}: {exc})"
        warnings.warn(f"metric {metric.name!r} (plugin {plugin!r}): its format() {problem}; the value is shown as "
                      "JSON instead", MetricWarning, stacklevel=2)  # fmt: skip
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return f"<{type(value).__name__}>"

    fmt.contained = True  # type: ignore[attr-defined]
    fmt.plugin = plugin  # type: ignore[attr-defined]  # what compute_metrics names in its warnings
    return fmt


class Registry:
    """Parts by role and name, metrics by name, and method specs by name."""

    def __init__(self) -> None:
        self._parts: dict[str, dict[str, PartInfo]] = {role: {} for role in ROLES}
        self._methods: dict[str, _RegisteredSpec] = {}
        self._refused: dict[str, tuple[_RegisteredSpec, str]] = {}  # methods whose parts are missing: spec, reason
        self._metrics: dict[str, MetricInfo] = {}
        self._pieces: dict[str, dict[str, PieceInfo]] = {kind: {} for kind in PIECE_KINDS}
        self._checked: set[str] = set()  # methods whose parts have been built once (see method())

    # -- registration -------------------------------------------------
    def register_part(self, cls: type, *, plugin: str = "") -> PartInfo:
        """Register a part class (see :func:`spcakit.part`)."""
        meta = _part_meta(cls)
        existing = self._parts[meta.role].get(meta.name)
        if existing is not None:
            raise DuplicateNameError(
                f"{meta.role} {meta.name!r} is already registered by plugin {existing.plugin!r}; "
                f"plugin {plugin!r} cannot register it again (choose another name)"
            )
        info = PartInfo(role=meta.role, name=meta.name, cls=cls, summary=meta.summary, paper=meta.paper,
                        lam=meta.lam, k=meta.k, k_per_component=meta.k_per_component, plugin=plugin)  # fmt: skip
        self._parts[meta.role][meta.name] = info
        self._checked.clear()
        return info

    def register_method(self, spec: MethodSpec | Mapping[str, Any], *, where: str = "", plugin: str = "") -> None:
        """Register a method spec (a :class:`MethodSpec` or its TOML table; ``extends`` is resolved on look-up)."""
        raw = spec.to_dict() if isinstance(spec, MethodSpec) else dict(spec)
        if not isinstance(raw.get("name"), str) or not raw["name"]:
            raise SpecError(f"{where or 'spec'}: a method spec needs a string 'name'")
        MethodSpec.check_keys(raw, where or raw["name"])
        existing = self._methods.get(raw["name"]) or (self._refused[raw["name"]][0] if raw["name"] in self._refused else None)
        if existing is not None:
            raise DuplicateNameError(
                f"method {raw['name']!r} is already registered by plugin {existing.plugin!r}; "
                f"plugin {plugin!r} cannot register it again (choose another name)"
            )
        self._methods[raw["name"]] = _RegisteredSpec(raw=raw, where=where or raw["name"], plugin=plugin)
        self._checked.clear()

    def register_metric(self, metric: Metric, *, plugin: str = "") -> MetricInfo:
        """Register a :class:`~spcakit.core.protocols.Metric`."""
        from spcakit.core.protocols import Metric

        if not isinstance(metric, Metric):
            raise TypeError(f"register() takes spcakit.core.protocols.Metric records for metrics; got {metric!r}")
        existing = self._metrics.get(metric.name)
        if existing is not None:
            raise DuplicateNameError(
                f"metric {metric.name!r} is already registered by plugin {existing.plugin!r}; "
                f"plugin {plugin!r} cannot register it again (choose another name)"
            )
        if not callable(metric.compute) or not callable(metric.format):
            raise TypeError(f"metric {metric.name!r}: compute and format must be functions; got "
                            f"{metric.compute!r} and {metric.format!r}")  # fmt: skip
        metric = attrs.evolve(metric, format=_contained_format(metric, plugin))
        info = MetricInfo(metric=metric, plugin=plugin)
        self._metrics[metric.name] = info
        return info

    def register_piece(self, kind: str, name: str, function: Callable[..., Any], *, plugin: str = "") -> PieceInfo:
        """Register an experiment piece (see :func:`~spcakit.core.hookspecs.spcakit_register_experiment_pieces`)."""
        if kind not in PIECE_KINDS:
            raise ValueError(f"experiment pieces are of kind {', '.join(PIECE_KINDS)}; got {kind!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"an experiment piece needs a nonempty string name; got {name!r}")
        if not callable(function):
            raise TypeError(f"{kind} {name!r}: register a function; got {function!r}")
        existing = self._pieces[kind].get(name)
        if existing is not None:
            raise DuplicateNameError(
                f"{kind} {name!r} is already registered by plugin {existing.plugin!r}; "
                f"plugin {plugin!r} cannot register it again (choose another name)"
            )
        info = PieceInfo(kind=kind, name=name, function=function, plugin=plugin)
        self._pieces[kind][name] = info
        return info

    def piece(self, kind: str, name: str) -> Callable[..., Any]:
        """The experiment piece ``name`` of ``kind``; :class:`UnknownNameError` lists the registered ones."""
        try:
            return self._pieces[kind][name].function
        except KeyError:
            from spcakit.core.schema import unknown_name

            raise UnknownNameError(unknown_name(kind, name, list(self._pieces.get(kind, {})))) from None

    def piece_names(self, kind: str) -> list[str]:
        return list(self._pieces[kind])

    def unregister_plugin(self, plugin: str) -> None:
        """Remove every part, metric, method and experiment piece a plugin registered."""
        for table in (*self._parts.values(), self._methods, self._metrics, *self._pieces.values()):
            for name in [n for n, info in table.items() if info.plugin == plugin]:
                del table[name]
        for name in [n for n, (info, _) in self._refused.items() if info.plugin == plugin]:
            del self._refused[name]
        self._checked.clear()

    def refuse_broken_methods(self) -> dict[str, tuple[str, str]]:
        """Set aside every method whose spec does not build with the parts registered; ``{name: (plugin, reason)}``.

        Run once every plugin is loaded (a spec may name parts a later plugin registers). A method whose
        spec names a part no loaded plugin registers, or extends a method that is not there, is refused:
        it is not listed or run, and looking it up says why; every other method works as before. A
        method refused earlier whose parts have come since (a plugin added later) is restored.
        """
        for name, (info, _) in list(self._refused.items()):
            del self._refused[name]
            self._methods[name] = info
        self._checked.clear()
        refused: dict[str, tuple[_RegisteredSpec, str]] = {}
        for name in sorted(self._methods):
            try:
                self.method(name)
            except (SpcakitError, PartFailure) as exc:  # a part whose constructor fails costs its methods only
                refused[name] = (self._methods[name], str(exc))
        for name, entry in refused.items():
            del self._methods[name]
            self._refused[name] = entry
        self._checked.clear()
        return {name: (info.plugin, reason) for name, (info, reason) in self._refused.items()}

    def refused_methods(self) -> dict[str, tuple[str, str]]:
        """The methods set aside by :meth:`refuse_broken_methods`: ``{name: (plugin, reason)}``."""
        return {name: (info.plugin, reason) for name, (info, reason) in self._refused.items()}

    # -- look-up ------------------------------------------------------
    def part(self, role: str, name: str) -> PartInfo:
        if role not in self._parts:
            raise UnknownNameError(f"unknown role {role!r}; roles are: {', '.join(ROLES)}")
        try:
            return self._parts[role][name]
        except KeyError:
            from spcakit.core.schema import did_you_mean

            guess = did_you_mean(name, sorted(self._parts[role]))
            hint = f" (did you mean {guess!r}?)" if guess is not None else ""
            raise UnknownNameError(
                f"unknown {role} {name!r}{hint}; registered {role}s: {', '.join(sorted(self._parts[role])) or '(none)'}"
            ) from None

    def parts(self, role: str | None = None) -> list[PartInfo]:
        roles: Iterable[str] = ROLES if role is None else (role,)
        out = []
        for rl in roles:
            if rl not in self._parts:
                raise UnknownNameError(f"unknown role {rl!r}; roles are: {', '.join(ROLES)}")
            out.extend(self._parts[rl][n] for n in sorted(self._parts[rl]))
        return out

    def part_names(self, role: str) -> list[str]:
        return [info.name for info in self.parts(role)]

    def method(self, name: str, *, check_parts: bool = True) -> MethodSpec:
        """The method spec ``name``, with its ``extends`` chain resolved.

        With ``check_parts`` (the default) every part of the spec is built once, so that a part
        name or a parameter the spec itself gets wrong is a :class:`~spcakit.core.errors.SpecError`
        naming the spec's file and the part's role (``x.toml: truncator: ...``) rather than an
        error at run time that does not say where the value came from. Listing methods does not
        check, so that one broken spec cannot hide the others.
        """
        info = self._info(name)
        spec = MethodSpec.from_dict(self._resolved(name, ()), where=info.where)
        if check_parts and name not in self._checked:
            self._check_parts(spec, info.where)
            self._checked.add(name)
        return spec

    def _check_parts(self, spec: MethodSpec, where: str) -> None:
        refs = [(role, getattr(spec, role)) for role in PART_ROLES]
        refs += [(role, ref) for role, ref in spec.cardinality.items()]
        for role, ref in refs:
            if ref is None:
                continue
            try:
                self.build(role, ref)
            except SpcakitError as exc:
                raise SpecError(f"{where}: {role}: {exc}") from None

    def _info(self, name: str) -> _RegisteredSpec:
        try:
            return self._methods[name]
        except KeyError:
            if name in self._refused:
                info, reason = self._refused[name]
                raise UnknownNameError(
                    f"method {name!r} (plugin {info.plugin!r}) is unavailable: {reason}; a plugin it needs may be "
                    f"disabled (SPCAKIT_DISABLE_PLUGINS) or missing"
                ) from None
            raise UnknownNameError(
                f"unknown method {name!r}; registered methods: {', '.join(sorted(self._methods)) or '(none)'}"
            ) from None

    def _resolved(self, name: str, seen: tuple[str, ...]) -> dict[str, Any]:
        info = self._refused[name][0] if name in self._refused and name not in self._methods else self._info(name)
        raw = dict(info.raw)
        parent = raw.pop("extends", None)
        if parent is None:
            return raw
        if not isinstance(parent, str):
            raise SpecError(f"{info.where}: extends must be a method name; got {parent!r}")
        if parent in seen + (name,):
            raise SpecError(f"{info.where}: 'extends' goes round in a circle: {' -> '.join(seen + (name, parent))}")
        if parent not in self._methods and parent not in self._refused:
            raise SpecError(f"{info.where}: extends unknown method {parent!r}")
        base = expand_solver(self._resolved(parent, seen + (name,)), info.where)  # the child may replace its parts
        if "solver" in raw:  # the child's own solver stands for them (and its default stopper, unless it names one)
            base = {key: value for key, value in base.items() if key not in ("updater", *SOLVER_ROLES)}
        base.pop("compose_default", None)  # a default composition is not inherited
        base.pop("fit_default", None)  # nor the default method
        if "cardinality" in base and "cardinality" not in raw:
            # a cardinality form stands in for the parent's parts: it goes with the parts it replaces
            kept = {role: ref for role, ref in base["cardinality"].items() if role not in raw}
            if kept:
                base["cardinality"] = kept
            else:
                del base["cardinality"]
        return {**base, **raw}

    def methods(self) -> list[MethodInfo]:
        """Every registered method (resolved) with its plugin, by name."""
        return [MethodInfo(spec=self.method(n, check_parts=False), plugin=self._methods[n].plugin)
                for n in sorted(self._methods)]

    def method_plugin(self, name: str) -> str:
        return self._info(name).plugin

    def method_names(self) -> list[str]:
        return sorted(self._methods)

    def default_composition(self, driver: str) -> MethodSpec | None:
        """The method a plugin declared (``compose_default = true``) as ``compose()``'s defaults for ``driver``."""
        for name in sorted(self._methods):
            raw = self._methods[name].raw
            if raw.get("compose_default") and raw.get("driver") == driver:
                return self.method(name)
        return None

    def default_driver(self, deflates: bool = False) -> str | None:
        """The first driver (by name) that deflates as asked and has a default composition."""
        for info in self.parts("driver"):
            if info.cls.deflates == deflates and self.default_composition(info.name) is not None:
                return info.name
        return None

    def default_method(self) -> MethodSpec | None:
        """The method ``spcakit.fit`` runs when none is named: the first (by name) a plugin marked
        ``fit_default = true``, else the default composition of the default driver."""
        for name in sorted(self._methods):
            if self._methods[name].raw.get("fit_default"):
                return self.method(name)
        driver = self.default_driver()
        return None if driver is None else self.default_composition(driver)

    def metrics(self) -> list[Metric]:
        """Registered metrics in registration order (the order of the text table)."""
        return [info.metric for info in self._metrics.values()]

    def metric_plugin(self, name: str) -> str:
        """The plugin that registered metric ``name``."""
        self.metric(name)
        return self._metrics[name].plugin

    def metric(self, name: str) -> Metric:
        try:
            return self._metrics[name].metric
        except KeyError:
            from spcakit.core.schema import unknown_name

            raise UnknownNameError(unknown_name("metric", name, list(self._metrics))) from None

    # -- building -----------------------------------------------------
    def build(self, role: str, ref: PartRef | str) -> Any:
        """Build a part from a reference, checking its parameters.

        Parameters that are part tables (``{name = ...}``) or lists of them
        are built first, with the same role.
        """
        ref = PartRef.parse(ref, role)
        info = self.part(role, ref.name)
        accepted = info.parameters()
        unknown = [k for k in ref.params if k not in accepted]
        if unknown:
            valid = ", ".join(accepted) or "(none)"
            raise InvalidParameterError(
                f"{role} {ref.name!r} has no parameter {', '.join(map(repr, unknown))}; its parameters are: {valid}"
            )
        kwargs = {k: self._build_nested(role, v) for k, v in ref.params.items()}
        with self.attributed(role, ref.name):
            try:
                return info.cls(**kwargs)
            except TypeError as exc:
                raise InvalidParameterError(f"{role} {ref.name!r}: {exc}") from None

    @contextlib.contextmanager
    def attributed(self, role: str, name: str) -> Iterator[None]:
        """Within it, a part's unexpected exception (a bug: not a :class:`~spcakit.core.errors.SpcakitError`, which
        says the input is at fault, nor an interruption) becomes a :class:`~spcakit.core.errors.PartFailure` naming
        the part and its plugin, the original chained. Around every call into a part outside the drivers: its
        constructor (:meth:`build`), ``check`` and ``resolved`` (:func:`spcakit.core.run.build_parts`)."""
        try:
            yield
        except (SpcakitError, PartFailure, KeyboardInterrupt):
            raise
        except BaseException as exc:  # even SystemExit: a part's bug must not end the program unnamed
            info = self._parts.get(role, {}).get(name)
            raise PartFailure(role, name, info.plugin if info is not None else "?", exc) from exc

    def _build_nested(self, role: str, value: Any) -> Any:
        if isinstance(value, PartRef) or (isinstance(value, Mapping) and "name" in value):
            return self.build(role, PartRef.parse(value, role))
        if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, PartRef) or (isinstance(v, Mapping) and "name" in v) for v in value
        ):
            return [self.build(role, PartRef.parse(v, role)) for v in value]
        return value
