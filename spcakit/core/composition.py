r"""Composing methods: a spec made from parts, a part parameter set, a part replaced.

:func:`set_param` sets a part parameter by ``role.name`` or a
bare name; :func:`replace_part` swaps a part for another of its role, keeping the parameters both take.
:mod:`spcakit.workflows.configure` composes methods and applies a run's settings (``k``, ``lam``, non-negative
loadings) with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from spcakit.core.errors import (
    InvalidParameterError,
)  # fmt: skip
from spcakit.core.protocols import PART_ROLES
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec, PartRef


def part_refs(ref: PartRef, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], PartRef]]:
    """Walk a part reference and the part references nested in its parameters."""
    yield path, ref
    for key, value in ref.params.items():
        if isinstance(value, PartRef):
            yield from part_refs(value, path + (key,))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if isinstance(item, PartRef):
                    yield from part_refs(item, path + (key, i))


def normalized_refs(ref: PartRef) -> PartRef:
    """Turn nested part tables (dicts with 'name') into PartRefs."""

    def conv(v: Any) -> Any:
        if isinstance(v, Mapping) and "name" in v:
            return normalized_refs(PartRef.parse(v, "part"))
        if isinstance(v, PartRef):
            return normalized_refs(v)
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, (Mapping, PartRef)) for x in v):
            return [conv(x) for x in v]
        return v

    return attrs.evolve(ref, params={k: conv(v) for k, v in ref.params.items()})


def at(ref: PartRef, path: tuple[Any, ...], change: Callable[[PartRef], PartRef]) -> PartRef:
    """``ref`` with ``change`` applied to the part reference nested at ``path``."""
    if not path:
        return change(ref)
    head, rest = path[0], path[1:]
    child = ref.params[head]
    if isinstance(child, list):
        index, rest = rest[0], rest[1:]
        items = list(child)
        items[index] = at(items[index], rest, change)
        return ref.evolve_params(**{head: items})
    return ref.evolve_params(**{head: at(child, rest, change)})


def set_at(ref: PartRef, path: tuple[Any, ...], key: str, value: Any) -> PartRef:
    return at(ref, path, lambda sub: sub.evolve_params(**{key: value}))


def set_param(spec: MethodSpec, key: str, value: Any, registry: Registry) -> MethodSpec:
    """Set a part parameter by ``role.name`` or by a bare name accepted by exactly one part."""
    role_filter, _, bare = key.rpartition(".")
    if role_filter and role_filter not in PART_ROLES:
        raise InvalidParameterError(
            f"parameter {key!r}: {role_filter!r} is not a role; write ROLE.NAME with ROLE one of {', '.join(PART_ROLES)}"
        )
    matches = []
    accepted_all = []
    for role in PART_ROLES:
        if role_filter and role != role_filter:
            continue
        ref = getattr(spec, role)
        if ref is None:
            continue
        for path, sub in part_refs(ref):
            accepted = registry.part(role, sub.name).parameters()
            accepted_all.extend(f"{role}.{p}" for p in accepted)
            if bare in accepted:
                matches.append((role, path))
    if not matches:
        raise InvalidParameterError(
            f"no part of method {spec.name!r} takes a parameter {bare!r}; "
            f"valid: {', '.join(sorted(set(accepted_all))) or '(none)'}"
        )
    roles = {role for role, _ in matches}
    if len(roles) > 1:
        raise InvalidParameterError(
            f"parameter {bare!r} is taken by several parts ({', '.join(sorted(roles))}); "
            f"write it as ROLE.{bare}, e.g. {sorted(roles)[0]}.{bare}"
        )
    for role, path in matches:
        spec = attrs.evolve(spec, **{role: set_at(getattr(spec, role), path, bare, value)})
    return spec


def replace_part(role: str, old: PartRef, new: PartRef, registry: Registry) -> PartRef:
    """``new`` in place of ``old``, keeping the parameters of ``old`` that ``new`` takes (but not its λ)."""
    old_info = registry.part(role, old.name)
    new_info = registry.part(role, new.name)
    keep = {k: v for k, v in old.params.items() if k in new_info.parameters() and k != old_info.lam}
    return PartRef(new.name, {**keep, **new.params})


