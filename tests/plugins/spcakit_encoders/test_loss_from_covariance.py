r"""The registered encoder criteria come from the covariance operator alone and agree with
:func:`~spcakit_encoders.metrics.encoder_metrics` on the data themselves, the formula that reads the
centred data (the data path).

Both are exact formulas: :math:`\|X\|_F^2 = s\operatorname{tr}C` and
:math:`\|XH(XH)^+X\|_F^2 = s\operatorname{tr}\big((U^\top CU)^+(CU)^\top CU\big)` for
:math:`X^\top X = sC`. They differ by rounding, which the covariance path squares: it works with
:math:`U^\top CU = (XU)^\top XU / s`, of condition number :math:`\kappa(XU)^2`. So the losses are
compared to :math:`64\,\epsilon\,\kappa^2\|X\|_F^2`, with :math:`\kappa` the condition number of
:math:`XU` on the directions both paths keep (all of them for loadings of full rank in :math:`X`;
for rank-deficient loadings the directions at rounding level, which both paths drop, are left out).
The ratios (normalized loss, symmetric EV) inherit the loss's error over :math:`\|X - X_k\|_F^2` and
:math:`\|X_k\|_F^2`. Where :math:`\kappa(XU)` is beyond :math:`1/\sqrt{p\,\epsilon}` the covariance
path cannot see a direction the data path still resolves: the last test pins that limit, which the
module's description states.
"""

from __future__ import annotations

import numpy as np
import pytest

import spcakit
from spcakit.analysis.metrics import compute_metrics, orthonormal_basis
from spcakit.inputs.problem import Problem
from spcakit_encoders.metrics import ENCODER_METRICS, METRICS, data_divisor, encoder_metrics

EPS = np.finfo(float).eps


def data(n: int, p: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) + rng.uniform(-5, 5, p)


def kept_condition(x: np.ndarray, h: np.ndarray) -> float:
    r""":math:`\kappa(XU)` over the singular values above :math:`\sqrt\epsilon` of the largest (those at rounding
    level belong to directions :math:`XH` does not have: both paths drop them)."""
    sing = np.linalg.svd(x @ orthonormal_basis(h), compute_uv=False)
    kept = sing[sing > np.sqrt(EPS) * sing[0]]
    return float(kept[0] / kept[-1])


def assert_agree(problem: Problem, h: np.ndarray) -> dict[str, float]:
    """The registered criteria of ``h`` on ``problem`` (data never read) against the data path."""
    ours = compute_metrics(problem, h, METRICS)
    x = problem.data  # read here, by the test: the reference
    reference = encoder_metrics(h, problem.covariance, x)
    total = float(np.vdot(x, x))
    tol = 64 * EPS * kept_condition(x, h) ** 2 * total
    assert abs(ours["loss"] - reference["loss"]) <= tol, (ours, reference, tol)
    optimum = reference["loss"] / reference["normalized_loss"] if reference["loss"] > 0 else None
    if optimum:
        assert abs(ours["normalized_loss"] - reference["normalized_loss"]) <= 2 * tol / optimum + 1e-14
    else:
        assert ours["normalized_loss"] == reference["normalized_loss"]
    assert ours["symmetric_explained_variance"] == pytest.approx(reference["symmetric_explained_variance"], rel=1e-12)
    return ours


@pytest.mark.parametrize("options", [{}, {"center": False}, {"standardize": True}])
@pytest.mark.parametrize("shape", [(300, 20), (15, 60)])
@pytest.mark.parametrize("seed", range(4))
def test_the_criteria_of_random_loadings_are_those_of_the_data(shape, options, seed):
    problem = spcakit.as_problem(data(*shape, seed=seed), **options)
    rng = np.random.default_rng(seed + 10)
    h = rng.standard_normal((problem.p, 4)) * (rng.random((problem.p, 4)) < 0.3)
    h[np.arange(4), np.arange(4)] = 1.0
    assert data_divisor(problem) == (shape[0] if options.get("center") is False else shape[0] - 1)
    assert_agree(problem, h)


@pytest.mark.parametrize("method", ["spcart", "tpower", "encoder-iterative"])
def test_the_criteria_of_a_fit_are_those_of_its_data(method):
    a = data(400, 25, seed=3)
    result = spcakit.fit(a, method, r=4, metrics=ENCODER_METRICS, **({"sparsity": 6} if method.startswith("encoder") else {}))
    ours = assert_agree(spcakit.as_problem(a), result.loadings)
    assert {k: result.metrics[k] for k in ENCODER_METRICS} == ours


def test_rank_deficient_loadings_give_the_same_criteria_on_both_paths():
    """More loadings than the rank of the data, a loading in the null space of X, a loading repeated: the
    direction XH lacks is at rounding level on both paths, and both drop it."""
    problem = spcakit.as_problem(data(9, 40, seed=5))  # rank 8
    x = problem.data
    _, _, vt = np.linalg.svd(x)
    null = vt[-1]
    assert np.linalg.norm(x @ null) < 1e-12 * np.linalg.norm(x)
    h = np.random.default_rng(6).standard_normal((40, 3))
    cases = {
        "more loadings than the rank": np.random.default_rng(7).standard_normal((40, 10)),
        "a loading in the null space": np.column_stack([vt[0], null, vt[3]]),
        "a loading repeated": np.column_stack([h, h[:, 0] - 2 * h[:, 2]]),
    }
    values = {name: assert_agree(problem, loadings) for name, loadings in cases.items()}
    assert values["more loadings than the rank"]["loss"] == 0.0  # XH spans the data's rows: nothing lost
    assert values["more loadings than the rank"]["normalized_loss"] == 1.0
    # the null loading adds nothing: the loss is that of the two others
    two = assert_agree(problem, np.column_stack([vt[0], vt[3]]))
    assert values["a loading in the null space"]["loss"] == pytest.approx(two["loss"], rel=1e-9)
    assert values["a loading repeated"]["loss"] == pytest.approx(assert_agree(problem, h)["loss"], rel=1e-9)


def test_the_covariance_path_cannot_see_a_direction_below_the_square_root_of_epsilon():
    """The documented limit: a loading whose image is 1e-10 of the others' (kappa(XU) ~ 1e10, beyond
    1/sqrt(p eps) ~ 7e6 but within 1/(n eps)) is resolved by the data path (its direction counts) and
    dropped by the covariance path, whose U^T C U holds it at 1e-20, below rounding."""
    problem = spcakit.as_problem(data(9, 40, seed=5))
    x = problem.data
    _, sing, vt = np.linalg.svd(x)
    w = vt[-1] + 1e-10 * vt[0]  # in the null space but for 1e-10 of the top direction
    h = np.column_stack([vt[1], w / np.linalg.norm(w)])
    on_data = encoder_metrics(h, problem.covariance, x)
    ours = compute_metrics(problem, h, METRICS)
    total = float(np.vdot(x, x))
    assert on_data["loss"] == pytest.approx(total - sing[0] ** 2 - sing[1] ** 2, rel=1e-9)  # the top direction counts
    assert ours["loss"] == pytest.approx(total - sing[1] ** 2, rel=1e-9)  # it does not
