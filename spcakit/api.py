"""The Python API: :func:`fit` a method to data, :func:`compose` a new method."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from spcakit import ties
from spcakit.drivers import Parts, StepCallback, checked_matrix
from spcakit.errors import BadPartResult, InvalidParameterError, PartFailure, SpcakitError, UnknownNameError
from spcakit.metrics import compute_metrics
from spcakit.plugins import get_registry
from spcakit.problem import Problem, as_problem
from spcakit.registry import Registry
from spcakit.specs import MethodSpec, PartRef
from spcakit.state import CapReached, Result

#: Roles whose parts a method spec lists, in order.
PART_ROLES = ("initializer", "updater", "truncator", "deflator", "stopper", "refiner")

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
) -> MethodSpec:
    """Build a method spec from parts, checking every name against the registry.

    Parts not named come from the driver's default composition: the method
    a plugin marked ``compose_default = true`` for that driver (with the
    built-in plugins, SPCArt for ``block``: PCA start, rotation, hard
    thresholding; rSVD-GP for ``deflation``: largest-variance start, power
    steps, projection deflation). The driver defaults to ``deflation`` when
    a deflator is named, else ``block``. A driver that does not deflate
    refuses a deflator.

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
        if role == "refiner" and ref in ("", "none"):
            refs[role] = None
        elif ref is None and default is not None:
            refs[role] = getattr(default, role)
        else:
            refs[role] = None if ref is None else PartRef.parse(ref, role)
    missing = [role for role in ("initializer", "updater", "truncator", "stopper") if refs[role] is None]
    if deflates and refs["deflator"] is None:
        missing.append("deflator")
    if missing:
        raise InvalidParameterError(
            f"the {driver} driver has no default composition; name its {', '.join(missing)}"
        )
    for role, ref in refs.items():
        if ref is not None:
            registry.part(role, ref.name)
    return MethodSpec(name=name, driver=driver, summary="composed from parts", **refs)  # type: ignore[arg-type]


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


def _set_at(ref: PartRef, path: tuple[Any, ...], key: str, value: Any) -> PartRef:
    if not path:
        return ref.evolve_params(**{key: value})
    head, rest = path[0], path[1:]
    child = ref.params[head]
    if isinstance(child, list):
        index, rest = rest[0], rest[1:]
        items = list(child)
        items[index] = _set_at(items[index], rest, key, value)
        return ref.evolve_params(**{head: items})
    return ref.evolve_params(**{head: _set_at(child, rest, key, value)})


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
) -> MethodSpec:
    """Return ``spec`` with a truncator, its λ, a deflator, the stopper, the refiner and part parameters replaced.

    ``refiner="none"`` removes the method's refiner.
    """
    registry = registry or get_registry()
    spec = attrs.evolve(spec, **{role: _normalize_refs(getattr(spec, role)) for role in PART_ROLES if getattr(spec, role) is not None})
    if truncator is not None:
        old = spec.truncator
        old_info = registry.part("truncator", old.name)
        new_info = registry.part("truncator", truncator)
        keep = {k: v for k, v in old.params.items() if k in new_info.parameters() and k != old_info.lam}
        spec = attrs.evolve(spec, truncator=PartRef(truncator, keep))
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
        ref = None if refiner in ("", "none") else _normalize_refs(PartRef.parse(refiner, "refiner"))
        if ref is not None:
            registry.part("refiner", ref.name)
        spec = attrs.evolve(spec, refiner=ref)
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
    if r > problem.max_rank:
        raise InvalidParameterError(
            f"r={r} is larger than the rank of the centred data (at most n - 1 = {problem.max_rank}); "
            f"valid: 1 <= r <= {problem.max_rank}"
        )
    return r


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
    idx = ties.argmax_columns(np.abs(x))
    signs = np.sign(x[idx, np.arange(x.shape[1])])
    signs[signs == 0] = 1.0
    return x * signs + 0.0


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


def fit(
    data: Any,
    method: str | MethodSpec | None = None,
    r: int = 2,
    *,
    truncator: str | None = None,
    lam: float | None = None,
    deflator: str | None = None,
    stopper: str | PartRef | Mapping[str, Any] | None = None,
    refiner: str | PartRef | Mapping[str, Any] | None = None,
    seed: int | None = None,
    covariance: bool = False,
    center: bool = True,
    feature_names: Sequence[str] | None = None,
    on_step: StepCallback | None = None,
    registry: Registry | None = None,
    **params: Any,
) -> Result:
    """Fit a sparse PCA method and return its loadings and metrics.

    Parameters
    ----------
    data
        A data matrix (``n x p``, centred unless ``center=False``), a
        :class:`~spcakit.problem.Covariance`, a covariance operator, or a
        :class:`~spcakit.problem.Problem`. Set ``covariance=True`` to read a
        plain array as a covariance matrix.
    method
        A registered method name (``spcakit methods``) or a spec from
        :func:`compose`; by default the block driver's default composition
        (with the built-in plugins, SPCArt).
    r
        Number of loadings.
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
        method's refiner).
    seed
        Seed of the random generator given to the parts.
    **params
        Part parameters, ``name=value`` or ``role.name=value`` (write the
        latter as ``**{"stopper.tol": 1e-4}``).

    Returns
    -------
    Result
        Frozen record with loadings, metrics, iterations, stopping reason,
        objective history and time.
    """
    registry = registry or get_registry()
    if method is None:
        method = registry.default_method()
        if method is None:
            raise UnknownNameError("no method named and no plugin declares a default composition; name a method")
    spec = registry.method(method) if isinstance(method, str) else method
    if not isinstance(spec, MethodSpec):
        raise UnknownNameError(f"method must be a name or a MethodSpec; got {type(method).__name__}")
    spec = configure(spec, truncator=truncator, lam=lam, deflator=deflator, stopper=stopper, refiner=refiner,
                     params=params, registry=registry)
    check_driver(spec, registry)
    seed = check_seed(seed)
    problem = as_problem(data, covariance=covariance, center=center, feature_names=feature_names)
    r = check_r(r, problem)
    parts = build_parts(spec, registry, problem)
    driver = registry.build("driver", spec.driver)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    try:
        outcome = driver(problem, r, parts, rng, on_step)
        loadings = outcome.loadings
        if parts.refiner is not None:
            loadings = checked_matrix(parts.refiner, parts.refiner(problem, loadings), loadings.shape,
                                      "the refined loadings", finite=True)
    except (SpcakitError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # a part's bug (even sys.exit): name the part and its plugin, chain the original
        raise _part_failure(exc, registry) from exc
    seconds = time.perf_counter() - start
    loadings = fix_signs(loadings)
    reasons = outcome.stopping_reasons
    reason = reasons[0] if len(set(reasons)) == 1 else "; ".join(f"component {i + 1}: {s}" for i, s in enumerate(reasons))
    warnings = tuple(
        f"{'' if len(reasons) == 1 else f'component {i + 1} '}stopped before converging ({s}): the result is not "
        "converged; raise the stopper's iteration cap or loosen its tolerance"
        for i, s in enumerate(reasons) if isinstance(s, CapReached)
    )
    metrics = compute_metrics(problem, loadings, registry.metrics())
    return Result(
        method=spec.name,
        spec=resolved_spec(spec, registry, parts, problem.p),
        loadings=loadings,
        feature_names=problem.feature_names,
        metrics=metrics,
        iterations=outcome.iterations,
        stopping_reason=reason,
        objective_history=tuple(v for v in outcome.objective_history if math.isfinite(v)),
        seconds=seconds,
        warnings=warnings,
    )
