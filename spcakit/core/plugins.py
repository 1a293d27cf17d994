"""Plugin loading: built-ins and third-party packages through one entry-point group.

Every plugin, the built-in ones included, is found through the ``spcakit``
entry-point group and registered with a pluggy ``PluginManager``; its hooks
then fill a :class:`~spcakit.core.registry.Registry`. A plugin that fails to
import or to register is recorded with its error and skipped, so one broken
package never takes the command line down.

Environment variables:

``SPCAKIT_LOAD_PLUGINS``
    Comma-separated entry-point names: load only these (empty: none).
``SPCAKIT_DISABLE_PLUGINS``
    Comma-separated entry-point names never to load.

A name in either that no installed plugin has is noted with the closest installed name (environment_notes): the
command line prints it, :func:`get_session` warns it (a ``UserWarning`` at the caller's line of code).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pluggy

from spcakit.core import hookspecs
from spcakit.core.registry import Registry
from spcakit.core.schema import did_you_mean
from spcakit.core.specs import MethodSpec, read_toml, spec_files

ENTRY_POINT_GROUP = "spcakit"
#: The plugin every session loads first, whatever the environment variables say: the generic drivers, parts
#: and metrics (named, as pytest names its built-in plugins, so that the kernel imports none of them).
BUILTIN_PLUGIN = "spcakit.parts.plugin"
from spcakit.core.hookspecs import hookimpl  # noqa: F401  (re-exported)

HOOK_NAMES = ("spcakit_register_parts", "spcakit_register_methods", "spcakit_register_metrics",
              "spcakit_register_experiment_pieces")


@attrs.frozen(kw_only=True)
class PluginRecord:
    """One plugin as ``spcakit plugins`` shows it."""

    name: str
    version: str = ""
    package: str = ""
    hooks: tuple[str, ...] = ()
    error: str | None = None
    #: ``"method: reason"`` for each of its methods set aside because a part it names is not registered
    refused: tuple[str, ...] = ()


class PluginSession:
    """A plugin manager, the registry its plugins filled, and what happened."""

    def __init__(self) -> None:
        self.manager = pluggy.PluginManager("spcakit")
        self.manager.add_hookspecs(hookspecs)
        self.registry = Registry()
        self.records: dict[str, PluginRecord] = {}
        self.loaded = False  # every entry point loaded: methods are checked as each later plugin comes
        #: What the environment variables name that no installed plugin is (a typo is said, never ignored).
        self.environment_notes: tuple[str, ...] = ()

    # -- adding plugins ---------------------------------------------------
    def add(self, plugin: Any, name: str, *, version: str = "", package: str = "") -> PluginRecord:
        """Register ``plugin`` and run its hooks into the registry."""
        if name in self.records or self.manager.get_plugin(name) is not None:
            return PluginRecord(name=name, version=version, package=package,
                                error=f"a plugin named {name!r} is already loaded; choose another name")
        unknown = sorted(
            attr for attr in dir(plugin) if attr.startswith("spcakit_") and attr not in HOOK_NAMES and callable(getattr(plugin, attr, None))
        )
        if unknown:
            return self._fail(name, version, package,
                              f"unknown hook(s) {', '.join(unknown)}; spcakit hooks are {', '.join(HOOK_NAMES)}")
        try:
            self.manager.register(plugin, name=name)
        except Exception as exc:  # pluggy's PluginValidationError: a hook's arguments differ from the spec
            if self.manager.get_plugin(name) is not None:
                self.manager.unregister(name=name)
            return self._fail(name, version, package, f"cannot register: {type(exc).__name__}: {exc}")
        hooks = tuple(
            h for h in HOOK_NAMES if any(impl.plugin_name == name for impl in getattr(self.manager.hook, h).get_hookimpls())
        )
        try:
            self._call_hooks(name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a plugin's bug (even sys.exit) must not break the others
            self.registry.unregister_plugin(name)
            self.manager.unregister(name=name)
            return self._fail(name, version, package, f"{type(exc).__name__}: {exc}")
        record = PluginRecord(name=name, version=version, package=package, hooks=hooks)
        self.records[name] = record
        if self.loaded:
            self.check_methods()
        return self.records[name]

    def check_methods(self) -> None:
        """Set aside the methods whose specs name parts no loaded plugin registers (see
        :meth:`~spcakit.core.registry.Registry.refuse_broken_methods`) and note them in their plugins' records.

        One plugin's broken or dependent spec then costs that method only: every other method, and
        ``spcakit methods``, keep working.
        """
        refused = self.registry.refuse_broken_methods()
        for name, record in list(self.records.items()):
            notes = tuple(f"{method}: {reason}" for method, (plugin, reason) in sorted(refused.items()) if plugin == name)
            if notes != record.refused:
                self.records[name] = attrs.evolve(record, refused=notes)

    def refused(self) -> list[tuple[str, str]]:
        """``(plugin, "method: reason")`` for every method set aside."""
        return [(record.name, note) for record in self.records.values() for note in record.refused]

    def remove(self, name: str) -> None:
        """Unregister a plugin and everything it registered."""
        self.registry.unregister_plugin(name)
        if self.manager.get_plugin(name) is not None:
            self.manager.unregister(name=name)
        self.records.pop(name, None)

    def _fail(self, name: str, version: str, package: str, error: str) -> PluginRecord:
        record = PluginRecord(name=name, version=version, package=package, error=error)
        self.records[name] = record
        return record

    def _call_hooks(self, name: str) -> None:
        registry = self.registry

        def register_part(classes: type | Iterable[type]) -> None:
            if not isinstance(classes, (type, list, tuple)):
                raise TypeError(f"register() in spcakit_register_parts takes a part class or a list of them; got "
                                f"{_shown(classes)}")  # fmt: skip
            for cls in [classes] if isinstance(classes, type) else classes:
                registry.register_part(cls, plugin=name)

        def register_method(spec: MethodSpec | Mapping[str, Any] | str | Path) -> None:
            if not isinstance(spec, (MethodSpec, Mapping, str, Path)):
                raise TypeError(f"register() in spcakit_register_methods takes a MethodSpec, a spec table (dict), or "
                                f"the path of a TOML spec file or folder; got {_shown(spec)}")  # fmt: skip
            if isinstance(spec, (str, Path)):
                files = spec_files(spec)
                if not files:
                    raise FileNotFoundError(f"no method spec (*.toml) at {spec}")
                for path in files:
                    registry.register_method(read_toml(path), where=str(path), plugin=name)
            else:
                registry.register_method(spec, where=f"plugin {name}", plugin=name)

        def register_metric(metrics: Any) -> None:
            for metric in metrics if isinstance(metrics, (list, tuple)) else [metrics]:
                registry.register_metric(metric, plugin=name)

        def register_piece(kind: str, piece: str, function: Any) -> None:
            registry.register_piece(kind, piece, function, plugin=name)

        for hook_name, register in (
            ("spcakit_register_parts", register_part),
            ("spcakit_register_metrics", register_metric),
            ("spcakit_register_methods", register_method),
            ("spcakit_register_experiment_pieces", register_piece),
        ):
            for impl in getattr(self.manager.hook, hook_name).get_hookimpls():
                if impl.plugin_name == name:
                    returned = impl.function(register=register)
                    if returned is not None:  # what it returns would be silently dropped
                        raise TypeError(
                            f"its hook {hook_name} returned {_shown(returned)} instead of calling register(...) with "
                            "it; a hook registers by calling register (e.g. register(PartClass)) and returns nothing"
                        )

    # -- discovery ------------------------------------------------------------
    def load_entry_points(self) -> None:
        """Load every plugin of the ``spcakit`` entry-point group (honouring the env vars)."""
        only = os.environ.get("SPCAKIT_LOAD_PLUGINS")
        allowed = None if only is None else {s.strip() for s in only.split(",") if s.strip()}
        disabled = {s.strip() for s in os.environ.get("SPCAKIT_DISABLE_PLUGINS", "").split(",") if s.strip()}
        found = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
        origins: dict[int, tuple[str, str]] = {}  # each distribution's (name, version): its metadata parsed once
        for ep in found:
            dist = getattr(ep, "dist", None)
            if dist is not None and id(dist) not in origins:
                metadata = dist.metadata
                origins[id(dist)] = (metadata["Name"] or "", metadata["Version"] or "")
        eps = sorted(found, key=lambda ep: _builtin_first(ep, origins))
        installed = {ep.name for ep in found} | {"core"}
        notes = []
        for variable, names in (("SPCAKIT_LOAD_PLUGINS", allowed or set()), ("SPCAKIT_DISABLE_PLUGINS", disabled)):
            for name in sorted(names - installed):
                guess = did_you_mean(name, sorted(installed))
                notes.append(f"{variable} names {name!r}, which is no installed plugin"
                             + (f" (did you mean {guess!r}?)" if guess else "")
                             + f"; the installed ones: {', '.join(sorted(installed - {'core'}))}")
        self.environment_notes = tuple(notes)
        for ep in eps:
            if ep.name in disabled or (allowed is not None and ep.name not in allowed):
                continue
            if ep.name in self.records:
                continue
            package, version = origins.get(id(getattr(ep, "dist", None)), ("", ""))
            try:
                plugin = ep.load()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # an import that raises, even SystemExit, fails that plugin only
                self._fail(ep.name, version, package, f"failed to import {ep.value!r}: {type(exc).__name__}: {exc}")
                continue
            self.add(plugin, ep.name, version=version, package=package)
        self.loaded = True
        self.check_methods()

    def failures(self) -> list[PluginRecord]:
        return [r for r in self.records.values() if r.error is not None]


def _shown(value: Any) -> str:
    """A value a plugin handed over, for a message: its type and a short ``repr``."""
    try:
        text = repr(value)
    except Exception:
        text = "?"
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _builtin_first(ep: importlib.metadata.EntryPoint, origins: Mapping[int, tuple[str, str]]) -> tuple[int, str]:
    package, _ = origins.get(id(getattr(ep, "dist", None)), ("", ""))
    return (0 if package == "spcakit" else 1, ep.name)


_session: PluginSession | None = None
_PACKAGE = str(Path(__file__).resolve().parents[1])  # a warning points at the first frame outside it


def get_session() -> PluginSession:
    """The process-wide plugin session, loaded on first use."""
    global _session
    if _session is None:
        session = PluginSession()
        session.add(importlib.import_module(BUILTIN_PLUGIN), "core", version=_version(), package="spcakit")
        session.load_entry_points()
        _session = session
        level = 2 + next((i for i, f in enumerate(inspect.stack(0)[1:]) if not f.filename.startswith(_PACKAGE)), 0)
        for note in session.environment_notes:  # a typo in SPCAKIT_*_PLUGINS is said (the command line echoes it)
            warnings.warn(note, UserWarning, stacklevel=level)
    return _session


def get_registry() -> Registry:
    """The registry of every part, method and metric the loaded plugins registered (loaded on first use)."""
    return get_session().registry


def get_plugin_manager() -> pluggy.PluginManager:
    """The pluggy plugin manager of the process-wide session: the loaded plugins and their hooks."""
    return get_session().manager


def reset() -> None:
    """Forget the loaded plugins (the next use loads them again)."""
    global _session
    _session = None


def _version() -> str:
    try:
        return importlib.metadata.version("spcakit")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"
