"""The typed registry of parts and methods.

Plugins add entries through the ``register`` callbacks their hooks receive;
a name can be registered once per role, and a second registration raises
:class:`~spcakit.errors.DuplicateNameError` naming both plugins. Building a
part checks its parameters against the factory's signature, so a typo in a
spec or on the command line is an error, not a silently ignored setting.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from spcakit.errors import DuplicateNameError, InvalidParameterError, UnknownNameError
from spcakit.protocols import ROLES
from spcakit.specs import MethodSpec, PartRef


@attrs.frozen(kw_only=True)
class PartInfo:
    """A registered part: its factory and what it is.

    Attributes
    ----------
    role, name
        Where it is registered (``truncator``, ``hard``).
    factory
        Called with the part's parameters as keywords; returns the part.
    summary
        One line for ``spcakit parts``.
    paper
        The paper (title and authors) the part comes from.
    lam
        Name of the factory parameter that ``--lam`` sets (truncators).
    plugin
        Name of the plugin that registered it.
    """

    role: str
    name: str
    factory: Callable[..., Any] = attrs.field(eq=False)
    summary: str = ""
    paper: str = ""
    lam: str | None = None
    plugin: str = ""

    def parameters(self) -> dict[str, Any]:
        """The factory's keyword parameters and their defaults."""
        out = {}
        for name, prm in inspect.signature(self.factory).parameters.items():
            if prm.kind in (prm.VAR_KEYWORD, prm.VAR_POSITIONAL):
                continue
            out[name] = None if prm.default is prm.empty else prm.default
        return out


@attrs.frozen(kw_only=True)
class MethodInfo:
    spec: MethodSpec
    plugin: str = ""


class Registry:
    """Parts by role and name, and method specs by name."""

    def __init__(self) -> None:
        self._parts: dict[str, dict[str, PartInfo]] = {role: {} for role in ROLES}
        self._methods: dict[str, MethodInfo] = {}

    # -- registration -------------------------------------------------
    def register_part(
        self,
        role: str,
        name: str,
        factory: Callable[..., Any],
        *,
        summary: str = "",
        paper: str = "",
        lam: str | None = None,
        plugin: str = "",
    ) -> PartInfo:
        if role not in self._parts:
            raise UnknownNameError(f"unknown role {role!r}; roles are: {', '.join(ROLES)}")
        if not callable(factory):
            raise TypeError(f"factory for {role} {name!r} must be callable")
        existing = self._parts[role].get(name)
        if existing is not None:
            raise DuplicateNameError(
                f"{role} {name!r} is already registered by plugin {existing.plugin!r}; "
                f"plugin {plugin!r} cannot register it again (choose another name)"
            )
        info = PartInfo(role=role, name=name, factory=factory, summary=summary, paper=paper, lam=lam, plugin=plugin)
        self._parts[role][name] = info
        return info

    def register_method(self, spec: MethodSpec, *, plugin: str = "") -> MethodInfo:
        existing = self._methods.get(spec.name)
        if existing is not None:
            raise DuplicateNameError(
                f"method {spec.name!r} is already registered by plugin {existing.plugin!r}; "
                f"plugin {plugin!r} cannot register it again (choose another name)"
            )
        info = MethodInfo(spec=spec, plugin=plugin)
        self._methods[spec.name] = info
        return info

    def unregister_plugin(self, plugin: str) -> None:
        """Remove every part and method a plugin registered."""
        for table in self._parts.values():
            for name in [n for n, info in table.items() if info.plugin == plugin]:
                del table[name]
        for name in [n for n, info in self._methods.items() if info.plugin == plugin]:
            del self._methods[name]

    # -- look-up ------------------------------------------------------
    def part(self, role: str, name: str) -> PartInfo:
        if role not in self._parts:
            raise UnknownNameError(f"unknown role {role!r}; roles are: {', '.join(ROLES)}")
        try:
            return self._parts[role][name]
        except KeyError:
            raise UnknownNameError(
                f"unknown {role} {name!r}; registered {role}s: {', '.join(sorted(self._parts[role])) or '(none)'}"
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

    def method(self, name: str) -> MethodSpec:
        try:
            return self._methods[name].spec
        except KeyError:
            raise UnknownNameError(
                f"unknown method {name!r}; registered methods: {', '.join(sorted(self._methods)) or '(none)'}"
            ) from None

    def methods(self) -> list[MethodInfo]:
        return [self._methods[n] for n in sorted(self._methods)]

    def method_names(self) -> list[str]:
        return sorted(self._methods)

    # -- building -----------------------------------------------------
    def build(self, role: str, ref: PartRef | str) -> Any:
        """Build a part from a reference, checking its parameters.

        Parameters that are part tables (``{name = ...}``) or lists of them
        are built first, with the same role.
        """
        ref = PartRef.parse(ref, role)
        info = self.part(role, ref.name)
        accepted = info.parameters()
        takes_any = any(
            p.kind is p.VAR_KEYWORD for p in inspect.signature(info.factory).parameters.values()
        )
        unknown = [k for k in ref.params if k not in accepted]
        if unknown and not takes_any:
            valid = ", ".join(accepted) or "(none)"
            raise InvalidParameterError(
                f"{role} {ref.name!r} has no parameter {', '.join(map(repr, unknown))}; its parameters are: {valid}"
            )
        kwargs = {k: self._build_nested(role, v) for k, v in ref.params.items()}
        try:
            return info.factory(**kwargs)
        except TypeError as exc:
            raise InvalidParameterError(f"{role} {ref.name!r}: {exc}") from None

    def _build_nested(self, role: str, value: Any) -> Any:
        if isinstance(value, PartRef) or (isinstance(value, dict) and "name" in value):
            return self.build(role, PartRef.parse(value, role))
        if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, PartRef) or (isinstance(v, dict) and "name" in v) for v in value
        ):
            return [self.build(role, PartRef.parse(v, role)) for v in value]
        return value
