r"""The exact solver as parts: the ``branch-and-bound`` solver and the ``certified`` stopper that reports it.

``branch-and-bound`` (an :class:`~spcakit.core.protocols.Updater` used as a one-shot solver) solves
:math:`\max x^\top Ax` s.t. :math:`\|x\|_0 \le k`, :math:`x^\top Bx = 1` on the covariance the driver hands
it (deflated by any deflator; :math:`B` from the generalized deflation's carry, :data:`spcakit.core.records.CONSTRAINT`),
by :func:`spcakit.analysis.search.tree.branch_and_bound`. Its state is the :class:`~spcakit.analysis.search.tree.Search`
record, which the ``certified`` stopper turns into the component's stopping reason: ``optimal`` with the
node count, or what stopped the search with its best value and bound (a
:class:`~spcakit.core.records.CapReached`, so the result warns that the loading is not proven optimal). The reason
carries the search's bound (:func:`~spcakit.core.records.with_proved_bound`): the result's ``bound`` and ``gap`` metrics
take the first loading's where it is tighter than their own.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from spcakit.plugin_api import (
    COMPONENT,
    CONSTRAINT,
    CapReached,
    Carry,
    InvalidParameterError,
    IterState,
    Problem,
    Search,
    Stopper,
    Updater,
    boolean,
    branch_and_bound,
    gram_search_matrix,
    low_rank_spectrum,
    check_cardinality,
    constraint_matmat,
    default_support,
    densify,
    optional,
    part,
    positive,
    positive_int,
    to_float,
    to_int,
    with_proved_bound,
)

PAPER = "Berk & Bertsimas - Certifiably optimal sparse principal component analysis (Math. Prog. Comp. 2019)"
#: The solver forms the covariance explicitly up to this many variables (its peak memory grows as p^2: 2.1 GB to
#: certify the Golub data, p = 7129, k = 10). A covariance of data with few rows is read from them instead, at any p
#: (:func:`~spcakit.analysis.search.tree.gram_search_matrix`).
EXACT_P_LIMIT = 8000


@part("branch-and-bound", paper=PAPER, k="k")
class BranchAndBound(Updater):
    r"""rank-one solver: branch and bound on the support, certified optimal unless a limit stops it

    Parameters
    ----------
    k
        The cardinality, an integer in ``[1, p]`` (``-k``).
    time_limit
        Seconds for the whole fit (default 60; ``none``: no limit): each component gets its share of what is left
        (what is left over ``r`` minus the components done), covering the default method's start, the search's warm
        start, its bounds and its nodes; a search stopped so returns its best loading and its bound. The wall time stays
        within about the limit (a long decomposition still running at the limit is given up), plus, unless the data
        have fewer rows than half the variables, one eigen-decomposition of the covariance (made before the clock can
        stop it).
    node_limit
        Nodes per component before it stops the same way (default: no limit).
    from_default
        Start from the default method's loading too (``True``, the default): the search's best is never worse than it.
    """

    k: int | None = attrs.field(default=None, converter=to_int)
    time_limit: float | None = attrs.field(default=60.0, converter=to_float, validator=optional(positive))
    node_limit: int | None = attrs.field(default=None, converter=to_int, validator=optional(positive_int))
    from_default: bool = attrs.field(default=True, validator=boolean)

    def init(self, problem: Problem, x0: np.ndarray, carry: Carry) -> Carry:
        return carry

    def propose(self, problem: Problem, x: np.ndarray, state: object) -> tuple[np.ndarray, float, Search]:
        begun = time.perf_counter()
        p = problem.p
        k = check_cardinality(self.k, p, "branch-and-bound")
        constraint = state.get(CONSTRAINT) if isinstance(state, Carry) else None
        unconstrained = constraint is None or not constraint.shape[1]
        from_data = gram_search_matrix(problem.covariance) if unconstrained else None  # n << p: never p x p
        if from_data is None and p > EXACT_P_LIMIT:
            raise InvalidParameterError(
                f"branch-and-bound forms the {p} x {p} covariance; it takes at most p = {EXACT_P_LIMIT} variables "
                "(select variables first, e.g. the most variable ones, or use a heuristic method), unless the data "
                "have fewer rows than half the variables (then it reads the covariance from them)"
            )
        a = densify(problem.covariance) if from_data is None else from_data  # a dense one is read as it is
        if constraint is not None and constraint.shape[1]:
            # the generalized deflation's (I - QQ^T) C (I - QQ^T) vanishes on Q to the rounding of C's scale; the search
            # checks it against A's own scale, which is rounding alone once the loadings explain everything (a rank-1
            # C, r = 3: |AQ| 1e-17 against entries of 1e-17, refused). Projected once more, A vanishes on Q to the
            # rounding of its own entries, the same matrix to the rounding of C's scale.
            a = constraint_matmat(state, constraint_matmat(state, a).T)  # B (BA)^T = BAB
            a = (a + a.T) / 2
        share = self._share(state)
        starts = []
        if self.from_default:  # the default method's support: never worse than the default
            default = default_support(problem, k, avoid="exact")
            starts = [] if default is None else [default]
        if share is not None:
            share = max(0.0, share - (time.perf_counter() - begun))  # the default's run counts
        spectrum = low_rank_spectrum(problem.covariance) if unconstrained and from_data is None else None
        found = branch_and_bound(a, k, constraint=constraint, time_limit=share, node_limit=self.node_limit, starts=starts,
                                 spectrum=spectrum)  # fmt: skip
        return found.vector[:, None], found.value, found

    def _share(self, state: object) -> float | None:
        """This component's seconds: what is left of the time limit since the run began over the components left
        (:data:`~spcakit.core.records.COMPONENT`; the whole limit without it); ``None`` without a limit."""
        if self.time_limit is None:
            return None
        told = state.get(COMPONENT) if isinstance(state, Carry) else None
        if told is None:
            return float(self.time_limit)
        component, count, started = told
        left = float(self.time_limit) - (time.perf_counter() - started)
        return max(0.0, left) / max(1, count - component)


@part("certified", paper=PAPER)
class Certified(Stopper):
    """stop after the solver's one step, with its certificate as the reason (optimal, or the gap left)"""

    def __call__(self, state: IterState) -> str | None:
        if state.iteration < 1:
            return None
        found = state.updater_state
        if not isinstance(found, Search):
            return "one step"
        # no gap here: the result's gap metric is the one gap of each component (the first loading's takes this bound)
        if found.optimal:
            reason: str = f"optimal (certified: {found.nodes} nodes, {found.seconds:.3g} s)"
        else:
            what = "added variance given the earlier loadings" if found.generalized else "variance"
            reason = CapReached(
                f"{found.stopped} after {found.nodes} nodes: best {what} {found.value:.6g}, at most {found.bound:.6g}",
                advice="the loading is the best found, not proven optimal; raise time_limit (--time-limit) or "
                       "node_limit for a certificate",
            )
        # the search's bound, for the result's bound and gap metrics where it bounds their problem
        return with_proved_bound(reason, found.bound, given_earlier=found.generalized)


PARTS = [BranchAndBound, Certified]
__all__ = ["EXACT_P_LIMIT", "PARTS", "BranchAndBound", "Certified"]
