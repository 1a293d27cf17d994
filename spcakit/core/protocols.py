r"""The kinds of parts every sparse PCA method here is assembled from, and how a part describes itself.

A method alternates two steps on a ``p x r`` iterate :math:`X`:

1. an **Updater** proposes a dense direction :math:`Z` from :math:`X`
   (a rotation of the PCA loadings, a power step :math:`Z = CX`, ...);
2. a **Truncator** zeroes small entries of each column of :math:`Z`,
   giving the next :math:`X`;

starting from the **Initializer**'s :math:`X_0` and until a **Stopper** says
so. A **Deflator** removes a found component from the problem between the
rounds of a deflating **Driver**. A **Refiner** may improve the finished
loadings once, after the driver.

A part is one attrs class that describes itself: it derives from the base
class of its role, its fields are its parameters (checked by
:mod:`spcakit.core.fields`), the first line of its docstring is its summary,
and :func:`part` names it::

    @spcakit.part("hard", paper=PAPER, lam="threshold")
    class HardThreshold(spcakit.Truncator):
        \"\"\"T-l0 hard thresholding ...\"\"\"

        threshold: float | None = attrs.field(default=None, validator=...)

        def __call__(self, z): ...

and ``register(HardThreshold)`` in a plugin's hook registers it.

State
-----
Parts are pure. What a part carries from one step to the next is returned
from that step and given back to it, as in optax:

* ``Updater.init(problem, x0, carry) -> state`` and
  ``Updater.propose(problem, x, state) -> (z, objective, state)``;
* the **carry** (a :class:`~spcakit.core.records.Carry`) is what a run hands from
  one round of a deflating driver to the next: the initializer's
  ``prepare`` makes it, the deflator returns it updated, and the
  initializer and updater of every round read it. Parts store their entries
  under keys they document (SPCA-SP's search subspace, the constraint
  :math:`B = I - QQ^\top` of Mackey's generalized deflation).

Randomness comes only through an explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import attrs
import numpy as np

if TYPE_CHECKING:
    from spcakit.inputs.problem import Problem
    from spcakit.core.records import Carry, IterState, Outcome

#: The roles of a method's parts besides its driver, in the order a method spec lists them.
PART_ROLES = ("initializer", "updater", "truncator", "deflator", "stopper", "refiner")
#: The part roles every method spec fills (a deflator only with a deflating driver; a refiner optionally).
REQUIRED_PART_ROLES = ("initializer", "updater", "truncator", "stopper")
#: The roles a part can play, in the order a method spec lists them.
ROLES = ("driver", *PART_ROLES)


def means_none(value: object) -> bool:
    """Whether a part reference says "no part": ``None``, ``""`` or ``"none"`` (an optional role left empty).

    The one reading of "none" in a spec, a keyword or on the command line. (``"none"`` is also the name of
    the truncator that truncates nothing; only the optional roles, refiner and deflator, read it as empty.)
    """
    return value is None or (isinstance(value, str) and value in ("", "none"))

#: ``on_step(component, n_components, iteration)`` is called after every step.
StepCallback = Callable[[int, int, int], None]


@attrs.frozen(kw_only=True)
class PartMeta:
    """What a part class says about itself (set by :func:`part`).

    Attributes
    ----------
    role, name
        Where it is registered (``truncator``, ``hard``).
    summary
        One line for ``spcakit parts``: the first line of the docstring.
    paper
        The paper (authors and title) it comes from.
    lam
        The field that ``--lam`` (the papers' λ) sets, or ``None``.
    k
        The field that the sparsity knob ``k`` (``-k``, ``spcakit.fit(k=...)``)
        sets, or ``None``: a field holding the number of nonzero variables of
        each loading (at most that many, for parts whose loadings may come out
        sparser, such as a support shared by all loadings).
    k_per_component
        Whether that field also takes one cardinality per component (a list
        of ``r`` integers).
    """

    role: str
    name: str
    summary: str = ""
    paper: str = ""
    lam: str | None = None
    k: str | None = None
    k_per_component: bool = False


class Part:
    """Base of every part class: the role's base classes derive from it."""

    #: The role, set by the role's base class.
    role: ClassVar[str] = ""
    #: Set by :func:`part`.
    __part__: ClassVar[PartMeta]


class Driver(Part):
    """Run a method: ``driver(problem, r, parts, rng, on_step) -> Outcome``.

    ``deflates`` says whether the driver finds the loadings one at a time and
    deflates in between (then the method needs a deflator, and only then may
    it have one).
    """

    role = "driver"
    deflates: ClassVar[bool] = False

    def __call__(
        self, problem: Problem, r: int, parts: Any, rng: np.random.Generator, on_step: StepCallback | None = None
    ) -> Outcome:
        raise NotImplementedError


class Initializer(Part):
    r"""Return the starting iterate :math:`X_0` (``p x r``).

    ``prepare(problem, r, rng)`` runs once per run, before the first round,
    and returns the run's :class:`~spcakit.core.records.Carry` (SPCA-SP computes its
    initial subspace there); ``starts()`` is how many starts a multistart
    driver draws (1).
    """

    role = "initializer"

    def prepare(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> Carry:
        return carry

    def starts(self) -> int:
        return 1

    def __call__(self, problem: Problem, r: int, rng: np.random.Generator, carry: Carry) -> np.ndarray:
        raise NotImplementedError


class Updater(Part):
    """Propose the dense matrix :math:`Z` that the truncation acts on.

    ``init`` returns the state the updater carries through the iterations
    (for SPCArt, the PCA loadings :math:`V`); ``propose`` returns :math:`Z`,
    the updater's objective at the current :math:`X`, and its new state.

    An updater whose ``propose`` always returns a newly made :math:`Z` that
    it keeps no reference to (nor to a view of it) says so with
    ``fresh_proposal = True``: the driver may then zero entries of that
    :math:`Z` in place (see :meth:`Truncator.kept`), one ``p x r`` array
    fewer per step.
    """

    role = "updater"
    fresh_proposal: ClassVar[bool] = False

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Any:
        return None

    def propose(self, problem: Problem, x: np.ndarray, state: Any) -> tuple[np.ndarray, float, Any]:
        raise NotImplementedError

    def loading_product(self, problem: Problem, unit: np.ndarray, state: Any) -> np.ndarray | None:
        """:math:`C` times the unit loading ``unit`` (one column) that a run ended on, when the run's last step
        already made it (to rounding), from the updater's final ``state``; else ``None`` (the default). The deflation
        driver hands it to the deflator (:data:`spcakit.core.records.LOADING_PRODUCT`)."""
        return None


class Truncator(Part):
    """Zero small entries of each column of :math:`Z`.

    ``check(p)`` raises :class:`~spcakit.core.errors.InvalidParameterError` when
    a parameter is outside its valid range for dimension ``p``;
    ``resolved(p)`` gives the parameters as used for ``p`` (defaults that
    depend on ``p`` made explicit) for the result's record. The driver
    normalises the returned columns to unit length.

    A truncation that only selects entries, :math:`T(Z) = Z \\odot M` for a
    boolean mask :math:`M` of the entries kept unchanged (truncation by
    sparsity or by energy), may also give that mask by ``kept(z)``: for a
    :math:`Z` its updater made fresh (:attr:`Updater.fresh_proposal`) the
    driver then zeroes the other entries in place instead of calling the
    truncator, so a step holds one ``p x r`` array fewer. ``kept`` must
    agree with ``__call__``; the default (``None``) means there is no such
    mask.
    """

    role = "truncator"

    def check(self, p: int) -> None:
        return None

    def resolved(self, p: int) -> dict[str, Any]:
        return {}

    def __call__(self, z: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def kept(self, z: np.ndarray) -> np.ndarray | None:
        return None

    def keeps(self, p: int) -> int | None:
        """The number of entries every column keeps whatever :math:`Z` is, when the truncation keeps the largest
        magnitudes (ties as :func:`spcakit.numerics.ties.top_k_mask`: truncation by sparsity); else ``None`` (the default).
        The block driver tells the updater (:data:`spcakit.core.records.TRUNCATION_KEEPS`), which may then compute
        :math:`Z` exactly only where that choice looks (:mod:`spcakit.numerics.operators.screen`)."""
        return None


class Deflator(Part):
    """Return the problem with the unit loading ``x`` removed, and the run's carry.

    ``previous`` holds the loadings found so far (``p x t``, ``x`` last).
    """

    role = "deflator"

    def __call__(self, problem: Problem, x: np.ndarray, previous: np.ndarray, carry: Carry) -> tuple[Problem, Carry]:
        raise NotImplementedError


class Stopper(Part):
    """Return a reason to stop (a short sentence) or ``None`` to go on."""

    role = "stopper"

    def __call__(self, state: IterState) -> str | None:
        raise NotImplementedError


class Refiner(Part):
    """Improve finished loadings: ``refiner(problem, loadings) -> loadings``.

    A refiner runs once, after the driver, on the ``p x r`` unit loadings
    of the problem as the user gave it. It keeps each loading's number of
    nonzeros and never lowers the explained variance of their span (CPEV);
    it returns unit columns, or a :class:`Refined` record that also says
    how the refinement went.
    """

    role = "refiner"

    def __call__(self, problem: Problem, loadings: np.ndarray) -> np.ndarray | Refined:
        raise NotImplementedError


@attrs.frozen(kw_only=True)
class Refined:
    """What a refiner may return instead of bare loadings: the loadings and a report on the refinement.

    Attributes
    ----------
    loadings
        The refined ``p x r`` loadings (unit columns).
    report
        Names to numbers (finite ``int`` or ``float``), e.g. the CPEV before
        and after and the number of moves made. :func:`spcakit.fit` stores
        each entry in :attr:`Result.metrics <spcakit.workflows.results.Result.metrics>`
        under ``"refiner_" + name`` (:data:`REPORT_PREFIX`), so that it is in
        the JSON and text output and in :meth:`~spcakit.workflows.results.Result.metrics_frame`.
    """

    loadings: np.ndarray = attrs.field(eq=attrs.cmp_using(eq=np.array_equal))
    report: Mapping[str, float] = attrs.field(factory=dict)


#: Prefix of a refiner's report entries in a result's metrics.
REPORT_PREFIX = "refiner_"


BASES: dict[str, type[Part]] = {
    cls.role: cls for cls in (Driver, Initializer, Updater, Truncator, Deflator, Stopper, Refiner)
}

P = TypeVar("P", bound=type)


def _summary(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def part(
    name: str,
    *,
    paper: str = "",
    lam: str | None = None,
    k: str | None = None,
    k_per_component: bool = False,
    summary: str | None = None,
) -> Callable[[P], P]:
    """Class decorator: make ``cls`` a frozen attrs part registered as ``name``.

    The class derives from the base class of its role (:class:`Truncator`,
    ...); its fields are its parameters; its docstring's first line is its
    summary unless ``summary`` is given; ``lam`` names the field ``--lam``
    sets; ``k`` the field that holds the number of nonzero variables per
    loading, which the sparsity knob ``k`` sets (``k_per_component``: the
    field also takes one value per component); ``paper`` the paper it comes
    from.
    """

    def wrap(cls: P) -> P:
        role = getattr(cls, "role", "")
        if role not in BASES:
            raise TypeError(
                f"part {name!r}: {cls.__name__} must derive from one of spcakit's part base classes "
                f"({', '.join(b.__name__ for b in BASES.values())})"
            )
        built = attrs.frozen(cls)
        fields = {f.name for f in attrs.fields(built)}
        for option, field in (("lam", lam), ("k", k)):
            if field is not None and field not in fields:
                raise TypeError(
                    f"part {name!r}: {option}={field!r} is not one of its fields ({', '.join(sorted(fields)) or 'none'})"
                )
        if k_per_component and k is None:
            raise TypeError(f"part {name!r}: k_per_component=True needs k, the field that holds the cardinality")
        built.__part__ = PartMeta(role=role, name=name, summary=summary or _summary(cls), paper=paper, lam=lam, k=k,
                                  k_per_component=k_per_component)  # fmt: skip
        return built  # type: ignore[return-value]

    return wrap


def parameters(cls: type) -> dict[str, Any]:
    """The parameters of a part class and their defaults (``None`` where required)."""
    out: dict[str, Any] = {}
    for field in attrs.fields(cls):
        if not field.init:
            continue
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = _factory_default(default)
        out[field.alias or field.name] = None if default is attrs.NOTHING else default
    return out


class ComputedDefault:
    """Stands for a default that is computed when the part is built (shown as ``<computed>``)."""

    def __repr__(self) -> str:
        return "<computed>"

    __str__ = __repr__


def _factory_default(factory: Any) -> Any:
    """A factory default's value, or :class:`ComputedDefault` where it needs the instance or fails.

    Listing parts must work for every user whatever one plugin's factory does, so a factory is
    called only when it takes no arguments, and its failure is not this listing's concern.
    """
    if factory.takes_self:
        return ComputedDefault()
    try:
        return factory.factory()
    except Exception:  # a plugin's factory failing is reported when the part is built, not here
        return ComputedDefault()


def _format_default(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else json.dumps(value)


#: In :attr:`Metric.default_for`: the metric is in the default set of every method's runs.
EVERY_METHOD = "*"


def _plugin_names(value: Any) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(name, str) and name for name in names):
        raise TypeError(f"Metric.default_for must be a list of plugin names (or '*'); got {value!r}")
    return names


@attrs.frozen(kw_only=True)
class Metric:
    """A criterion reported for the runs that ask for it, and by default for the methods it is meant for.

    Attributes
    ----------
    name
        Key in ``Result.metrics`` and the JSON output.
    label
        Short label of the CLI's text table.
    description
        One line for the text table and the docs.
    compute
        ``compute(problem, loadings, context) -> value`` (JSON-serialisable:
        a number or a list of numbers).
    format
        ``format(value) -> str`` for the text table.
    default_for
        The plugins whose methods report the metric when the run names no metrics
        (:func:`spcakit.analysis.metrics.select_metrics`): :data:`EVERY_METHOD` (the default) for every method, a paper's plugin
        for that paper's methods (the encoders' losses for the encoders), ``()`` only on request.
    """

    name: str
    label: str
    description: str = ""
    compute: Callable[[Problem, np.ndarray, Any], Any] = attrs.field(eq=False)
    format: Callable[[Any], str] = attrs.field(default=_format_default, eq=False)
    default_for: tuple[str, ...] = attrs.field(default=(EVERY_METHOD,), converter=_plugin_names)


class MetricWarning(UserWarning):
    """A metric that failed, or returned what JSON cannot hold, was left out or recorded as ``null``.

    :func:`spcakit.analysis.metrics.compute_metrics` issues it naming the metric and its plugin; the command line shows it as one
    ``warning: ...`` line on stderr.
    """
