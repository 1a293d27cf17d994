"""The public contract checks of :mod:`spcakit.testing.contracts` for initializers, updaters, stoppers
and deflators: the built-in parts pass them, and each broken part is caught with a message naming the
broken rule. (The truncator and operator checks are exercised in ``tests/properties/test_truncations.py``
and ``tests/properties/test_operators.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from spcakit.core.plugins import get_registry
from spcakit.inputs.problem import Problem
from spcakit.inputs.dense import covariance_problem
from spcakit.core.protocols import Deflator, Initializer, Stopper, Updater
from spcakit.core.records import CONSTRAINT, Carry, IterState
from spcakit.testing import (
    ContractViolation,
    check_deflator_contract,
    check_initializer_contract,
    check_stopper_contract,
    check_updater_contract,
)
from spcakit.testing import strategies as sps
from spcakit.parts.deflators import HotellingDeflation, ProjectionDeflation
from spcakit.parts.initializers import RandomInitializer
from spcakit.parts.stoppers import AnyOf, MaxIterations, ObjectiveChange, RelativeChange
from spcakit.parts.updaters import IdentityUpdater, PowerUpdater
from spcakit_spcart.updaters import GPowerUpdater, RotationUpdater

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def problem3() -> Problem:
    return covariance_problem(np.array([[3.0, 1.0, 0.5], [1.0, 2.0, 0.2], [0.5, 0.2, 1.0]]))


def unit_columns(p: int, r: int, seed: int = 0) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((p, r)))
    return q


def with_constraint(p: int) -> Carry:
    q = np.zeros((p, 1))
    q[0, 0] = 1.0
    return Carry().set(CONSTRAINT, q)


# -- initializers -----------------------------------------------------------------------------------------
@SETTINGS
@given(sps.problems((3, 12)), sps.seeds())
def test_built_in_initializers_keep_the_contract(problem, seed):
    r = min(2, problem.p)
    for part in (RandomInitializer(), get_registry().build("initializer", "max-diagonal")):
        x0 = check_initializer_contract(part, problem, r, seed=seed)
        assert x0.shape == (problem.p, r)
    x0 = check_initializer_contract(RandomInitializer(), problem, r, seed=seed, carry=with_constraint(problem.p))
    assert x0.shape == (problem.p, r)


def test_initializer_contract_runs_prepare_and_hands_its_carry_to_the_start():
    seen: list[Carry] = []

    class Prepared(Initializer):
        def prepare(self, problem, r, rng, carry):
            return carry.set("basis", np.eye(problem.p)[:, :r])

        def __call__(self, problem, r, rng, carry):
            seen.append(carry)
            return carry.get("basis") + 0.0

    x0 = check_initializer_contract(Prepared(), problem3(), 2)
    np.testing.assert_array_equal(x0, np.eye(3)[:, :2])
    assert len(seen) == 2 and all("basis" in c for c in seen)  # run twice: reproducibility


class _Start(Initializer):
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, problem, r, rng, carry):
        return self.fn(problem, r, rng, carry)


def _mutates_carry(problem, r, rng, carry):
    carry.get("q")[0, 0] = 5.0
    return np.eye(problem.p)[:, :r]


def _global_random(problem, r, rng, carry):
    return np.random.standard_normal((problem.p, r))  # not the rng it is given


def _mutates_problem(problem, r, rng, carry):
    problem.covariance.matrix[0, 0] = 9.0
    return np.eye(problem.p)[:, :r]


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda problem, r, rng, carry: np.ones((problem.p, r + 1)), "shape"),
        (lambda problem, r, rng, carry: np.zeros((problem.p, r)), "zero column"),
        (lambda problem, r, rng, carry: np.full((problem.p, r), np.nan), "non-finite"),
        (_global_random, "different start for the same seed"),
        (_mutates_problem, "modified the input problem"),
    ],
)
def test_initializer_contract_catches_broken_initializers(fn, message):
    with pytest.raises(ContractViolation, match=message):
        check_initializer_contract(_Start(fn), problem3(), 2)


def test_initializer_contract_catches_a_start_that_modifies_the_carry():
    carry = Carry().set("q", np.zeros((3, 1)))
    with pytest.raises(ContractViolation, match="modified the carry's 'q' entry in place"):
        check_initializer_contract(_Start(_mutates_carry), problem3(), 2, carry=carry)


def test_initializer_contract_checks_prepare_and_starts():
    class BadPrepare(Initializer):
        def prepare(self, problem, r, rng, carry):
            return {"basis": None}

        def __call__(self, problem, r, rng, carry):
            return np.eye(problem.p)[:, :r]

    class NoStarts(BadPrepare):
        def starts(self):
            return 0

    with pytest.raises(ContractViolation, match="prepare.*must return a spcakit.core.records.Carry"):
        check_initializer_contract(BadPrepare(), problem3(), 2)
    with pytest.raises(ContractViolation, match="starts.*positive integer"):
        check_initializer_contract(NoStarts(), problem3(), 2)


# -- updaters ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sps.problems((3, 12)), sps.seeds())
def test_built_in_updaters_keep_the_contract(problem, seed):
    r = min(2, problem.p)
    x = check_initializer_contract(RandomInitializer(), problem, r, seed=seed)
    for updater in (IdentityUpdater(), RotationUpdater(), PowerUpdater(), GPowerUpdater(), GPowerUpdater(relative=True)):
        z, objective, _ = check_updater_contract(updater, problem, x, steps=3)
        assert z.shape == x.shape and isinstance(objective, float)
    # a generalized problem: the power updater reads the constraint from the carry
    check_updater_contract(PowerUpdater(), problem, x, with_constraint(problem.p))


class _Proposal(Updater):
    def __init__(self, fn, init=None):
        self.fn, self.init_state = fn, init

    def init(self, problem, x0, carry):
        return self.init_state() if self.init_state else None

    def propose(self, problem, x, state):
        return self.fn(problem, x, state)


def _counts_in_place(problem, x, state):
    state[0] += 1  # state mutated in place: a second call with "the same" state differs
    return x * state[0], 1.0, state


def _modifies_x(problem, x, state):
    x[0, 0] = 0.5
    return x.copy(), 1.0, state


@pytest.mark.parametrize(
    ("fn", "init", "message"),
    [
        (lambda problem, x, state: (x, 1.0), None, r"must return \(z, objective, state\)"),
        (lambda problem, x, state: (x[:-1], 1.0, state), None, "shape"),
        (lambda problem, x, state: (x * np.inf, 1.0, state), None, "non-finite"),
        (lambda problem, x, state: (x.tolist(), 1.0, state), None, "float numpy array"),
        (lambda problem, x, state: (x, "high", state), None, "objective must be a real number"),
        (lambda problem, x, state: (x, np.array([1.0, 2.0]), state), None, "objective must be a real number"),
        (_counts_in_place, lambda: [0], "proposed something else for the same x and state"),
        (_modifies_x, None, "modified its input x"),
    ],
)
def test_updater_contract_catches_broken_updaters(fn, init, message):
    with pytest.raises(ContractViolation, match=message):
        check_updater_contract(_Proposal(fn, init), problem3(), unit_columns(3, 2))


def test_updater_contract_accepts_a_nan_objective_and_returns_the_last_state():
    class Counting(Updater):
        def init(self, problem, x0, carry):
            return 0

        def propose(self, problem, x, state):
            return problem.covariance.matmat(x), float("nan"), state + 1

    z, objective, state = check_updater_contract(Counting(), problem3(), unit_columns(3, 2), steps=4)
    assert np.isnan(objective) and state == 4


def test_updater_contract_catches_an_init_that_modifies_the_carry():
    class Grabby(Updater):
        def init(self, problem, x0, carry):
            carry.get(CONSTRAINT)[:] = 0.0
            return None

        def propose(self, problem, x, state):
            return x, 0.0, state

    with pytest.raises(ContractViolation, match="modified the carry's 'constraint' entry"):
        check_updater_contract(Grabby(), problem3(), unit_columns(3, 1), with_constraint(3))


# -- stoppers ---------------------------------------------------------------------------------------------
def iter_state(iteration: int, change: float = 0.5, history: tuple[float, ...] = ()) -> IterState:
    x = unit_columns(4, 2)
    return IterState(iteration=iteration, x=x, loadings=x, relative_change=change, objective_history=history)


def test_built_in_stoppers_keep_the_contract():
    assert check_stopper_contract(MaxIterations(3), iter_state(2)) is None
    assert "iteration limit (3)" in check_stopper_contract(MaxIterations(3), iter_state(3))
    assert check_stopper_contract(RelativeChange(0.01), iter_state(5, change=0.5)) is None
    assert check_stopper_contract(RelativeChange(0.01), iter_state(5, change=1e-3))
    assert check_stopper_contract(ObjectiveChange(1e-4), iter_state(2, history=(1.0, 1.0)))
    both = AnyOf((RelativeChange(0.01), MaxIterations(200)))
    assert check_stopper_contract(both, iter_state(1)) is None


class _Answer(Stopper):
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state):
        return self.fn(state)


_CALLS = [0]


def _alternates(state):
    _CALLS[0] += 1
    return "stop" if _CALLS[0] % 2 else None


def _clears_loadings(state):
    state.loadings[:] = 0.0
    return None


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda state: "", "non-empty reason"),
        (lambda state: True, "non-empty reason"),
        (lambda state: 0, "non-empty reason"),
        (_alternates, "answered differently"),
        (_clears_loadings, "modified the state's arrays"),
    ],
)
def test_stopper_contract_catches_broken_stoppers(fn, message):
    with pytest.raises(ContractViolation, match=message):
        check_stopper_contract(_Answer(fn), iter_state(1))


# -- deflators: the carry ---------------------------------------------------------------------------------
@SETTINGS
@given(sps.problems((3, 12)), sps.seeds())
def test_built_in_deflators_keep_the_contract_and_pass_the_carry_on(problem, seed):
    x = unit_columns(problem.p, 1, seed)[:, 0]
    carry = with_constraint(problem.p)
    out, after = check_deflator_contract(ProjectionDeflation(), problem, x, carry=carry, annihilates=True, keeps_psd=True)
    assert out.p == problem.p and after is carry
    out, after = check_deflator_contract(HotellingDeflation(), problem, x)
    assert isinstance(after, Carry)


class _Deflate(Deflator):
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, problem, x, previous, carry):
        return self.fn(problem, x, previous, carry)


def _clears_q_in_place(problem, x, previous, carry):
    carry.get(CONSTRAINT)[:, 0] = 0.0
    return problem, carry


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda problem, x, previous, carry: problem, r"must return a \(problem, carry\) pair"),
        (lambda problem, x, previous, carry: (problem, {"q": x}), "must be a spcakit.core.records.Carry"),
        (lambda problem, x, previous, carry: (problem.covariance, carry), "must be a spcakit.inputs.problem.Problem"),
        (_clears_q_in_place, "modified the carry's 'constraint' entry in place"),
    ],
)
def test_deflator_contract_catches_a_broken_carry(fn, message):
    with pytest.raises(ContractViolation, match=message):
        check_deflator_contract(_Deflate(fn), problem3(), np.array([1.0, 0.0, 0.0]), carry=with_constraint(3))


def test_a_deflator_returns_a_new_carry_with_set():
    def remembers(problem, x, previous, carry):
        return problem, carry.set("found", previous.copy())

    _, after = check_deflator_contract(_Deflate(remembers), problem3(), np.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(after.get("found"), [[1.0], [0.0], [0.0]])


def test_the_checks_are_exported_from_spcakit_testing():
    import spcakit.testing

    for name in ("check_updater_contract", "check_stopper_contract"):
        assert name in spcakit.testing.__all__
        assert getattr(spcakit.testing, name) is getattr(spcakit.testing.contracts, name)
    assert spcakit.Carry is Carry
