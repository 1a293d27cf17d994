"""The Python API: :func:`fit` a method to data, :func:`compose` a new method."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from warnings import warn

import attrs
import numpy as np

from spcakit import ties
from spcakit.version import __version__
from spcakit.drivers import Parts, StepCallback, checked_matrix
from spcakit.errors import (
    BadPartResult, ConstantColumnWarning, InvalidParameterError, PartFailure, SpcakitError, UnknownNameError,
)  # fmt: skip
from spcakit.metrics import compute_metrics
from spcakit.plugins import get_registry
from spcakit.problem import Problem, constant_columns_note, zero_variance_text
from spcakit.inputs import as_problem
from spcakit.protocols import PART_ROLES, REPORT_PREFIX, REQUIRED_PART_ROLES, Refined, means_none
from spcakit.registry import Registry
from spcakit.specs import MethodSpec, PartRef
from spcakit.state import CapReached, IssuedWarning, Result
from spcakit.validators import to_int


def compose(
    *,
    driver: str | None = None,
    initializer: str | PartRef | Mapping[str, Any] | None = None,
    updater: str | PartRef | Mapping[str, Any] | None = None,
    truncator: str | PartRef | Mapping[str, Any] | None = None,
    deflator: str | PartRef | Mapping[str, Any] | None = None,
    stopper: str | PartRef | Mapping[str, Any] | None = None,
    refiner: str | PartRef | Mapping[str, Any] | None = None,
    name: str = "composed",
    registry: Registry | None = None,
    k: Any = None,
) -> MethodSpec:
    """Build a method spec from parts, checking every name against the registry.

    Parts not named come from the driver's default composition: the method
    a plugin marked ``compose_default = true`` for that driver (with the
    built-in plugins, SPCArt for ``block``: PCA start, rotation, hard
    thresholding; rSVD-GP for ``deflation``: largest-variance start, power
    steps, projection deflation), with its ``cardinality`` form for the
    parts taken from it. The driver defaults to ``deflation`` when
    a deflator is named, else ``block``. A driver that does not deflate
    refuses a deflator. ``k`` (the number of nonzero variables per loading)
    is set as :func:`fit` sets it; it can also be given to :func:`fit`.

    Examples
    --------
    rSVD-GP with truncation by energy and Schur deflation (no paper ran it)::

        spec = spcakit.compose(driver="deflation", updater="power",
                               truncator="energy", deflator="schur")
        spcakit.fit(data, spec, r=3, lam=0.2)
    """
    registry = registry or get_registry()
    if driver is None:  # the first driver (by name) with a default composition that deflates as asked
        driver = registry.default_driver(deflates=deflator is not None)
        if driver is None:
            raise InvalidParameterError("no registered driver has a default composition; name the driver and every part")
    deflates = registry.part("driver", driver).cls.deflates
    if deflator is not None and not deflates:
        raise InvalidParameterError(
            f"the {driver} driver never deflates, so it takes no deflator; drop the deflator or choose a driver "
            f"that deflates: {', '.join('--driver ' + i.name for i in registry.parts('driver') if i.cls.deflates) or '(none)'}"
        )
    given = {"initializer": initializer, "updater": updater, "truncator": truncator, "deflator": deflator, "stopper": stopper,
             "refiner": refiner}
    default = registry.default_composition(driver)
    refs: dict[str, PartRef | None] = {}
    for role, ref in given.items():
        if role == "refiner" and means_none(ref):
            refs[role] = None
        elif ref is None and default is not None:
            refs[role] = getattr(default, role)
        else:
            refs[role] = None if ref is None else PartRef.parse(ref, role)
    missing = [role for role in REQUIRED_PART_ROLES if refs[role] is None]
    if deflates and refs["deflator"] is None:
        missing.append("deflator")
    if missing:
        raise InvalidParameterError(
            f"the {driver} driver has no default composition; name its {', '.join(missing)}"
        )
    for role, ref in refs.items():
        if ref is not None:
            registry.part(role, ref.name)
    form = {} if default is None else {role: ref for role, ref in default.cardinality.items() if given[role] is None}
    spec = MethodSpec(name=name, driver=driver, summary="composed from parts", cardinality=form, **refs)  # type: ignore[arg-type]
    return spec if k is None else set_k(spec, k, registry)


def _part_refs(ref: PartRef, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], PartRef]]:
    """Walk a part reference and the part references nested in its parameters."""
    yield path, ref
    for key, value in ref.params.items():
        if isinstance(value, PartRef):
            yield from _part_refs(value, path + (key,))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if isinstance(item, PartRef):
                    yield from _part_refs(item, path + (key, i))


def _normalize_refs(ref: PartRef) -> PartRef:
    """Turn nested part tables (dicts with 'name') into PartRefs."""

    def conv(v: Any) -> Any:
        if isinstance(v, Mapping) and "name" in v:
            return _normalize_refs(PartRef.parse(v, "part"))
        if isinstance(v, PartRef):
            return _normalize_refs(v)
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, (Mapping, PartRef)) for x in v):
            return [conv(x) for x in v]
        return v

    return attrs.evolve(ref, params={k: conv(v) for k, v in ref.params.items()})


def _at(ref: PartRef, path: tuple[Any, ...], change: Callable[[PartRef], PartRef]) -> PartRef:
    """``ref`` with ``change`` applied to the part reference nested at ``path``."""
    if not path:
        return change(ref)
    head, rest = path[0], path[1:]
    child = ref.params[head]
    if isinstance(child, list):
        index, rest = rest[0], rest[1:]
        items = list(child)
        items[index] = _at(items[index], rest, change)
        return ref.evolve_params(**{head: items})
    return ref.evolve_params(**{head: _at(child, rest, change)})


def _set_at(ref: PartRef, path: tuple[Any, ...], key: str, value: Any) -> PartRef:
    return _at(ref, path, lambda sub: sub.evolve_params(**{key: value}))


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
        for path, sub in _part_refs(ref):
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
        spec = attrs.evolve(spec, **{role: _set_at(getattr(spec, role), path, bare, value)})
    return spec


# -- the sparsity knob k ------------------------------------------------------------------
#: What ``k`` is, for messages.
K_MEANING = "the number of nonzero variables per loading"


def cardinality(k: Any) -> int | tuple[int, ...]:
    """``k`` as given, with integral numbers as ``int`` (``5.0``, NumPy integers) and a list (or a NumPy
    vector) as a tuple: one cardinality per component.

    The values are checked by the parts that hold them, which know their valid
    range (:math:`1 \\le k \\le p` for a truncation by sparsity and for the
    cardinality solvers, :math:`r \\le k \\le p` for FSPCA's shared support
    and the batch encoder); an empty list is refused here, and a list's
    length against ``r`` by :func:`check_k`.
    """
    if isinstance(k, np.ndarray) and k.ndim == 1:
        k = k.tolist()
    if isinstance(k, (list, tuple)):
        if not k:
            raise InvalidParameterError(f"k ({K_MEANING}) is an empty list; give one integer, or one per component")
        return tuple(to_int(v) for v in k)
    return to_int(k)


def check_k(k: Any, r: int) -> None:
    """A list ``k`` has one cardinality per component (the values are checked by the parts that hold them)."""
    if k is None:
        return
    value = cardinality(k)
    if isinstance(value, tuple) and len(value) != r:
        raise InvalidParameterError(
            f"k lists {len(value)} cardinalities {list(value)} for r={r} components; give one per component "
            f"(a list of length {r}) or one integer for all"
        )


def lowered_k(k: Any, varying: int) -> int | list[int] | None:
    """``k`` with every value above ``varying`` (the number of variables that vary) lowered to it, or ``None``
    when none is above (or ``k`` is ``None``).

    A loading cannot have more nonzeros than there are variables with variance (those without get zero
    loadings), so every ``k`` from ``varying`` up means "no truncation among them": :func:`fit` lowers it,
    with a :class:`~spcakit.errors.ConstantColumnWarning`, rather than refuse it, so that a grid of ``k`` up
    to ``p`` (:func:`spcakit.path`, and :func:`spcakit.cross_validate`, whose folds can have fewer columns
    that vary than the data) keeps working.
    """
    if k is None:
        return None
    value = cardinality(k)
    values = list(value) if isinstance(value, tuple) else [value]
    above = [isinstance(v, int) and not isinstance(v, bool) and v > varying for v in values]
    if not any(above):
        return None  # values that are not integers are refused by the parts as they are
    lowered = [varying if high else v for v, high in zip(values, above)]
    return lowered if isinstance(value, tuple) else lowered[0]


def _k_text(k: Any) -> str:
    value = cardinality(k)
    return str(list(value)) if isinstance(value, tuple) else str(value)


def _replace_part(role: str, old: PartRef, new: PartRef, registry: Registry) -> PartRef:
    """``new`` in place of ``old``, keeping the parameters of ``old`` that ``new`` takes (but not its λ)."""
    old_info = registry.part(role, old.name)
    new_info = registry.part(role, new.name)
    keep = {k: v for k, v in old.params.items() if k in new_info.parameters() and k != old_info.lam}
    return PartRef(new.name, {**keep, **new.params})


def with_cardinality_form(spec: MethodSpec, registry: Registry) -> MethodSpec:
    """``spec`` with the parts of its ``cardinality`` form in place of its own (the form is then used up)."""
    for role, ref in spec.cardinality.items():
        spec = attrs.evolve(spec, **{role: _replace_part(role, getattr(spec, role), ref, registry)})
    return attrs.evolve(spec, cardinality={})


def _cardinality_parts(spec: MethodSpec, registry: Registry) -> Iterator[tuple[str, tuple[Any, ...], PartRef, Any]]:
    """``(role, path, part reference, part info)`` of every part of ``spec`` that declares a cardinality field
    (``@part(k=...)``), nested parts included."""
    for role in PART_ROLES:
        ref = getattr(spec, role)
        if ref is None:
            continue
        for path, sub in _part_refs(ref):
            info = registry.part(role, sub.name)
            if info.k is not None:
                yield role, path, sub, info


def _k_targets(spec: MethodSpec, registry: Registry) -> list[tuple[str, tuple[Any, ...], Any]]:
    """``(role, path, part info)`` of every part of ``spec`` that declares a cardinality field (``@part(k=...)``)."""
    return [(role, path, info) for role, path, _, info in _cardinality_parts(spec, registry)]


def takes_k(spec: MethodSpec, registry: Registry | None = None, *, per_component: bool = False) -> bool:
    """Whether ``spec`` reads the sparsity knob ``k`` (with ``per_component``: one ``k`` per component)."""
    registry = registry or get_registry()
    targets = _k_targets(with_cardinality_form(spec, registry), registry)
    return bool(targets) and (not per_component or all(info.k_per_component for _, _, info in targets))


def methods_taking_k(registry: Registry | None = None, *, per_component: bool = False) -> list[str]:
    """The registered methods that read ``k`` (with ``per_component``: one ``k`` per component)."""
    registry = registry or get_registry()
    return [info.spec.name for info in registry.methods() if takes_k(info.spec, registry, per_component=per_component)]


def _no_k_message(spec: MethodSpec, registry: Registry) -> str:
    truncator = registry.part("truncator", spec.truncator.name)
    if truncator.name == "none":
        how, own = f"its truncation {truncator.name!r} keeps every entry", ""
    elif truncator.lam is not None:
        how = f"its truncation {truncator.name!r} is set by a λ that is not a count"
        own = f"set its own sparsity instead (lam= / --lam: {truncator.lam}), "
    else:
        how, own = f"its truncation {truncator.name!r} does not count nonzeros", "set its own sparsity instead, "
    counting = [info.name for info in registry.parts("truncator") if info.k is not None]
    return (
        f"method {spec.name!r} takes no k ({K_MEANING}): none of its parts holds a cardinality and {how}; "
        f"{own}replace its truncation by one that counts nonzeros "
        f"(truncator= / --truncator: {', '.join(counting) or '(none registered)'}), or choose a method that takes k: "
        f"{', '.join(methods_taking_k(registry)) or '(none registered)'}"
    )


def set_k(
    spec: MethodSpec,
    k: Any,
    registry: Registry | None = None,
    *,
    lam: Any = None,
    params: Mapping[str, Any] | None = None,
) -> MethodSpec:
    r"""Set the sparsity knob ``k``, the number of nonzero variables per loading, on ``spec``.

    The method's ``cardinality`` form (a spec key, e.g. SPCArt's
    ``{ truncator = "sparsity" }``) first replaces the parts it names; then
    every part that declares a cardinality field (``@part(..., k="field")``)
    gets ``k`` in that field, its λ field (the papers' other form of the same
    sparsity) dropped. So ``k`` is the truncation by sparsity with
    :math:`\lambda = p - k` zeros for SPCArt, rSVD-GP(B), ST, TPower and
    SPCA-SP, the cardinality of the ``greedy`` and ``exhaustive`` solvers, the
    shared row support of FSPCA, and the sparsity ``r`` of the encoders.

    A list (one ``k`` per component) goes only to parts that declare
    ``k_per_component``; a list of equal values is one ``k``. ``lam`` and
    ``params`` are what the caller also sets: a λ for a truncation that ``k``
    sets, or a parameter that ``k`` sets or removes, is refused.

    The values themselves are checked by the parts that receive them, which
    know their range (:func:`cardinality`).

    Raises
    ------
    InvalidParameterError
        The method cannot read ``k`` (the message names the methods that
        can), ``k`` is a list that the method cannot take (or an empty one),
        or it is given together with another form of the same sparsity.
    """
    registry = registry or get_registry()
    value = cardinality(k)
    formed = with_cardinality_form(spec, registry)
    targets = _k_targets(formed, registry)
    if not targets:
        raise InvalidParameterError(_no_k_message(spec, registry))
    if isinstance(value, tuple) and len(set(value)) == 1:
        value = value[0]
    if isinstance(value, tuple):
        single = [f"{role} {info.name!r}" for role, _, info in targets if not info.k_per_component]
        if single:
            listing = methods_taking_k(registry, per_component=True)
            raise InvalidParameterError(
                f"method {spec.name!r} takes one k for all its loadings (its {', '.join(single)} holds one cardinality); "
                f"got one per component, {list(value)}: give one integer, or choose a method that takes one k per "
                f"component: {', '.join(listing) or '(none registered)'}"
            )
    if lam is not None and any(role == "truncator" for role, _, _ in targets):
        raise InvalidParameterError(
            f"k and lam both set the sparsity of the truncation {formed.truncator.name!r} of method {spec.name!r}; "
            f"give k ({K_MEANING}) or lam (the papers' λ), not both"
        )
    for key in params or {}:
        role_given, _, bare = key.rpartition(".")
        for role, _, info in targets:
            if (not role_given or role_given == role) and bare in (info.k, info.lam):
                raise InvalidParameterError(
                    f"k sets {role}.{info.k} of {spec.name!r} ({K_MEANING}); give k or {key}, not both"
                )
        for role, ref in spec.cardinality.items():
            old = registry.part(role, getattr(spec, role).name)
            new = registry.part(role, ref.name)
            if (not role_given or role_given == role) and bare in old.parameters() and bare not in new.parameters():
                raise InvalidParameterError(
                    f"with k, method {spec.name!r} uses the {role} {new.name!r} (k nonzeros per loading) instead of "
                    f"{old.name!r}, and {bare!r} is a parameter of {old.name!r}; give k or {key}, not both"
                )
    for role, path, info in targets:

        def change(ref: PartRef, field: str = info.k, lam_field: str | None = info.lam) -> PartRef:
            kept = {name: v for name, v in ref.params.items() if name != lam_field}
            return PartRef(ref.name, {**kept, field: list(value) if isinstance(value, tuple) else value})

        formed = attrs.evolve(formed, **{role: _at(getattr(formed, role), path, change)})
    return formed


#: The rule of the default cardinality (:func:`default_k`), as a result records it.
DEFAULT_K_RULE = "ceil(sqrt(p))"


def default_k(p: int, r: int = 1) -> int:
    r"""The number of nonzero variables per loading that a method which needs one gets when given none:
    :math:`\lceil\sqrt p\rceil`, raised to ``r`` when that is smaller (never above ``p``).

    The one default cardinality of spcakit: :func:`fit` (so :class:`spcakit.SparsePCA` and ``spcakit run`` /
    ``compose``) uses it for every method that :func:`needs_k`. About :math:`\sqrt p` variables per loading
    is sparse without being trivial at any ``p`` (4 of Pitprops' 13, 6 of 30, 32 of 1000). It is at least
    ``r`` because FSPCA's ``r`` loadings share ``k`` variables (``r <= k <= p``) and the batch encoder's ``r``
    features need at least ``r`` variables; the same number for every method keeps their default results
    comparable. The methods whose paper sets a sparsity of its own (SPCArt, rSVD-GP(B), ST, SPCA-SP: hard
    thresholding at :math:`1/\sqrt p`) keep that default and need no ``k``.

    Parameters
    ----------
    p
        The number of variables the method runs on.
    r
        The number of loadings.

    Returns
    -------
    int
        :math:`\min(p, \max(r, \lceil\sqrt p\rceil))`.
    """
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in (p, r)):
        raise InvalidParameterError(f"default_k needs p and r as positive integers; got p={p!r}, r={r!r}")
    return min(int(p), max(int(r), math.isqrt(int(p) - 1) + 1))


def needs_k(spec: MethodSpec, registry: Registry | None = None) -> bool:
    """Whether ``spec`` holds a cardinality that nothing has set, so that it cannot run without ``k``.

    True when some of its parts declare a cardinality field (``@part(k=...)``: TPower's truncation by
    sparsity, the ``greedy`` and ``exhaustive`` solvers, the FSPCA updaters, the encoders' column
    selections) and none of them has that field, or its λ, set (by ``k``, ``lam`` or a part parameter) or
    given a default. A method whose cardinality lives only in its ``cardinality`` form, such as SPCArt
    (hard thresholding with the paper's default λ; truncation by sparsity once ``k`` is given), does not
    need one. :func:`fit` gives a method that needs ``k`` and gets none :func:`default_k`.
    """
    registry = registry or get_registry()
    held = []
    for _, _, sub, info in _cardinality_parts(spec, registry):
        defaults = info.parameters()
        held.append(any(sub.params.get(field, defaults.get(field)) is not None
                        for field in (info.k, info.lam) if field is not None))  # fmt: skip
    return bool(held) and not any(held)


def with_default_k(
    spec: MethodSpec, p: int, r: int, registry: Registry | None = None
) -> tuple[MethodSpec, dict[str, Any] | None]:
    """``(spec, None)``, or when ``spec`` :func:`needs_k`, ``spec`` with ``k = default_k(p, r)`` set by
    :func:`set_k` and the record of it, ``{"k": 4, "rule": "ceil(sqrt(p))"}`` (the rule says when ``r``
    raised it), which :func:`fit` stores as ``Result.spec["default_k"]``."""
    registry = registry or get_registry()
    if not needs_k(spec, registry):
        return spec, None
    k = default_k(p, r)
    root = math.isqrt(int(p) - 1) + 1
    rule = DEFAULT_K_RULE if k == root else f"{DEFAULT_K_RULE} = {root}, raised to r = {k}"
    return set_k(spec, k, registry), {"k": k, "rule": rule}


def configure(
    spec: MethodSpec,
    *,
    truncator: str | None = None,
    lam: float | None = None,
    deflator: str | None = None,
    stopper: str | PartRef | Mapping[str, Any] | None = None,
    refiner: str | PartRef | Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    registry: Registry | None = None,
    k: Any = None,
) -> MethodSpec:
    """Return ``spec`` with a truncator, its λ, a deflator, the stopper, the refiner, the sparsity ``k`` and part
    parameters replaced.

    ``refiner="none"`` removes the method's refiner. A truncator given here
    replaces the one the method's ``cardinality`` form stands in for (so
    ``k`` then needs a truncator that counts nonzeros). ``k`` is set by
    :func:`set_k`, before the part parameters.
    """
    registry = registry or get_registry()
    spec = attrs.evolve(spec, **{role: _normalize_refs(getattr(spec, role)) for role in PART_ROLES if getattr(spec, role) is not None})
    if truncator is not None:
        registry.part("truncator", truncator)
        form = {role: ref for role, ref in spec.cardinality.items() if role != "truncator"}
        spec = attrs.evolve(spec, truncator=_replace_part("truncator", spec.truncator, PartRef(truncator), registry),
                            cardinality=form)  # fmt: skip
    if lam is not None:
        info = registry.part("truncator", spec.truncator.name)
        if info.lam is None:
            raise InvalidParameterError(f"truncator {info.name!r} has no lambda parameter; drop --lam or choose another truncator")
        spec = attrs.evolve(spec, truncator=spec.truncator.evolve_params(**{info.lam: lam}))
    if deflator is not None:
        if spec.deflator is None:
            raise InvalidParameterError(
                f"method {spec.name!r} runs the {spec.driver!r} driver, which does not deflate; --deflator applies "
                f"to methods whose driver deflates: {', '.join(m.spec.name for m in registry.methods() if m.spec.deflator)}"
            )
        registry.part("deflator", deflator)
        spec = attrs.evolve(spec, deflator=PartRef(deflator))
    if stopper is not None:
        ref = _normalize_refs(PartRef.parse(stopper, "stopper"))
        registry.part("stopper", ref.name)
        spec = attrs.evolve(spec, stopper=ref)
    if refiner is not None:
        ref = None if means_none(refiner) else _normalize_refs(PartRef.parse(refiner, "refiner"))
        if ref is not None:
            registry.part("refiner", ref.name)
        spec = attrs.evolve(spec, refiner=ref)
    if k is not None:
        spec = set_k(spec, k, registry, lam=lam, params=params)
    for key, value in (params or {}).items():
        spec = set_param(spec, key, value, registry)
    return spec


def build_parts(spec: MethodSpec, registry: Registry, problem: Problem) -> Parts:
    """Build every part of ``spec`` and check the truncation parameter against ``p``."""
    built = {role: registry.build(role, getattr(spec, role)) for role in PART_ROLES if getattr(spec, role) is not None}
    built["truncator"].check(problem.p)
    return Parts(**built)


def check_r(r: Any, problem: Problem) -> int:
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1:
        raise InvalidParameterError(f"r (number of loadings) must be a positive integer; got {r!r}")
    r = int(r)
    if r > problem.p:
        raise InvalidParameterError(f"r={r} is larger than the number of variables p={problem.p}; valid: 1 <= r <= {problem.p}")
    varying = problem.varying.p
    if r > varying:
        raise InvalidParameterError(
            f"r={r} is larger than the number of variables that vary: {varying} of the {problem.p} "
            f"({zero_variance_text(problem.constant_columns, problem.feature_names)}, and get zero loadings); "
            f"valid: 1 <= r <= {varying}"
        )
    if r > problem.max_rank:
        raise InvalidParameterError(
            f"r={r} is larger than the rank of the centred data (at most n - 1 = {problem.max_rank}); "
            f"valid: 1 <= r <= {problem.max_rank}"
        )
    return r


def checked_report(refiner: object, report: object) -> dict[str, int | float]:
    """A refiner's report as a plain ``{name: number}`` dictionary, or :class:`BadPartResult` naming the refiner.

    Names must be nonempty strings; values finite integers or floats (not booleans). They become
    metrics named ``"refiner_" + name``, which must not be a registered metric's name.
    """
    if not isinstance(report, Mapping):
        raise BadPartResult(refiner, f"the report of Refined must be a mapping of names to numbers; got {type(report).__name__}")
    checked: dict[str, int | float] = {}
    for name, value in report.items():
        if not isinstance(name, str) or not name:
            raise BadPartResult(refiner, f"the report's names must be nonempty strings; got {name!r}")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise BadPartResult(refiner, f"the report's value {name!r} must be a number; got {value!r}")
        if isinstance(value, (int, np.integer)):
            checked[name] = int(value)
        elif math.isfinite(value):
            checked[name] = float(value)
        else:
            raise BadPartResult(refiner, f"the report's value {name!r} must be finite; got {value!r}")
    return checked


def _part_failure(exc: BaseException, registry: Registry) -> BaseException:
    """``exc`` as a :class:`PartFailure` naming the part and its plugin (``exc`` itself when no part is known).

    The part is the one a :class:`BadPartResult` names, else the innermost registered part on the traceback.
    """
    if isinstance(exc, BadPartResult):
        role, name = exc.role, exc.name
    else:
        found = None
        tb = exc.__traceback__
        while tb is not None:
            found = getattr(type(tb.tb_frame.f_locals.get("self")), "__part__", found)
            tb = tb.tb_next
        if found is None:
            return exc
        role, name = found.role, found.name
    plugin = registry.part(role, name).plugin if name in registry.part_names(role) else "?"
    return PartFailure(role, name, plugin, exc)


def fix_signs(x: np.ndarray) -> np.ndarray:
    """Flip each column so that its largest-magnitude entry is positive (and no entry is -0.0).

    Magnitudes equal within the tie tolerance (:mod:`spcakit.ties`) go to the smaller variable index,
    so that rounding noise never flips a loading's sign.
    """
    width = max(1, (1 << 20) // (8 * max(1, x.shape[0])))  # magnitudes of 1 MiB of columns at a time
    idx = np.concatenate([ties.argmax_columns(np.abs(x[:, j : j + width])) for j in range(0, x.shape[1], width)])
    signs = np.sign(x[idx, np.arange(x.shape[1])])
    signs[signs == 0] = 1.0
    fixed = x * signs
    fixed += 0.0  # -0.0 + 0.0 is +0.0
    return fixed


def check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer (or None); got {seed!r}")
    return int(seed)


def check_driver(spec: MethodSpec, registry: Registry) -> None:
    """A driver that deflates needs a deflator; one that does not takes none."""
    deflates = registry.part("driver", spec.driver).cls.deflates
    if deflates and spec.deflator is None:
        raise InvalidParameterError(
            f"method {spec.name!r} uses the {spec.driver} driver, which deflates, but names no deflator; "
            "add deflator = \"projection\" (or another)"
        )
    if not deflates and spec.deflator is not None:
        raise InvalidParameterError(
            f"method {spec.name!r} uses the {spec.driver} driver, which never deflates, but names deflator "
            f"{spec.deflator.name!r}; remove it or use a driver that deflates "
            f"({', '.join(i.name for i in registry.parts('driver') if i.cls.deflates)})"
        )


def resolved_spec(spec: MethodSpec, registry: Registry, parts: Parts, p: int) -> dict[str, Any]:
    """The spec as it ran: every part's defaults filled in, the default lambda made explicit."""
    doc = spec.to_dict()
    for role in PART_ROLES:
        entry = doc.get(role)
        if entry is None:
            continue
        defaults = registry.part(role, entry["name"]).parameters()
        doc[role] = {"name": entry["name"], **{k: v for k, v in defaults.items()}, **{k: v for k, v in entry.items() if k != "name"}}
    doc["truncator"].update(parts.truncator.resolved(p))
    return doc


def _metric_names(metrics: Any) -> list[str]:
    """``metrics`` as a list of names: a string is one name, not a sequence of letters."""
    if isinstance(metrics, str):
        return [metrics]
    try:
        names = list(metrics)
    except TypeError:
        raise InvalidParameterError(f"metrics must be a list of metric names or None; got {metrics!r}") from None
    if not all(isinstance(n, str) for n in names):
        raise InvalidParameterError(f"metrics must be a list of metric names or None; got {metrics!r}")
    return names


def fit(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int = 2,
    *,
    k: int | Sequence[int] | None = None,
    truncator: str | None = None,
    lam: float | None = None,
    deflator: str | None = None,
    stopper: str | PartRef | Mapping[str, Any] | None = None,
    refiner: str | PartRef | Mapping[str, Any] | None = None,
    seed: int | None = 0,
    covariance: bool = False,
    center: bool = True,
    standardize: bool = False,
    feature_names: Sequence[str] | None = None,
    columns: Sequence[str] | str | None = None,
    drop: Sequence[str] | str | None = None,
    on_step: StepCallback | None = None,
    metrics: Sequence[str] | None = None,
    registry: Registry | None = None,
    **params: Any,
) -> Result:
    """Fit a sparse PCA method and return its loadings and metrics.

    Parameters
    ----------
    data
        A data matrix (``n x p``, centred unless ``center=False``; a
        ``scipy.sparse`` one is centred implicitly, never densified: see
        :mod:`spcakit.inputs.sparse`; a ``dask.array.Array`` is read in chunks,
        never whole: see :mod:`spcakit.inputs.dask_arrays`), a
        :class:`~spcakit.inputs.dense.Covariance`, a covariance operator, or a
        :class:`~spcakit.problem.Problem`. Set ``covariance=True`` to read a
        plain array as a covariance matrix.
    method
        A registered method name (``spcakit methods``) or a spec from
        :func:`compose`; by default the method a plugin marked
        ``fit_default = true`` (with the built-in plugins, ``auto``: TPower,
        plain and restarted, greedy and SPCArt at the same ``k``, each refined by swaps, the
        largest CPEV kept), else the block driver's default composition.
    r
        Number of loadings.
    k
        The sparsity of every method in one knob: the number of nonzero
        variables per loading, an integer in :math:`[1, p]` or (for the
        methods that take it) a list with one per loading. Each method
        translates it (:func:`set_k`): SPCArt, rSVD-GP(B), ST, TPower and
        SPCA-SP keep the ``k`` largest entries (truncation by sparsity,
        λ = p − k zeros), ``greedy``/``exhaustive`` solve for cardinality
        ``k``, FSPCA shares ``k`` variables between all loadings, the
        encoders use ``k`` variables per feature. A method whose truncation
        cannot express a cardinality (GPower's penalties, PCA) refuses it,
        naming the methods that take it. Without ``k`` (and without ``lam``
        or a part parameter that sets the sparsity), a method whose paper
        sets a sparsity of its own keeps it (SPCArt, rSVD-GP(B), ST, SPCA-SP:
        hard thresholding at :math:`1/\\sqrt p`), and every other method
        (TPower, ``greedy``, ``exhaustive``, FSPCA, the encoders) gets
        :func:`default_k`, :math:`\\lceil\\sqrt p\\rceil` (at least ``r``),
        recorded in ``Result.spec["default_k"]``. When some columns are constant, a
        ``k`` above the number :math:`p'` of columns that vary is lowered to
        :math:`p'` with a :class:`~spcakit.errors.ConstantColumnWarning`
        (:func:`lowered_k` says why it is not refused).
    truncator, lam
        Replace the method's truncation and its parameter λ: a threshold for
        ``hard``/``soft`` (default :math:`1/\\sqrt p`), a number of zeros per
        loading for ``sparsity``, a fraction of energy for ``energy``
        (default 0.15).
    deflator
        Replace the deflation of a deflation-driver method.
    stopper
        Replace the stopping rule (a name or a part table, e.g.
        ``{"name": "max-iterations", "n": 50}``).
    refiner
        Refine the finished loadings with this part (``"none"``: skip the
        method's refiner). A refiner that returns a
        :class:`~spcakit.protocols.Refined` record has its report stored in
        the metrics as ``"refiner_" + name`` (``swap``: the CPEV before and
        after, the number of swaps and of sweeps).
    seed
        Seed of the random generator given to the parts: 0 by default, so
        that a run is reproducible; ``None`` draws one from the operating
        system. The seed used is recorded as ``Result.seed``.
    covariance
        Read a plain array (or DataFrame) as a covariance matrix.
    center
        Subtract the column means of a data matrix (``False``: the
        covariance is :math:`A^\\top A/n` of the data as given).
    standardize
        Work on the correlation scale: divide each data column by its
        standard deviation (``n - 1`` in the denominator, as the covariance;
        the root mean square when ``center=False``), or turn a covariance
        into its correlation matrix. The result equals the method's result
        on the data's correlation matrix. Use it when the variables have
        different units or scales. A constant column is divided by 1 (its
        recorded scale), not by zero: it stays at zero and gets zero loadings.
    feature_names
        One name per variable (instead of a DataFrame's or a file's names).
    columns, drop
        Keep only the named columns (in that order) / remove the named ones,
        e.g. an ID or label column; a DataFrame's non-numeric columns must
        be removed so. Misspelt names are refused with the closest ones.
    on_step
        Called after every update step as ``on_step(state)`` with the
        driver's :class:`~spcakit.state.IterState` (iteration, loadings,
        objective, component being found): for progress bars, logging or
        early inspection. It must not change the state. When some columns are
        constant, the state's loadings are those of the columns that vary.
    metrics
        The names of the metrics to compute (``spcakit.get_registry().metrics()``
        lists them; default: all). Some metrics cost more than the fit on
        large data (the encoders' losses need passes over the data); name
        only those you read, as :class:`spcakit.SparsePCA` does.
    registry
        The registry to look names up in (default: the plugins' registry).
    **params
        Part parameters, ``name=value`` or ``role.name=value`` (write the
        latter as ``**{"stopper.tol": 1e-4}``).

    Returns
    -------
    Result
        Frozen record with loadings, metrics, iterations, stopping reason,
        objective history, time, and what makes the run repeatable: the
        seed, the spcakit version and the input's record (shape, content
        hash, centring, standardisation).

    Notes
    -----
    **Constant columns.** A column with zero variance (see
    :mod:`spcakit.problem`) gets a zero loading in every component, and a
    :class:`~spcakit.errors.ConstantColumnWarning` names it (the same text is
    in ``Result.warnings``). The method runs on the columns that vary alone
    (:attr:`~spcakit.problem.Problem.varying`): its result there is the
    method's result on the data without the constant columns, and parameters
    that depend on the number of variables (the default threshold
    :math:`1/\\sqrt p`, λ as a number of zeros) count those :math:`p'`. The
    loadings are then re-embedded into all ``p`` rows and the metrics taken
    on all the columns: CPEV is unchanged (constant columns add no variance),
    the sparsities count the zeros of the constant columns too. ``r`` must be
    at most :math:`p'`; data whose columns are all constant are refused.
    """
    registry = registry or get_registry()
    if method is None:
        method = registry.default_method()
        if method is None:
            raise UnknownNameError("no method named and no plugin declares a default composition; name a method")
    spec = registry.method(method) if isinstance(method, str) else method
    if not isinstance(spec, MethodSpec):
        raise UnknownNameError(f"method must be a name or a MethodSpec; got {type(method).__name__}")
    requested = spec
    spec = configure(spec, truncator=truncator, lam=lam, deflator=deflator, stopper=stopper, refiner=refiner,
                     params=params, registry=registry, k=k)
    check_driver(spec, registry)
    chosen_metrics = registry.metrics() if metrics is None else [registry.metric(name) for name in _metric_names(metrics)]
    seed = check_seed(seed)
    if seed is None:  # drawn from the operating system's entropy, and recorded so that the run can be repeated
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    if not isinstance(standardize, (bool, np.bool_)):
        raise InvalidParameterError(f"standardize must be True or False; got {standardize!r}")
    problem = as_problem(data, covariance=covariance, center=center, standardize=bool(standardize),
                         feature_names=feature_names, columns=columns, drop=drop)
    r = check_r(r, problem)
    check_k(k, r)
    fitted = problem.varying  # the columns that vary: the method runs on them alone (constant ones get zero loadings)
    notes: list[str] = []
    if fitted is not problem:
        notes.append(constant_columns_note(problem))
        lowered = lowered_k(k, fitted.p)
        if lowered is not None:
            notes.append(
                f"k={_k_text(k)} is more than the {fitted.p} variables that vary (of {problem.p}); k={_k_text(lowered)} "
                "was used: no loading can have more nonzeros than that"
            )
            spec = configure(requested, truncator=truncator, lam=lam, deflator=deflator, stopper=stopper,
                             refiner=refiner, params=params, registry=registry, k=lowered)  # fmt: skip
        for note in notes:
            warn(note, ConstantColumnWarning, stacklevel=2)
    default = None
    if k is None:  # a method that needs k and got none: the default cardinality
        spec, default = with_default_k(spec, fitted.p, r, registry)
    try:
        parts = build_parts(spec, registry, fitted)
    except InvalidParameterError as exc:
        if fitted is problem:
            raise
        raise InvalidParameterError(
            f"{exc} (the method runs on the {fitted.p} of the {problem.p} variables that vary: "
            f"{zero_variance_text(problem.constant_columns, problem.feature_names)})"
        ) from None
    driver = registry.build("driver", spec.driver)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    try:
        outcome = driver(fitted, r, parts, rng, on_step)
        loadings = outcome.loadings
        report: dict[str, int | float] = {}
        if parts.refiner is not None:
            refined = parts.refiner(fitted, loadings)
            if isinstance(refined, Refined):
                refined, report = refined.loadings, checked_report(parts.refiner, refined.report)
            loadings = checked_matrix(parts.refiner, refined, loadings.shape, "the refined loadings", finite=True)
    except (SpcakitError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # a part's bug (even sys.exit): name the part and its plugin, chain the original
        raise _part_failure(exc, registry) from exc
    seconds = time.perf_counter() - start
    reasons, iterations, history = outcome.stopping_reasons, outcome.iterations, outcome.objective_history
    del outcome  # its loadings are not held beside the sign-fixed ones
    if fitted is not problem:  # zero rows for the constant columns
        embedded = np.zeros((problem.p, loadings.shape[1]))
        embedded[problem.varying_columns] = loadings
        loadings = embedded
    loadings = fix_signs(loadings)
    reason = reasons[0] if len(set(reasons)) == 1 else "; ".join(f"component {i + 1}: {s}" for i, s in enumerate(reasons))
    warnings = tuple(IssuedWarning(note) for note in notes) + tuple(
        f"{'' if len(reasons) == 1 else f'component {i + 1} '}stopped before converging ({s}): the result is not "
        "converged; raise the stopper's iteration cap or loosen its tolerance"
        for i, s in enumerate(reasons) if isinstance(s, CapReached)
    )
    computed = compute_metrics(problem, loadings, chosen_metrics)
    for name, value in report.items():
        if REPORT_PREFIX + name in computed:  # a metric plugin registered that name: the report must not replace it
            clash = BadPartResult(parts.refiner, f"its report entry {name!r} would replace the metric {REPORT_PREFIX + name!r}")
            raise _part_failure(clash, registry) from clash
        computed[REPORT_PREFIX + name] = value
    return Result(
        method=spec.name,
        spec={**resolved_spec(spec, registry, parts, fitted.p), **({} if default is None else {"default_k": default})},
        loadings=loadings,
        feature_names=problem.feature_names,
        metrics=computed,
        iterations=iterations,
        stopping_reason=reason,
        objective_history=tuple(v for v in history if math.isfinite(v)),
        seconds=seconds,
        warnings=warnings,
        seed=seed,
        version=__version__,
        input=problem.input,
    )
