r"""``auto``, spcakit's default method: the best of several methods at the same ``k``, each refined by swaps.

No single sparse PCA heuristic explains the most variance on every data set: on the quality panel
(``benchmarks/quality.py``, ``docs/benchmarks.md``) TPower leads on some, Mackey's greedy selection on
others, SPCArt's rotation on others, and the ``swap`` refiner changes the order again. ``auto`` runs
each member at the same number ``k`` of nonzeros per loading, refines each with support swaps
(:class:`~spcakit_deflation.swap.SwapRefiner`: CPEV never decreases), and keeps the loadings whose
span explains the most variance,

.. math::

    X^\star = \arg\max_{m \in \text{members}} \operatorname{CPEV}(\mathrm{swap}(X_m)),
    \qquad \operatorname{CPEV}(X) = \frac{\operatorname{tr}(Q^\top C Q)}{\operatorname{tr} C},\ X = QR,

so it reaches at least what every member reaches alone (ties keep the earlier member). Every member
is order-free (:mod:`spcakit.ties`), so ``auto`` is too. The cost is the members' costs added up.

The pieces are parts like any other: the ``portfolio`` updater holds the members, ``k`` and the
refiner, and the ``best-of`` driver runs them through :func:`spcakit.fit` on the problem it is given.
The greedy member also runs with backward elimination up to
:data:`~spcakit_deflation.solvers.BACKWARD_LIMIT` variables (its cost grows like :math:`p^4`), as a
member of its own (:func:`member_runs`); it starts from the best pair of variables up to :data:`BEST_PAIR_LIMIT` variables, above that from the
tied variable of largest :math:`|u_1|` (one eigenpair instead of a product per tied variable: on
standardised data every variable ties).
"""

from __future__ import annotations

import attrs
import numpy as np

from spcakit import ties
from spcakit.errors import InvalidParameterError
from spcakit.problem import Problem
from spcakit.protocols import Driver, StepCallback, Updater, part
from spcakit.state import Carry, Outcome
from spcakit.validators import to_int
from spcakit_deflation.solvers import BACKWARD_LIMIT

PAPER = "spcakit (issue 24): the best of TPower (Yuan & Zhang), greedy (Mackey) and SPCArt (Hu et al.), each refined by swaps"

#: The members of ``auto``, in the order that decides ties.
MEMBERS = ("tpower", "greedy", "spcart")

#: Above this many variables the greedy member starts from the tied variable of largest |u_1| ("leading").
BEST_PAIR_LIMIT = 1000


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)  # type: ignore[arg-type]


def _check_members(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    if not value or not all(isinstance(name, str) and name for name in value):
        raise InvalidParameterError(f"portfolio.methods must be a nonempty list of method names; got {list(value)!r}")


def member_runs(names: tuple[str, ...], p: int) -> list[tuple[str, str, dict[str, object]]]:
    """``(label, method, parameters)`` of every member run for ``p`` variables.

    Greedy runs forward selection (from the best pair up to :data:`BEST_PAIR_LIMIT` variables, from
    the ``leading`` start above) and, up to :data:`~spcakit_deflation.solvers.BACKWARD_LIMIT` variables,
    a second time with backward elimination (its cost grows like :math:`p^4`): on some data one, on
    other data the other leads once refined. Every other member runs as registered.
    """
    runs: list[tuple[str, str, dict[str, object]]] = []
    for name in names:
        if name != "greedy":
            runs.append((name, name, {}))
            continue
        runs.append((name, name, {"start": "leading"} if p > BEST_PAIR_LIMIT else {}))
        if p <= BACKWARD_LIMIT:
            runs.append(("greedy backward", name, {"backward": True}))
    return runs


@part("portfolio", paper=PAPER, k="k")
class PortfolioUpdater(Updater):
    r"""the members of the best-of driver: methods run at the same k, each refined, the best CPEV kept

    Not an iterative step: the ``best-of`` driver reads its fields (see :mod:`spcakit_deflation.portfolio`).

    Parameters
    ----------
    methods
        Registered method names that take ``k``, in the order that decides ties.
    k
        Nonzeros per loading, given to every member (``spcakit.fit``'s default when not set).
    refiner
        The refiner applied to every member's loadings (``"none"``: none).
    """

    methods: tuple[str, ...] = attrs.field(default=MEMBERS, converter=_names, validator=_check_members)
    k: int | None = attrs.field(default=None, converter=to_int)
    refiner: str = attrs.field(default="swap")

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        raise InvalidParameterError("the portfolio updater holds a best-of driver's members; run it with driver best-of")


@part("best-of", paper=PAPER)
class BestOfDriver(Driver):
    r"""each member method of the portfolio updater at the same k, refined; keeps the largest CPEV

    The member runs are :func:`spcakit.fit` on the problem the driver is given, each with the seed
    the driver's generator draws next (so the result depends only on the run's seed; the built-in
    members use none). The reason it stopped names the kept member and every member's CPEV.
    """

    deflates = False

    def __call__(
        self, problem: Problem, r: int, parts: object, rng: np.random.Generator, on_step: StepCallback | None = None
    ) -> Outcome:
        from spcakit.api import fit  # noqa: PLC0415 - api imports the drivers' protocol; members run through it
        from spcakit.plugins import get_registry  # noqa: PLC0415

        portfolio = parts.updater  # type: ignore[attr-defined]
        if not isinstance(portfolio, PortfolioUpdater):
            raise InvalidParameterError(
                f"the best-of driver runs the members of a portfolio updater; got the updater {type(portfolio).__name__}"
            )
        registry = get_registry()
        refiner = None if portfolio.refiner in ("", "none") else portfolio.refiner
        results = []
        for label, name, params in member_runs(portfolio.methods, problem.p):
            seed = int(rng.integers(2**32))
            result = fit(problem, name, r, k=portfolio.k, refiner=refiner if refiner else "none", seed=seed,
                         metrics=["cpev"], registry=registry, **params)  # fmt: skip
            results.append((label, result))
        best = 0
        for index, (_, result) in enumerate(results):
            if ties.improves(result.metrics["cpev"], results[best][1].metrics["cpev"]):
                best = index
        name, result = results[best]
        summary = ", ".join(f"{member} {res.metrics['cpev']:.6g}" for member, res in results)
        return Outcome(
            loadings=result.loadings,
            iterations=sum(res.iterations for _, res in results),
            stopping_reasons=(f"best of {len(results)} by CPEV: {name} (CPEV of each, refined: {summary})",),
            objective_history=(),
        )


UPDATERS = [PortfolioUpdater]
DRIVERS = [BestOfDriver]
