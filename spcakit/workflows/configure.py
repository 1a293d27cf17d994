r"""Methods configured for a run: composed from parts, the sparsity ``k``, non-negative loadings, another part.

:func:`compose` makes a method spec from parts (the driver's default composition for the rest); :func:`configure` applies a run's settings to a spec (``k``, ``lam``, part parameters, another truncator,
deflator, stopper or refiner, ``nonnegative``), through :func:`set_k` and
:func:`spcakit.core.composition.set_param`; the rest of the module is the one contract for ``k``
(:func:`cardinality`, :func:`check_k`, :func:`default_k`, :func:`needs_k`) and for non-negative loadings
(:func:`with_nonnegative`). :mod:`spcakit.workflows.fit` runs what is configured here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import numpy as np

from spcakit.core.composition import at, normalized_refs, part_refs, replace_part, set_at, set_param
from spcakit.core.errors import InvalidParameterError
from spcakit.core.fields import to_int
from spcakit.core.plugins import get_registry
from spcakit.core.protocols import PART_ROLES, REQUIRED_PART_ROLES, means_none
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec, PartRef
from spcakit.parts import nonnegative


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


def check_k(k: Any, r: int | None = None, p: int | None = None) -> int | list[int] | None:
    """``k`` checked once, as :func:`spcakit.fit` and :class:`~spcakit.estimator.SparsePCA` take it: ``None``, an
    integer, or a list with one cardinality per component (``r`` of them). Returns it as an ``int`` or a list.

    With ``p`` (the estimator, whose parameters are checked before anything runs), every value must lie in
    :math:`[1, p]`; :func:`spcakit.fit` passes none, because it lowers a ``k`` above the number of variables
    that vary (:func:`lowered_k`), and the part that holds ``k`` checks the range it needs (``r <= k`` for
    FSPCA's shared support, for instance) against the variables it runs on.
    """
    if k is None:
        return None
    value = cardinality(k)
    values = list(value) if isinstance(value, tuple) else [value]
    if p is not None:
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidParameterError(
                    f"k (nonzeros per component) must be a positive integer, a list of them (one per component) "
                    f"or None; got {k!r}"
                )
            if v > p:
                raise InvalidParameterError(
                    f"k={v} nonzeros per component is more than the data's n_features={p}; valid: 1 <= k <= {p}"
                )
    if r is not None and isinstance(value, tuple) and len(value) != r:
        raise InvalidParameterError(
            f"k lists {len(value)} cardinalities {list(value)} for r={r} components; give one per component "
            f"(a list of length {r}) or one integer for all"
        )
    return values if isinstance(value, tuple) else value


def lowered_k(k: Any, varying: int) -> int | list[int] | None:
    """``k`` with every value above ``varying`` (the number of variables that vary) lowered to it, or ``None``
    when none is above (or ``k`` is ``None``).

    A loading cannot have more nonzeros than there are variables with variance (those without get zero
    loadings), so every ``k`` from ``varying`` up means "no truncation among them": :func:`fit` lowers it,
    with a :class:`~spcakit.core.errors.ConstantColumnWarning`, rather than refuse it, so that a grid of ``k`` up
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


def k_text(k: Any) -> str:
    value = cardinality(k)
    return str(list(value)) if isinstance(value, tuple) else str(value)


def with_cardinality_form(spec: MethodSpec, registry: Registry) -> MethodSpec:
    """``spec`` with the parts of its ``cardinality`` form in place of its own (the form is then used up)."""
    for role, ref in spec.cardinality.items():
        spec = attrs.evolve(spec, **{role: replace_part(role, getattr(spec, role), ref, registry)})
    return attrs.evolve(spec, cardinality={})


def _cardinality_parts(spec: MethodSpec, registry: Registry) -> Iterator[tuple[str, tuple[Any, ...], PartRef, Any]]:
    """``(role, path, part reference, part info)`` of every part of ``spec`` that declares a cardinality field
    (``@part(k=...)``), nested parts included."""
    for role in PART_ROLES:
        ref = getattr(spec, role)
        if ref is None:
            continue
        for path, sub in part_refs(ref):
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

        formed = attrs.evolve(formed, **{role: at(getattr(formed, role), path, change)})
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


# -- non-negative loadings ------------------------------------------------------------------
#: The parameter by which a part that keeps its loadings non-negative itself says so (the ``portfolio`` of
#: ``auto``, the ``restarted-power`` solver): :func:`with_nonnegative` sets it instead of wrapping a truncation.
NONNEGATIVE_PARAMETER = "nonnegative"


def _nonnegative_parts(spec: MethodSpec, registry: Registry) -> list[tuple[str, tuple[Any, ...], PartRef]]:
    """``(role, path, ref)`` of every part of ``spec`` (nested ones included) that takes :data:`NONNEGATIVE_PARAMETER`."""
    return [(role, path, sub) for role in PART_ROLES if getattr(spec, role) is not None
            for path, sub in part_refs(getattr(spec, role))
            if NONNEGATIVE_PARAMETER in registry.part(role, sub.name).parameters()]  # fmt: skip


def is_nonnegative(spec: MethodSpec, registry: Registry | None = None) -> bool:
    """Whether ``spec`` keeps its loadings non-negative: its truncation is wrapped in ``nonnegative``, or a part
    that takes :data:`NONNEGATIVE_PARAMETER` has it set."""
    return spec.truncator.name == nonnegative.NONNEGATIVE or any(
        sub.params.get(NONNEGATIVE_PARAMETER) is True for _, _, sub in _nonnegative_parts(spec, registry or get_registry()))


def nonnegative_refusal(spec: MethodSpec, registry: Registry) -> str | None:
    """Why ``spec`` cannot keep its loadings non-negative (``None``: it can)."""
    declaring = _nonnegative_parts(spec, registry)
    if spec.refiner is not None and not any(role == "refiner" for role, _, _ in declaring):
        return (f"its refiner {spec.refiner.name!r} re-fits the finished loadings without the sign constraint; skip it "
                "(refiner='none', --refiner none)")  # fmt: skip
    if not declaring and spec.truncator.name == "none":
        return ("it has no truncation step to keep the loadings non-negative (its loadings come from a solver or an "
                "eigen-decomposition, or are dense)")  # fmt: skip
    return None


def methods_taking_nonnegative(registry: Registry | None = None, *, without_refiner: bool = False) -> list[str]:
    """The registered methods that accept ``nonnegative=True`` as registered (with ``without_refiner``: those that
    accept it only once their refiner is skipped, ``refiner="none"``)."""
    registry = registry or get_registry()
    names = []
    for info in registry.methods():
        as_registered = nonnegative_refusal(info.spec, registry) is None
        unrefined = info.spec.refiner is not None and nonnegative_refusal(attrs.evolve(info.spec, refiner=None), registry) is None
        if (unrefined and not as_registered) if without_refiner else as_registered:
            names.append(info.spec.name)
    return names


def with_nonnegative(spec: MethodSpec, registry: Registry | None = None) -> MethodSpec:
    r"""``spec`` with non-negative loadings (:mod:`spcakit.parts.nonnegative`): ``fit(nonnegative=True)``.

    A part that keeps its loadings non-negative itself (it takes the parameter ``nonnegative``: the
    ``portfolio`` of ``auto``, the ``restarted-power`` solver) gets ``nonnegative = true``; a method that
    truncates (its truncator is not ``none``) gets its truncation wrapped in the ``nonnegative`` truncator,
    its ``cardinality`` form too, so that ``k`` still reaches the inner truncation (:func:`set_k` walks nested
    parts). Idempotent.

    Raises
    ------
    InvalidParameterError
        The method has neither (a one-shot solver, PCA, FSPCA's row supports), or a refiner that re-fits the
        loadings without the constraint; the message names the method and the methods that accept it.
    """
    registry = registry or get_registry()
    refusal = nonnegative_refusal(spec, registry)
    if refusal is not None:
        unrefined = methods_taking_nonnegative(registry, without_refiner=True)
        raise InvalidParameterError(
            f"method {spec.name!r} cannot keep its loadings non-negative: {refusal}. Methods that take "
            f"nonnegative=True (--nonnegative): {', '.join(methods_taking_nonnegative(registry)) or '(none registered)'}"
            + (f"; with refiner='none' also {', '.join(unrefined)}" if unrefined else "")
        )
    for role, path, _ in _nonnegative_parts(spec, registry):
        spec = attrs.evolve(spec, **{role: set_at(getattr(spec, role), path, NONNEGATIVE_PARAMETER, True)})
    if spec.truncator.name != "none":
        form = {role: nonnegative.wrapped(ref) if role == "truncator" else ref for role, ref in spec.cardinality.items()}
        spec = attrs.evolve(spec, truncator=nonnegative.wrapped(spec.truncator), cardinality=form)
    return spec


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
    nonnegative: bool = False,
    constraint: str | None = None,
) -> MethodSpec:
    """Return ``spec`` with a truncator, its λ, a deflator, the stopper, the refiner, the sparsity ``k`` and part
    parameters replaced, and (``nonnegative=True``) non-negative loadings (:func:`with_nonnegative`), then
    (``constraint``) non-redundant ones (:func:`with_constraint`, last).

    ``refiner="none"`` removes the method's refiner. A truncator given here
    replaces the one the method's ``cardinality`` form stands in for (so
    ``k`` then needs a truncator that counts nonzeros). ``k`` is set by
    :func:`set_k`, before the part parameters.
    """
    registry = registry or get_registry()
    spec = attrs.evolve(spec, **{role: normalized_refs(getattr(spec, role)) for role in PART_ROLES if getattr(spec, role) is not None})
    if truncator is not None:
        registry.part("truncator", truncator)
        form = {role: ref for role, ref in spec.cardinality.items() if role != "truncator"}
        spec = attrs.evolve(spec, truncator=replace_part("truncator", spec.truncator, PartRef(truncator), registry),
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
        ref = normalized_refs(PartRef.parse(stopper, "stopper"))
        registry.part("stopper", ref.name)
        spec = attrs.evolve(spec, stopper=ref)
    if refiner is not None:
        ref = None if means_none(refiner) else normalized_refs(PartRef.parse(refiner, "refiner"))
        if ref is not None:
            registry.part("refiner", ref.name)
        spec = attrs.evolve(spec, refiner=ref)
    if k is not None:
        spec = set_k(spec, k, registry, lam=lam, params=params)
    for key, value in (params or {}).items():
        spec = set_param(spec, key, value, registry)
    if nonnegative:
        spec = with_nonnegative(spec, registry)
    if constraint is not None:
        if nonnegative:
            raise InvalidParameterError("nonnegative=True and a constraint cannot be combined: the constraint's re-fits "
                                        "change the loadings' signs; choose one")
        if refiner is not None and not means_none(refiner):
            raise InvalidParameterError(
                f"constraint={constraint!r} sets the refiner (the {constraint!r} refiner makes the loadings "
                f"{constraint}); give refiner or constraint, not both")
        spec = with_constraint(spec, constraint, registry)
    return spec


# -- non-redundant loadings -----------------------------------------------------------------------------------------
#: The constraints ``fit(constraint=...)`` takes: orthogonal loadings (:math:`u_t^\top u_s = 0`) or uncorrelated scores
#: (:math:`u_t^\top C u_s = 0`). Each is also the name of the refiner that imposes it (the deflation plugin's).
CONSTRAINTS = ("orthogonal", "uncorrelated")

#: The parameter by which a part that imposes the constraint itself says so (the ``portfolio`` of ``auto``).
CONSTRAINT_PARAMETER = "constraint"


def check_constraint(constraint: Any) -> str | None:
    """``constraint`` as a name of :data:`CONSTRAINTS`, or ``None`` for none (``None`` or ``"none"``)."""
    if constraint is None or (isinstance(constraint, str) and means_none(constraint)):
        return None
    if not isinstance(constraint, str) or constraint not in CONSTRAINTS:
        raise InvalidParameterError(
            f"constraint must be one of {', '.join(repr(c) for c in CONSTRAINTS)} or None; got {constraint!r}")
    return constraint


def constraint_of(spec: MethodSpec) -> str | None:
    """The constraint ``spec`` imposes (:func:`with_constraint`), or ``None``."""
    if spec.refiner is not None and spec.refiner.name in CONSTRAINTS:
        return spec.refiner.name
    given = spec.updater.params.get(CONSTRAINT_PARAMETER)
    return given if isinstance(given, str) and given in CONSTRAINTS else None


def with_constraint(spec: MethodSpec, constraint: str, registry: Registry | None = None) -> MethodSpec:
    r"""``spec`` whose loadings are non-redundant: ``fit(constraint="orthogonal" | "uncorrelated")``.

    A part that imposes it itself (it takes the parameter ``constraint``: the ``portfolio`` of ``auto``, which
    refines every member under it and keeps the one that explains the most) gets it set; any other method gets the
    refiner of that name (:mod:`spcakit_deflation.nonredundant`), in place of its own: starting from the method's
    loadings, each is fitted in turn given the others, on the feasible set, by support swaps.
    """
    registry = registry or get_registry()
    if constraint not in registry.part_names("refiner"):
        raise InvalidParameterError(f"constraint={constraint!r} needs the refiner {constraint!r}, which no enabled "
                                    "plugin registers (it comes with the built-in deflation plugin)")
    if CONSTRAINT_PARAMETER in registry.part("updater", spec.updater.name).parameters():
        return attrs.evolve(spec, updater=spec.updater.evolve_params(**{CONSTRAINT_PARAMETER: constraint}))
    return attrs.evolve(spec, refiner=PartRef(constraint))
