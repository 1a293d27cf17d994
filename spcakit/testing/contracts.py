r"""Contract checks for parts written outside spcakit.

Each ``check_*`` function calls a part the way the drivers do (with the
signatures of :mod:`spcakit.core.protocols`, the run's
:class:`~spcakit.core.records.Carry` included) and raises
:class:`ContractViolation` (an :class:`AssertionError`, so test runners
report it as a failure) with a precise message when the part breaks a rule
the drivers rely on. They need only NumPy, so they can be called from any
test framework::

    import numpy as np
    from spcakit.testing.contracts import check_truncator_contract

    def test_my_truncator():
        z = np.random.default_rng(0).standard_normal((20, 3))
        check_truncator_contract(MyTruncator(0.3), z)

Combine them with :mod:`spcakit.testing.strategies` to check many inputs.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from spcakit.core.errors import InvalidParameterError, ZeroLoadingError
from spcakit.numerics.operators import CovarianceOperator
from spcakit.inputs.problem import Problem
from spcakit.core.records import Carry, IterState

__all__ = [
    "ContractViolation",
    "check_deflator_contract",
    "check_initializer_contract",
    "check_operator_contract",
    "check_stopper_contract",
    "check_truncator_contract",
    "check_updater_contract",
]


class ContractViolation(AssertionError):
    """A part broke the contract the drivers rely on."""


def _fail(what: str, message: str) -> None:
    raise ContractViolation(f"{what}: {message}")


def _name(part: Any) -> str:
    return getattr(part, "__qualname__", None) or type(part).__name__


def _snapshot(carry: Carry) -> list[tuple[str, Any]]:
    """The carry's keys and copies of its arrays, to tell whether a part modified it in place."""
    return [(key, np.array(value, copy=True) if isinstance(value, np.ndarray) else value) for key, value in carry.entries]


def _check_carry_untouched(what: str, carry: Carry, before: list[tuple[str, Any]]) -> None:
    after = carry.entries
    if [key for key, _ in after] != [key for key, _ in before]:
        _fail(what, "changed the carry it was given (Carry.set returns a new one; return that instead)")
    for (key, old), (_, new) in zip(before, after):
        if isinstance(old, np.ndarray) and not (isinstance(new, np.ndarray) and np.array_equal(new, old, equal_nan=True)):
            _fail(what, f"modified the carry's {key!r} entry in place (parts must be pure)")


def _dense(problem: Problem) -> np.ndarray:
    return np.array(problem.covariance.matmat(np.eye(problem.p)), dtype=float)


def _check_problem_untouched(what: str, problem: Problem, before: np.ndarray, data: np.ndarray | None) -> None:
    after = _dense(problem)
    if not np.allclose(after, before, rtol=0.0, atol=1e-13 * max(float(np.abs(before).max()), 1e-300)):
        _fail(what, "modified the input problem's covariance")
    if data is not None and not (problem.data is not None and np.array_equal(problem.data, data)):
        _fail(what, "modified the input problem's data")


def _finite_array(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be finite to check a contract on it")
    return arr


def check_truncator_contract(
    truncator: Any,
    z: np.ndarray,
    *,
    check_parameters: bool = True,
    rtol: float = 1e-12,
) -> np.ndarray | None:
    r"""Check that a truncator behaves as the drivers need, on one input ``z``.

    The drivers call ``truncator(z)`` on the ``p x r`` output of an updater
    and normalise each returned column to unit length. A truncator must:

    * return a finite float array of the shape of ``z``;
    * only zero entries or shrink them toward zero: every output entry is
      0, or has the sign of the input entry and a magnitude at most the
      input's (``rtol`` allows for rounding);
    * never zero a nonzero column entirely, unless it raises
      :class:`~spcakit.core.errors.ZeroLoadingError` instead (a column that is
      zero on input must be zero on output);
    * be pure: leave ``z`` unmodified, and return the same result when
      called again on the same input.

    Parameters
    ----------
    truncator
        The part: ``truncator(z) -> x`` with ``check(p)`` (a
        :class:`~spcakit.core.protocols.Truncator`).
    z
        Finite input, shape ``(p,)`` or ``(p, r)``.
    check_parameters
        Call ``check(p)`` first, as the drivers do; it must
        return ``None`` or raise :class:`~spcakit.core.errors.InvalidParameterError`
        (which propagates: the parameters are invalid for this ``p``).
    rtol
        Relative tolerance of the magnitude comparison.

    Returns
    -------
    numpy.ndarray or None
        The truncated array, or ``None`` when the truncator raised
        :class:`~spcakit.core.errors.ZeroLoadingError`.

    Raises
    ------
    ContractViolation
        With a message naming the broken rule.
    """
    what = f"truncator {_name(truncator)}"
    z = _finite_array(z, "z")
    if z.ndim not in (1, 2):
        raise ValueError(f"z must have shape (p,) or (p, r); got {z.shape}")
    if check_parameters:
        try:
            returned = truncator.check(z.shape[0])
        except InvalidParameterError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported as a violation
            _fail(what, f"check({z.shape[0]}) raised {type(exc).__name__} ({exc}); it must raise InvalidParameterError")
        if returned is not None:
            _fail(what, f"check({z.shape[0]}) returned {returned!r}; it must return None or raise")
    original = z.copy()
    try:
        out = truncator(z)
    except ZeroLoadingError:
        if not np.array_equal(z, original):
            _fail(what, "modified its input z before raising ZeroLoadingError")
        return None
    if not np.array_equal(z, original):
        _fail(what, "modified its input z in place (parts must be pure)")
    if not isinstance(out, np.ndarray):
        _fail(what, f"returned {type(out).__name__}; it must return a numpy array")
    if out.shape != z.shape:
        _fail(what, f"returned shape {out.shape} for input shape {z.shape}")
    if not np.issubdtype(out.dtype, np.floating):
        _fail(what, f"returned dtype {out.dtype}; it must return floats")
    if not np.all(np.isfinite(out)):
        _fail(what, "returned non-finite entries")
    nonzero = out != 0
    same_sign = np.sign(out) == np.sign(z)
    if np.any(nonzero & ~same_sign):
        idx = tuple(int(i) for i in np.argwhere(nonzero & ~same_sign)[0])
        _fail(what, f"entry {idx} changed sign or became nonzero ({z[idx]!r} -> {out[idx]!r})")
    grown = np.abs(out) > np.abs(z) * (1 + rtol) + rtol * np.max(np.abs(z), axis=0, keepdims=z.ndim == 2)
    if np.any(grown):
        idx = tuple(int(i) for i in np.argwhere(grown)[0])
        _fail(what, f"entry {idx} grew in magnitude ({z[idx]!r} -> {out[idx]!r}); truncation only zeroes or shrinks")
    z2, out2 = z.reshape(z.shape[0], -1), out.reshape(out.shape[0], -1)
    zeroed = np.nonzero(np.any(z2 != 0, axis=0) & ~np.any(out2 != 0, axis=0))[0]
    if zeroed.size:
        _fail(
            what,
            f"zeroed column {int(zeroed[0])} entirely without raising ZeroLoadingError "
            "(the driver cannot normalise a zero loading)",
        )
    again = truncator(original.copy())
    if not (isinstance(again, np.ndarray) and np.array_equal(again, out)):
        _fail(what, "returned a different result when called again on the same input (parts must be pure)")
    return out


def check_operator_contract(op: CovarianceOperator, *, r: int = 1, rtol: float = 1e-8) -> np.ndarray:
    r"""Check that a covariance operator is consistent with its own dense matrix.

    Forms :math:`C` column by column (``op.matmat(I)``, so only for small
    ``p``) and checks that ``matmat`` on vectors and blocks, ``diagonal``,
    ``trace`` and ``top_eigenpairs(r)`` agree with it, and that :math:`C`
    is symmetric.

    Parameters
    ----------
    op
        Any :class:`~spcakit.numerics.operators.CovarianceOperator`.
    r
        Number of eigenpairs to check.
    rtol
        Tolerance relative to the largest entry of :math:`C`.

    Returns
    -------
    numpy.ndarray
        The dense matrix :math:`C`.

    Raises
    ------
    ContractViolation
    """
    what = f"operator {type(op).__name__}"
    if not isinstance(op, CovarianceOperator):
        _fail(what, "does not provide p, matmat, diagonal, trace and top_eigenpairs")
    p = op.p
    dense = np.asarray(op.matmat(np.eye(p)), dtype=float)
    if dense.shape != (p, p):
        _fail(what, f"matmat(I) has shape {dense.shape}, expected {(p, p)}")
    scale = max(float(np.abs(dense).max()), 1e-300)
    tol = rtol * scale * max(1, p)
    if not np.all(np.isfinite(dense)):
        _fail(what, "matmat(I) has non-finite entries")
    if np.abs(dense - dense.T).max() > tol:
        _fail(what, f"is not symmetric (largest asymmetry {np.abs(dense - dense.T).max():.3g})")
    probe = np.linspace(-1.0, 1.0, p) + 0.5
    vec = np.asarray(op.matmat(probe))
    if vec.shape != (p,) or np.abs(vec - dense @ probe).max() > tol * max(1, np.abs(probe).sum()):
        _fail(what, "matmat on a vector (p,) disagrees with matmat on the identity")
    diag = np.asarray(op.diagonal())
    if diag.shape != (p,) or np.abs(diag - np.diag(dense)).max() > tol:
        _fail(what, "diagonal() disagrees with the diagonal of matmat(I)")
    if abs(float(op.trace()) - float(np.trace(dense))) > tol * p:
        _fail(what, f"trace() = {op.trace()!r} but the trace of matmat(I) is {np.trace(dense)!r}")
    values, vectors = op.top_eigenpairs(r)
    values, vectors = np.asarray(values), np.asarray(vectors)
    expected = np.linalg.eigvalsh((dense + dense.T) / 2)[::-1][:r]
    if values.shape != (r,) or vectors.shape != (p, r):
        _fail(what, f"top_eigenpairs({r}) returned shapes {values.shape}, {vectors.shape}; expected {(r,)}, {(p, r)}")
    if np.abs(values - expected).max() > tol * p:
        _fail(what, f"top_eigenpairs({r}) eigenvalues {values} differ from the dense ones {expected}")
    if np.abs(vectors.T @ vectors - np.eye(r)).max() > 1e-6:
        _fail(what, f"top_eigenpairs({r}) eigenvectors are not orthonormal")
    residual = dense @ vectors - vectors * values
    if np.abs(residual).max() > 1e-6 * scale * p:
        _fail(what, f"top_eigenpairs({r}) are not eigenpairs (residual {np.abs(residual).max():.3g})")
    return dense


def check_deflator_contract(
    deflator: Any,
    problem: Problem,
    x: np.ndarray,
    previous: np.ndarray | None = None,
    carry: Carry | None = None,
    *,
    annihilates: bool = False,
    keeps_psd: bool = False,
    rtol: float = 1e-8,
) -> tuple[Problem, Carry]:
    r"""Check that a deflator returns a valid problem and carry and leaves its inputs alone.

    The deflation driver calls ``deflator(problem, x, previous, carry)`` with
    the unit loading ``x`` just found, the loadings found so far
    (``previous``, ``x`` last) and the run's :class:`~spcakit.core.records.Carry`,
    and goes on with the ``(problem, carry)`` it returns. A deflator must
    return a :class:`~spcakit.inputs.problem.Problem` with the same ``p`` and
    feature names whose covariance is a consistent symmetric operator (see
    :func:`check_operator_contract`) and whose data, if any, matches it, and
    a :class:`~spcakit.core.records.Carry`; and must not modify ``problem``, ``x``,
    ``previous`` or the arrays held by ``carry``.

    Parameters
    ----------
    deflator
        The part.
    problem
        The problem to deflate (small ``p``: its covariance is densified).
    x
        A unit loading, shape ``(p,)``.
    previous
        Loadings found so far; default ``x`` as one column.
    carry
        The carry handed in (default: an empty one, as after a first round
        whose initializer prepared nothing).
    annihilates
        Also require :math:`C'x = 0` (true of projection deflation for any
        ``x``, and of Hotelling's when ``x`` is an eigenvector).
    keeps_psd
        Also require the deflated covariance to be positive semi-definite.
    rtol
        Tolerance relative to the largest entry of the original covariance.

    Returns
    -------
    tuple of Problem and Carry
        The deflated problem and the carry for the next round.

    Raises
    ------
    ContractViolation
    """
    what = f"deflator {_name(deflator)}"
    x = _finite_array(x, "x")
    if previous is None:
        previous = x[:, None].copy()
    carry = Carry() if carry is None else carry
    before_cov = _dense(problem)
    before_data = None if problem.data is None else problem.data.copy()
    before_carry = _snapshot(carry)
    x_copy, prev_copy = x.copy(), np.array(previous, copy=True)
    names = problem.feature_names
    returned = deflator(problem, x, previous, carry)
    if not np.array_equal(x, x_copy) or not np.array_equal(previous, prev_copy):
        _fail(what, "modified x or previous in place (parts must be pure)")
    _check_problem_untouched(what, problem, before_cov, before_data)
    _check_carry_untouched(what, carry, before_carry)
    if not (isinstance(returned, tuple) and len(returned) == 2):
        _fail(what, f"returned {type(returned).__name__}; it must return a (problem, carry) pair")
    out, out_carry = returned
    if not isinstance(out, Problem):
        _fail(what, f"returned {type(out).__name__} as the problem; it must be a spcakit.inputs.problem.Problem")
    if not isinstance(out_carry, Carry):
        _fail(what, f"returned {type(out_carry).__name__} as the carry; it must be a spcakit.core.records.Carry")
    if out.p != problem.p:
        _fail(what, f"returned a problem with p={out.p}; expected p={problem.p}")
    if out.feature_names != names:
        _fail(what, "changed the feature names")
    scale = max(float(np.abs(before_cov).max()), 1e-300)
    try:
        dense = check_operator_contract(out.covariance, r=1, rtol=rtol)
    except ContractViolation as exc:
        _fail(what, f"the deflated covariance breaks the operator contract: {exc}")
    if out.data is not None:
        expected = out.data.T @ out.data
        ratio = np.vdot(dense.ravel(), expected.ravel()) / max(np.vdot(expected.ravel(), expected.ravel()), 1e-300)
        if np.abs(dense - ratio * expected).max() > rtol * scale * problem.p:
            _fail(what, "the returned data does not match the returned covariance (drop it: data=None)")
    if annihilates:
        cx = dense @ x
        if np.abs(cx).max() > rtol * scale * problem.p:
            _fail(what, f"does not annihilate x: |C'x| = {np.abs(cx).max():.3g}")
    if keeps_psd:
        smallest = float(np.linalg.eigvalsh(dense)[0])
        if smallest < -rtol * scale * problem.p:
            _fail(what, f"the deflated covariance is not PSD (smallest eigenvalue {smallest:.3g})")
    return out, out_carry


def check_initializer_contract(
    initializer: Any, problem: Problem, r: int, *, seed: int = 0, carry: Carry | None = None
) -> np.ndarray:
    r"""Check that an initializer returns a usable, reproducible start.

    A driver calls ``carry = initializer.prepare(problem, r, rng, Carry())``
    once per run and then ``initializer(problem, r, rng, carry)`` in every
    round, with the same generator. The initializer must return a finite
    ``p x r`` array with no zero column; ``prepare`` must return a
    :class:`~spcakit.core.records.Carry`; ``starts()`` a positive integer; both
    calls must be reproducible (the same seed gives the same start) and leave
    the problem and the carry they are given unmodified.

    Parameters
    ----------
    initializer
        The part (a :class:`~spcakit.core.protocols.Initializer`).
    problem
        The problem (small ``p``).
    r
        Number of loadings.
    seed
        Seed of the generators passed.
    carry
        Start a later round with this carry instead of preparing a run
        (``prepare`` is then not called).

    Returns
    -------
    numpy.ndarray
        The start :math:`X_0`.

    Raises
    ------
    ContractViolation
    """
    what = f"initializer {_name(initializer)}"
    before = _dense(problem)
    data = None if problem.data is None else problem.data.copy()
    starts = initializer.starts()
    if not isinstance(starts, numbers.Integral) or isinstance(starts, bool) or starts < 1:
        _fail(what, f"starts() returned {starts!r}; it must return a positive integer")

    def start(rng: np.random.Generator) -> np.ndarray:
        given = carry
        if given is None:
            given = initializer.prepare(problem, r, rng, Carry())
            if not isinstance(given, Carry):
                _fail(what, f"prepare() returned {type(given).__name__}; it must return a spcakit.core.records.Carry")
        snapshot = _snapshot(given)
        x0 = np.asarray(initializer(problem, r, rng, given))
        _check_carry_untouched(what, given, snapshot)
        return x0

    x0 = start(np.random.default_rng(seed))
    if x0.shape != (problem.p, r):
        _fail(what, f"returned shape {x0.shape}; expected {(problem.p, r)}")
    if not np.issubdtype(x0.dtype, np.number) or not np.all(np.isfinite(x0)):
        _fail(what, "returned non-finite entries")
    if np.any(~np.any(x0 != 0, axis=0)):
        _fail(what, "returned a zero column")
    again = start(np.random.default_rng(seed))
    if not np.array_equal(again, x0):
        _fail(what, "returned a different start for the same seed (use only the rng it is given)")
    _check_problem_untouched(what, problem, before, data)
    return x0


def check_updater_contract(
    updater: Any, problem: Problem, x: np.ndarray, carry: Carry | None = None, *, steps: int = 2
) -> tuple[np.ndarray, float, Any]:
    r"""Check that an updater proposes usable directions and threads its state.

    A driver calls ``state = updater.init(problem, x0, carry)`` once per
    round, then ``z, objective, state = updater.propose(problem, x, state)``
    at every step, truncating ``z`` into the next ``x``. The proposal ``z``
    must be a finite float array of the shape of ``x`` (``p x r``), the
    objective a real number (NaN where the updater has none), and the
    updater pure: ``problem``, ``x`` and the carry unmodified, and the same
    ``(x, state)`` giving the same proposal again.

    Parameters
    ----------
    updater
        The part (a :class:`~spcakit.core.protocols.Updater`).
    problem
        The problem (small ``p``).
    x
        The iterate, ``p x r``, finite with no zero column (e.g. a start
        from :func:`check_initializer_contract`).
    carry
        The run's carry (default: an empty one).
    steps
        Number of steps checked; each next step starts from the unit
        columns of the previous proposal (no truncation).

    Returns
    -------
    tuple
        ``(z, objective, state)`` of the last step.

    Raises
    ------
    ContractViolation
    """
    what = f"updater {_name(updater)}"
    x = _finite_array(x, "x")
    if x.ndim != 2 or np.any(~np.any(x != 0, axis=0)):
        raise ValueError(f"x must be a p x r array with no zero column; got shape {x.shape}")
    carry = Carry() if carry is None else carry
    before, data, before_carry = _dense(problem), None if problem.data is None else problem.data.copy(), _snapshot(carry)
    state = updater.init(problem, x.copy(), carry)
    _check_carry_untouched(f"{what} init()", carry, before_carry)
    result: tuple[np.ndarray, float, Any] = (x, float("nan"), state)
    for step in range(1, max(1, steps) + 1):
        original = x.copy()
        returned = updater.propose(problem, x, state)
        if not (isinstance(returned, tuple) and len(returned) == 3):
            _fail(what, f"propose() returned {type(returned).__name__}; it must return (z, objective, state)")
        z, objective, new_state = returned
        if not np.array_equal(x, original):
            _fail(what, "modified its input x in place (parts must be pure)")
        if not isinstance(z, np.ndarray) or not np.issubdtype(z.dtype, np.floating):
            _fail(what, f"step {step}: z must be a float numpy array; got {type(z).__name__}")
        if z.shape != x.shape:
            _fail(what, f"step {step}: z has shape {z.shape}; expected the shape of x, {x.shape}")
        if not np.all(np.isfinite(z)):
            _fail(what, f"step {step}: z has non-finite entries")
        if not isinstance(objective, numbers.Real) or isinstance(objective, bool):
            _fail(what, f"step {step}: the objective must be a real number (NaN if undefined); got {objective!r}")
        again = updater.propose(problem, original.copy(), state)
        if not (np.array_equal(again[0], z) and np.array_equal(again[1], objective, equal_nan=True)):
            _fail(what, f"step {step}: proposed something else for the same x and state (parts must be pure)")
        result, state = (z, float(objective), new_state), new_state
        norms = np.linalg.norm(z, axis=0)
        if np.any(norms == 0):
            break  # a zero direction: the driver reports it; nothing further to check
        x = z / norms
    _check_problem_untouched(what, problem, before, data)
    _check_carry_untouched(what, carry, before_carry)
    return result


def check_stopper_contract(stopper: Any, state: IterState) -> str | None:
    r"""Check that a stopper answers with a reason or ``None`` and is pure.

    A driver calls ``stopper(state)`` after every step with the
    :class:`~spcakit.core.records.IterState`; the stopper returns a short, non-empty
    sentence saying why to stop, or ``None`` to go on, must give the same
    answer for the same state, and must not modify the state's arrays.

    Parameters
    ----------
    stopper
        The part (a :class:`~spcakit.core.protocols.Stopper`).
    state
        An iteration state, e.g.
        ``IterState(iteration=3, x=x, loadings=x, relative_change=0.5, objective_history=(1.0, 1.2, 1.25))``.

    Returns
    -------
    str or None
        The stopper's answer.

    Raises
    ------
    ContractViolation
    """
    what = f"stopper {_name(stopper)}"
    x, loadings = state.x.copy(), state.loadings.copy()
    reason = stopper(state)
    if reason is not None and not (isinstance(reason, str) and reason.strip()):
        _fail(what, f"returned {reason!r}; it must return a non-empty reason (str) or None")
    if not (np.array_equal(state.x, x) and np.array_equal(state.loadings, loadings)):
        _fail(what, "modified the state's arrays in place (parts must be pure)")
    if stopper(state) != reason:
        _fail(what, "answered differently for the same state (parts must be pure)")
    return reason
