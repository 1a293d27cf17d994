r"""``auto``, spcakit's default method: the best of several methods at the same ``k``, each refined by swaps.

The members: TPower, greedy selection, SPCArt and TPower restarted per loading from 40 order-free
random starts (``tpower-restarts``, :mod:`spcakit_deflation.restarts`).

No single sparse PCA heuristic explains the most variance on every data set: on the quality panel
(``benchmarks/quality.py``, ``docs/benchmarks.md``) TPower leads on some, Mackey's greedy selection on
others, SPCArt's rotation on others, and the ``swap`` refiner changes the order again. ``auto`` runs
each member at the same number ``k`` of nonzeros per loading, refines each with support swaps
(the ``swap`` refiner: CPEV never decreases), and keeps the loadings whose span explains the most
variance,

.. math::

    X^\star = \arg\max_{m \in \text{members}} \operatorname{CPEV}(\mathrm{swap}(X_m)),
    \qquad \operatorname{CPEV}(X) = \frac{\operatorname{tr}(Q^\top C Q)}{\operatorname{tr} C},\ X = QR,

so it reaches at least what every member reaches alone (ties keep the earlier member). Above
:data:`REFINE_ALL` loadings only the member that explains the most variance alone is refined (swaps
cost about :math:`r^2` times more with :math:`r`); ``auto`` still reaches at least every member alone.
Every member is order-free (:mod:`spcakit.numerics.ties`), so ``auto`` is too. The cost is the members' costs
added up.

**Large problems** (issue 27). Greedy selection, the restarts and the swaps need work of the order of
``p`` products with the covariance, :math:`\min(n, p)\,p^2` (:func:`problem_work`); the power iterations
and SPCArt need a few dozen products of a block. Above :data:`FULL_WORK_LIMIT` (``1e11``: a formed
covariance of 4600 variables, or 100 samples of 31 600 variables) ``auto`` runs the members of
:data:`PASS_MEMBERS` alone and refines nothing, and its stopping reason says so: measured on
500 x 10 000 Gaussian data (``r = 5``, ``k = 100``, one BLAS thread), TPower took 43 products' worth of
time, SPCArt 27, greedy 538, the restarts 1432 and refining TPower's loadings by swaps 4038. Every data
set of the quality panel is below the limit (the largest, Golub's 72 x 7129, is at 3.7e9). There TPower has a budget
of :data:`LARGE_ITERATIONS` iterations over all loadings (:func:`_large_stopper`).

**Stop when certified.** The members run cheapest first (:data:`RUN_ORDER`); after each the loadings' certificate is
asked (:class:`~spcakit.plugin_api.CertifiedStop`), and loadings within ``stop_gap`` of the most variance any
loadings as sparse explain end the run, unrefined (see :class:`PortfolioUpdater`).

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

from spcakit.plugin_api import (
    Carry,
    CertifiedStop,
    Driver,
    InvalidParameterError,
    Outcome,
    Problem,
    Refined,
    StepCallback,
    Updater,
    boolean,
    cpev,
    integer,
    means_none,
    part,
    positive,
    ties,
    to_float,
    to_int,
    with_proved_bound,
)
from spcakit_deflation.joint import jointly_swapped
from spcakit_deflation.solvers import BACKWARD_LIMIT
from spcakit_deflation.swap import ColumnCache

PAPER = ("spcakit (issue 24): the best of TPower (Yuan & Zhang; also restarted), greedy (Mackey) and SPCArt (Hu et al.), "
         "each refined by swaps")

#: The members of ``auto``, in the order that decides ties.
MEMBERS = ("tpower", "greedy", "spcart", "tpower-restarts")

#: The order the member runs start in, cheapest first (by their labels, :func:`member_runs`; others after, in their
#: order): on the quality panel SPCArt and TPower take milliseconds, greedy selection a few times more, the restarts
#: 40 power runs per loading. Ties are still decided by :data:`MEMBERS`' order.
RUN_ORDER = ("spcart", "tpower", "greedy", "greedy backward", "tpower-restarts")

#: ``auto`` stops at the first member (or refinement) whose loadings are certified within this relative gap of the
#: most variance any loadings with their cardinalities explain (:class:`~spcakit.plugin_api.CertifiedStop`).
STOP_GAP = 1e-6

#: The first pass of the constraint's refiner (:data:`spcakit_deflation.nonredundant.FIRST_PASSES`) every start gets;
#: the best start then gets the other pass too. Measured (``benchmarks/nonredundant.py``: mtcars, Pitprops, wine,
#: breast cancer, digits and two 500-gene covariances, every member refined or not, each pass alone): re-fitting gave
#: every best orthogonal result (digits FVE 0.4520 where ascending gave 0.4333, Pitprops 0.8048 against 0.7920),
#: ascending every best uncorrelated one but lymphoma's (0.1048 against 0.1059), which the leader's second pass finds.
#: Both passes from every start reached the same values in up to twice the time (digits, uncorrelated: 4.0 s against
#: 2.1 s; msPCA 2.7 s).
FIRST_PASS = {"orthogonal": "refit", "uncorrelated": "ascend"}

#: Under ``constraint="orthogonal"`` a further member: TPower restarted per loading (``tpower-restarts``) with the
#: ``disjoint`` deflator, each loading among the variables the earlier loadings left, so the loadings are orthogonal as
#: found and each is valued by its own variance, where the members' deflations value a later loading by what it adds
#: to the earlier ones. It runs on data of at most :data:`DISJOINT_ROWS_SHARE` as many rows as variables (gene
#: expression: many variables compete for few loadings). Measured with ``auto`` on the quality panel's three gene sets
#: (standardised, five loadings of ten; one thread, least of two runs): Golub's FVE 0.006148 against 0.006037
#: (+1.8 %), in 10.5 s against 6.6 s; colon and lymphoma the same FVE, in 4.6 and 5.8 s against 3.2 and 4.1 s. The
#: ``exact`` search's warm start in its place (greedy selection, power runs, swaps) reached 0.006127 on Golub in 36 s.
DISJOINT_MEMBER = ("tpower-restarts", {"deflator": "disjoint"})
DISJOINT_ROWS_SHARE = 0.5

#: Up to this many loadings every member is refined (``portfolio.refine_all``); above, only the best one alone.
REFINE_ALL = 10

#: Above this many variables the greedy member starts from the tied variable of largest |u_1| ("leading").
BEST_PAIR_LIMIT = 1000

#: The largest problem size :func:`problem_work` (``min(n, p) * p**2``) at which every member runs and is refined.
FULL_WORK_LIMIT = 1e11

#: The members ``auto`` runs above :data:`FULL_WORK_LIMIT`, unrefined: their cost is a few dozen passes over the data.
PASS_MEMBERS = ("tpower", "spcart")

#: Above :data:`FULL_WORK_LIMIT`, TPower's iterations over all loadings together (``ceil(this / r)`` per loading, at
#: least :data:`LARGE_MIN_ITERATIONS`). An iteration is one product :math:`X^\top(Xv)` and a truncation of ``p``
#: entries. On 500 x 100 000 Gaussian data at ``r = 20`` (3 per loading), one thread, the default ``SparsePCA``
#: then took 50.7 passes' time (:math:`X^\top(XV)`, ``p x 20``) at ``k = 15 000``, where TPower without a budget ran
#: 2 260 iterations (minutes) to its 1e-7 rule for less variance than SPCArt's; with 100 iterations it took 57 passes
#: there, above the 60 of issue 49 on a slower run (63.5).
LARGE_ITERATIONS = 60
#: ... and at least this many per loading.
LARGE_MIN_ITERATIONS = 2


def problem_work(problem: Problem) -> float:
    r"""The size of ``problem`` as ``auto`` plans it: :math:`\min(n, p)\,p^2`, for ``n`` samples (``p`` for a
    covariance given as such) and ``p`` variables.

    The work of ``p`` products with the covariance, the unit of greedy selection (a column of :math:`C`
    per variable it adds), the restarts (40 power runs per loading) and the swaps (a column per swap and
    products over the union of the supports): :math:`p^3` with the covariance formed, :math:`n p^2` through
    the data. A function of the shape alone, so that dense, sparse and Dask data of the same shape get
    the same plan (and the same loadings).
    """
    p = problem.p
    record = problem.input
    n = record.shape[0] if record is not None and record.kind == "data" and len(record.shape) == 2 else p
    return float(min(n, p)) * float(p) ** 2


non_negative_int = integer(0)


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)  # type: ignore[arg-type]


def _check_members(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    if not value or not all(isinstance(name, str) and name for name in value):
        raise InvalidParameterError(f"portfolio.methods must be a nonempty list of method names; got {list(value)!r}")


def _cost_rank(label: str) -> int:
    """Where a member run starts in :data:`RUN_ORDER` (a label not there: after them all)."""
    return RUN_ORDER.index(label) if label in RUN_ORDER else len(RUN_ORDER)


def _gap_or_none(value: object) -> float | None:
    if means_none(value):
        return None
    gap = to_float(value)
    if not 0 <= gap < 1:
        raise InvalidParameterError(f"portfolio.stop_gap must be a relative gap in [0, 1) or none; got {value!r}")
    return gap


def _constraint_or_none(value: object) -> str | None:
    if value is None or (isinstance(value, str) and means_none(value)):
        return None
    if value not in ("orthogonal", "uncorrelated"):
        raise InvalidParameterError(f"portfolio.constraint must be orthogonal, uncorrelated or none; got {value!r}")
    return str(value)


def member_runs(names: tuple[str, ...], p: int, disjoint: bool = False) -> list[tuple[str, str, dict[str, object]]]:
    """``(label, method, parameters)`` of every member run for ``p`` variables.

    Greedy runs forward selection (from the best pair up to :data:`BEST_PAIR_LIMIT` variables, from
    the ``leading`` start above) and, up to :data:`~spcakit_deflation.solvers.BACKWARD_LIMIT` variables,
    a second time with backward elimination (its cost grows like :math:`p^4`): on some data one, on
    other data the other leads once refined. Every other member runs as registered. With ``disjoint``
    (orthogonal loadings, :data:`DISJOINT_MEMBER`), ``tpower-restarts`` with the ``disjoint`` deflator too
    (``tpower-restarts disjoint``).
    """
    runs: list[tuple[str, str, dict[str, object]]] = []
    for name in names:
        if name != "greedy":
            runs.append((name, name, {}))
            continue
        runs.append((name, name, {"start": "leading"} if p > BEST_PAIR_LIMIT else {}))
        if p <= BACKWARD_LIMIT:
            runs.append(("greedy backward", name, {"backward": True}))
    if disjoint:
        runs.append(("tpower-restarts disjoint", *DISJOINT_MEMBER))
    return runs


def _members_refiner(name: str, constrained: bool) -> str | dict[str, object]:
    """The members' refiner: under a constraint the ``swap`` refiner without its polish, since the members' loadings
    only start the constraint's refiner. Measured on 137 constrained fits (Pitprops, wine, breast cancer, diabetes,
    r = 2-5, k = 3-6, and the five small benchmark sets): the same FVE (higher on 2) in 10-11 % less time."""
    return {"name": "swap", "polish": False} if constrained and name == "swap" else name


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
        The refiner applied to the members' loadings (``"none"``: none).
    refine_all
        Up to this many loadings every member is refined; above, only the member whose loadings
        explain the most variance alone (support swaps cost about :math:`r^2` times more with
        :math:`r`: at :math:`r = 20` on the image patches, seconds each).
    nonnegative
        Non-negative loadings (``fit(nonnegative=True)`` sets it): the members that can keep their
        loadings non-negative run with ``nonnegative=True`` (:func:`spcakit.workflows.configure.with_nonnegative`;
        with the built-in members: TPower, SPCArt and restarted TPower), the others are skipped and named,
        and the refiner is not applied (support swaps re-fit the loadings without the sign constraint).
    full_work
        Up to this :func:`problem_work` (:math:`\min(n, p)\,p^2`) every member runs and is refined; above,
        only :data:`PASS_MEMBERS`, unrefined (a huge value such as ``1e300``: always every member).
    stop_gap
        The run ends at the first member whose loadings are certified within this relative gap (``none``: never).
    constraint
        ``"orthogonal"`` or ``"uncorrelated"`` (``fit(constraint=...)`` sets it; ``"none"``: no constraint): every
        member's loadings, as refined by ``refiner`` and as the member left them, are made non-redundant by the
        refiner of that name (:mod:`spcakit_deflation.nonredundant`; swaps for CPEV may lead away from the best
        constrained loadings), and the member whose loadings then explain the most, :math:`\sum_t u_t^\top C u_t`
        (FVE), is kept. The certified stop applies to one loading only (a constraint binds from the second on).
    """

    methods: tuple[str, ...] = attrs.field(default=MEMBERS, converter=_names, validator=_check_members)
    k: int | None = attrs.field(default=None, converter=to_int)
    refiner: str = attrs.field(default="swap")
    refine_all: int = attrs.field(default=REFINE_ALL, converter=to_int, validator=non_negative_int)
    nonnegative: bool = attrs.field(default=False, validator=boolean)
    full_work: float = attrs.field(default=FULL_WORK_LIMIT, converter=to_float, validator=positive)
    stop_gap: float | None = attrs.field(default=STOP_GAP, converter=_gap_or_none)
    constraint: str | None = attrs.field(default=None, converter=_constraint_or_none)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: Carry) -> tuple[np.ndarray, float, Carry]:
        raise InvalidParameterError("the portfolio updater holds a best-of driver's members; run it with driver best-of")


@part("best-of", paper=PAPER)
class BestOfDriver(Driver):
    r"""each member method of the portfolio updater at the same k, refined; keeps the largest CPEV

    The member runs are :func:`spcakit.fit` on the problem the driver is given, each with the seed
    the driver's generator draws next (so the result depends only on the run's seed; the built-in
    members use none). The reason it stopped names the kept member and every member's CPEV. A member
    that is not a registered method (its plugin disabled) is skipped and named in that reason; with
    none registered the run is an error.
    """

    deflates = False

    def __call__(
        self, problem: Problem, r: int, parts: object, rng: np.random.Generator, on_step: StepCallback | None = None
    ) -> Outcome:
        from spcakit.plugin_api import (  # noqa: PLC0415
            fit,  # noqa: PLC0415
            get_registry,  # noqa: PLC0415
            methods_taking_nonnegative,
            nonnegative_refusal,
        )

        portfolio = parts.updater  # type: ignore[attr-defined]
        if not isinstance(portfolio, PortfolioUpdater):
            raise InvalidParameterError(
                f"the best-of driver runs the members of a portfolio updater; got the updater {type(portfolio).__name__}"
            )
        registry = get_registry()
        available = tuple(name for name in portfolio.methods if name in registry.method_names())
        missing = [name for name in portfolio.methods if name not in available]
        if not available:
            raise InvalidParameterError(
                f"none of the portfolio's methods ({', '.join(portfolio.methods)}) is registered; a plugin they come "
                f"from may be disabled (SPCAKIT_DISABLE_PLUGINS); registered methods: {', '.join(registry.method_names())}"
            )
        full = problem_work(problem) <= portfolio.full_work
        if not full:
            available = tuple(name for name in available if name in PASS_MEMBERS) or available[:1]
        if portfolio.nonnegative:  # only the members that can keep their loadings non-negative
            signed = [name for name in available
                      if nonnegative_refusal(attrs.evolve(registry.method(name), refiner=None), registry) is not None]
            missing += [f"{name} (cannot keep its loadings non-negative)" for name in signed]
            available = tuple(name for name in available if name not in signed)
            if not available:
                raise InvalidParameterError(
                    f"none of the portfolio's methods ({', '.join(portfolio.methods)}) can keep its loadings "
                    f"non-negative; methods that can: {', '.join(methods_taking_nonnegative(registry))}"
                )
        # (a member the portfolio runs: the user's choice of members holds)
        disjoint = (portfolio.constraint == "orthogonal" and r > 1 and DISJOINT_MEMBER[0] in available
                    and (problem.n_samples or problem.p) <= DISJOINT_ROWS_SHARE * problem.p)  # fmt: skip
        planned = member_runs(available, problem.p, disjoint=disjoint)
        seeds = [int(rng.integers(2**32)) for _ in planned]  # drawn in the members' order, whatever order they run in
        constrained = portfolio.constraint is not None and r > 1
        stop = None if portfolio.stop_gap is None or constrained else CertifiedStop(problem.covariance,
                                                                                     tolerance=portfolio.stop_gap)
        runs: list[list] = [[label, None, -np.inf, None, 0] for label, _, _ in planned]
        certified: tuple[int, float] | None = None  # (the run, the first loading's proved bound)
        for index in sorted(range(len(planned)), key=lambda i: _cost_rank(planned[i][0])):
            _, name, params = planned[index]
            budget = {} if full or name != "tpower" else {"stopper": _large_stopper(registry, r)}
            result = fit(problem, name, r, k=portfolio.k, refiner="none", seed=seeds[index], metrics=["cpev"],
                         order="method", registry=registry, nonnegative=portfolio.nonnegative, **budget,
                         **params)  # fmt: skip
            runs[index][1:] = [result.loadings, float(result.metrics["cpev"]), None, result.iterations]
            proof = None if stop is None else stop(result.loadings)
            if proof is not None:
                certified = (index, proof)
                break
        ran = [run for run in runs if run[1] is not None]
        unrefined = means_none(portfolio.refiner) or portfolio.nonnegative or not full
        refiner = (None if unrefined or certified is not None
                   else registry.build("refiner", _members_refiner(portfolio.refiner, constrained)))  # fmt: skip
        unrefined_loadings = {id(run): run[1] for run in ran}  # what the constraint also starts from (below)
        if refiner is not None:
            # by CPEV alone, members within the tie tolerance in the members' order
            order = [int(i) for i in ties.order(np.array([run[2] for run in runs]))]
            chosen = order if r <= portfolio.refine_all else order[:1]
            # a refiner is a function of the loadings: members that end on the same ones are refined once
            done: dict[bytes, tuple[np.ndarray, float]] = {}
            for index in chosen:
                key = runs[index][1].tobytes()
                if key not in done:
                    refined = refiner(problem, runs[index][1])
                    loadings = refined.loadings if isinstance(refined, Refined) else np.asarray(refined, dtype=float)
                    done[key] = (loadings, cpev(loadings, problem.covariance))
                runs[index][1], runs[index][3] = done[key]
        criterion = "CPEV"
        if constrained:  # every member made non-redundant, after its refinement: the result must meet the constraint
            criterion = "FVE"
            # every member from its refined loadings and from its own (swaps for CPEV may lead elsewhere), with one
            # first pass; then the best start once more with the other (nonredundant.FIRST_PASSES; FIRST_PASS says why)
            first = FIRST_PASS[portfolio.constraint]
            # (loadings fitted all together are raised by joint swaps once, the leader's, below: not every member's)
            # (nor orthogonal loadings that share variables fitted together: the leader's alone, below)
            ascending = registry.build("refiner", {"name": portfolio.constraint, "first_pass": first, "joint_swaps": 0,
                                                   "jointly": False})
            done_constrained: dict[bytes, tuple[np.ndarray, float, bool] | None] = {}
            visits: dict = {}  # every start's visits, shared: starts often reach the same loadings on the way
            refusal: InvalidParameterError | None = None

            def impose(imposer: object, start: np.ndarray) -> tuple[np.ndarray, float, bool] | None:
                nonlocal refusal
                try:
                    refined = imposer(problem, start, visits=visits)  # type: ignore[operator]
                except InvalidParameterError as exc:  # no room from this start: the others may have it
                    refusal = refusal or exc
                    return None
                return refined.loadings, float(refined.report["fve_after"]), bool(refined.report.get("jointly", 0))

            starts: dict[int, np.ndarray] = {}
            for run in ran:
                kept = None
                for start in (run[1], unrefined_loadings[id(run)]):
                    key = start.tobytes()
                    if key not in done_constrained:
                        done_constrained[key] = impose(ascending, start)
                    done = done_constrained[key]
                    if done is not None and (kept is None or ties.improves(done[1], kept[1])):
                        kept, starts[id(run)] = done, start
                run[1], run[3] = (None, None) if kept is None else kept[:2]
            if all(run[1] is None for run in runs):
                raise refusal  # type: ignore[misc]
            leader = max((run for run in ran if run[1] is not None), key=lambda run: run[3])
            start = starts[id(leader)]
            # loadings fitted all together (jointly_uncorrelated) are those again whatever the first pass
            fitted_together = done_constrained[start.tobytes()][2]  # type: ignore[index]
            if not fitted_together:
                other = {"refit": "ascend", "ascend": "refit"}[first]
                again = impose(registry.build("refiner", {"name": portfolio.constraint, "first_pass": other,
                                                          "jointly": False}), start)
                if again is not None and ties.improves(again[1], leader[3]):
                    leader[1], leader[3] = again[:2]
            # the leader's loadings raised together: uncorrelated ones fitted together by joint swaps; orthogonal ones
            # that share variables fitted together and swept again (the full refiner: its sweeps are read from visits)
            if fitted_together:
                leader[1], explained, _ = jointly_swapped(ColumnCache(problem.covariance), leader[1])
                leader[3] = explained / float(problem.covariance.trace())
            elif portfolio.constraint == "orthogonal":
                together = impose(registry.build("refiner", {"name": "orthogonal"}), leader[1])
                if together is not None and ties.improves(together[1], leader[3]):
                    leader[1], leader[3] = together[:2]
        best = next(i for i, run in enumerate(runs) if run[1] is not None)
        for index, run in enumerate(runs):
            if run[1] is not None and ties.improves(_value(run), _value(runs[best])):
                best = index
        summary = ", ".join(
            f"{run[0]} " + ("not run" if run[1] is None else f"{run[2]:.6g}" + ("" if run[3] is None else f" -> {run[3]:.6g}"))
            for run in runs
        )
        how = "" if refiner is None else f", refined by {portfolio.refiner}"
        each = "CPEV of each member" if refiner is None else "CPEV of each member alone, then refined"
        if constrained:
            how += f", made {portfolio.constraint}"
            each = f"CPEV of each member alone, then FVE once{' refined and' if refiner is not None else ''} {portfolio.constraint}"
        skipped = f"; skipped: {', '.join(missing)}" if portfolio.nonnegative and missing else (
            f"; not registered, skipped: {', '.join(missing)}" if missing else "")
        if not full:
            skipped += (f"; a large problem (min(n, p) p^2 = {problem_work(problem):.3g} > {portfolio.full_work:.3g}): "
                        f"only {', '.join(available)}, unrefined"
                        + (f", tpower at most {_large_iterations(r)} iterations per loading" if "tpower" in available else ""))
        reason = f"best of {len(ran)} by {criterion}: {runs[best][0]}{how} ({each}: {summary}){skipped}"
        if certified is not None:
            reason += (f"; stopped at {runs[certified[0]][0]}: "
                       f"certified within {portfolio.stop_gap:.3g} of the most variance any {r} loadings as sparse "
                       f"explain, so nothing left could explain more")
            if np.isfinite(certified[1]) and runs[best][1] is runs[certified[0]][1]:
                reason = with_proved_bound(reason, certified[1], given_earlier=False)
        return Outcome(
            loadings=runs[best][1],
            iterations=sum(run[4] for run in runs),
            stopping_reasons=(reason,),
            objective_history=(),
        )


def _large_iterations(r: int) -> int:
    """TPower's iterations per loading on a large problem (:data:`LARGE_ITERATIONS`)."""
    return max(LARGE_MIN_ITERATIONS, -(-LARGE_ITERATIONS // max(r, 1)))


def _large_stopper(registry: object, r: int) -> dict[str, object]:
    """TPower's own stopping rule with its iterations capped at :func:`_large_iterations` per loading. On a positive
    semi-definite covariance TPower's objective does not decrease from one iteration to the next (Yuan & Zhang 2013),
    so the capped run ends on its best iterate."""
    own = registry.method("tpower").stopper  # type: ignore[attr-defined]
    cap = {"name": "max-iterations", "n": _large_iterations(r)}
    if own is None:
        return cap
    rules = [dict(rule) for rule in own.params.get("stoppers", ())] if own.name == "any-of" else [{"name": own.name, **own.params}]
    rules = [rule for rule in rules if rule.get("name") != "max-iterations"]
    return {"name": "any-of", "stoppers": [*rules, cap]}


def _value(run: list) -> float:
    """A member run's CPEV: refined when it was refined."""
    return run[2] if run[3] is None else run[3]


UPDATERS = [PortfolioUpdater]
DRIVERS = [BestOfDriver]
