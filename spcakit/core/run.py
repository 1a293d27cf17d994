"""The run itself: a method's parts built, its driver run on a problem, its refiner applied.

:func:`requested_spec` finds the method, :func:`check_driver` and :func:`build_parts` make its parts,
:func:`run_parts` runs the driver and the refiner and returns the driver's
:class:`~spcakit.core.records.Outcome`, the (refined) loadings and the refiner's report. A part's bug is
re-raised as a :class:`~spcakit.core.errors.PartFailure` naming the part and its plugin
(:func:`part_failure`). Reading the data, the default ``k`` and the metrics are the workflows' business
(:func:`spcakit.fit`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from spcakit.core.drivers import Parts, StepCallback, checked_matrix
from spcakit.core.errors import BadPartResult, InvalidParameterError, PartFailure, SpcakitError, UnknownNameError
from spcakit.core.protocols import PART_ROLES, Refined
from spcakit.core.registry import Registry
from spcakit.core.specs import MethodSpec

if TYPE_CHECKING:
    from spcakit.inputs.problem import Problem


def build_parts(spec: MethodSpec, registry: Registry, problem: Problem) -> Parts:
    """Build every part of ``spec`` and check the truncation parameter against ``p``."""
    built = {role: registry.build(role, getattr(spec, role)) for role in PART_ROLES if getattr(spec, role) is not None}
    with registry.attributed("truncator", spec.truncator.name):  # a check that raises other than to refuse: a bug
        built["truncator"].check(problem.p)
    return Parts(**built)


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


def part_failure(exc: BaseException, registry: Registry) -> BaseException:
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


def requested_spec(method: str | MethodSpec | None, registry: Registry) -> MethodSpec:
    """The spec ``method`` names: a registered name, a :class:`MethodSpec`, or (``None``) the default method."""
    if method is None:
        method = registry.default_method()
        if method is None:
            raise UnknownNameError("no method named and no plugin declares a default composition; name a method")
    spec = registry.method(method) if isinstance(method, str) else method
    if not isinstance(spec, MethodSpec):
        raise UnknownNameError(f"method must be a name or a MethodSpec; got {type(method).__name__}")
    return spec


def run_parts(
    driver: Any, fitted: Problem, r: int, parts: Parts, seed: int, on_step: StepCallback | None, registry: Registry
) -> tuple[Any, np.ndarray, dict[str, int | float]]:
    """The driver's outcome, the (refined) loadings and the refiner's report; a part's bug names the part."""
    try:
        outcome = driver(fitted, r, parts, np.random.default_rng(seed), on_step)
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
        raise part_failure(exc, registry) from exc
    return outcome, loadings, report
