"""Invariance of every registered method.

* **Permutation equivariance**: fitting the data with its variables permuted
  gives the loadings with their rows permuted (same supports, same metrics),
  unless the data have exact symmetric ties - which the data drawn here never
  have: Gaussian data with a random scale per column, covariances of full rank
  from Gaussian factors.
* **Scale invariance**: fitting ``c * data`` (``c > 0``) gives the same loadings.
* **Four standardisations**: one data set standardised with the population
  std, with the sample std, by ``np.corrcoef``, and as its covariance rescaled
  to unit diagonal gives the same supports and CPEV (to 1e-9). The variances
  are then all equal up to rounding, so the decisions that rank variables are
  made by the tie rule of :mod:`spcakit.numerics.ties`, not by rounding noise.

Every method of the registry is checked, with the parameters it needs
(:data:`PARAMETERS`); a method added without an entry there fails
:func:`test_every_method_is_covered`. Configurations that draw random starts
over the variables cannot be permutation-equivariant; they are listed in
:data:`NOT_EQUIVARIANT` with the reason and still checked for scale invariance.
The methods with Mackey's generalized deflation (``greedy``, ``exhaustive``)
have ties of their own in their later rounds (:data:`GENERALIZED_TIE`): for
them a difference in the later loadings passes only when the nested spans of
the loadings, and every metric of those spans (:data:`SPAN_METRICS`), are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.inputs.datasets import pitprops, zou_covariance
from spcakit.core.errors import SpcakitError
from spcakit.core.plugins import get_registry
from spcakit.core.specs import PartRef
from spcakit.testing import strategies as sps

EXAMPLES = 50
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
#: Loadings agree to this after undoing the permutation (or the scaling).
ATOL = 1e-8

Draw = Callable[[Any], Any]


def _k(low: Callable[[int, int], int] = lambda p, r: 1) -> Callable[[int, int], st.SearchStrategy[dict]]:
    return lambda p, r: st.integers(low(p, r), p).map(lambda k: {"k": k})


def _none(p: int, r: int) -> st.SearchStrategy[dict]:
    return st.just({})


#: For each registered method, a strategy of the parameters it needs for ``p`` variables and ``r`` loadings.
PARAMETERS: dict[str, Callable[[int, int], st.SearchStrategy[dict]]] = {
    # The encoder H = Omega U_R takes U_R from the SVD of C^+ X = [I_s | C^+ X_rest] (up to the order of the
    # columns), whose singular values are 1 but for min(s, p - s) of them: with more features r than p - s,
    # U_R is an arbitrary basis of an eigenspace (a tie in the method itself, for any data). So s <= p - r,
    # and r <= p / 2 (the drawn "r" replaces the case's r).
    "encoder-batch": lambda p, r: st.integers(min(r, p // 2), p - min(r, p // 2)).map(
        lambda s: {"sparsity": s, "r": min(r, p // 2, s)}),
    # one feature per round, on a residual of rank p - t after t rounds; s = p would tie (as above)
    "encoder-iterative": lambda p, r: st.integers(1, min(p - 1, p - r + 1)).map(lambda s: {"sparsity": s}),
    "auto": _k(),
    # later rounds may tie by construction: see GENERALIZED_TIE
    "exhaustive": _k(),
    "exact": _k(),
    "fspca-exhaustive": _k(lambda p, r: r),
    "fspca-go": _k(lambda p, r: r),
    "fspca-ipu": _k(lambda p, r: r),
    # GPower's gamma, relative to the largest column norm (Journee et al.'s code)
    "gpower-l0": lambda p, r: st.floats(0.0, 0.05).map(lambda g: {"lam": g}),
    "gpower-l0-block": lambda p, r: st.floats(0.0, 0.05).map(lambda g: {"lam": g}),
    "gpower-l1": lambda p, r: st.floats(0.0, 0.2).map(lambda g: {"lam": g}),
    "gpower-l1-block": lambda p, r: st.floats(0.0, 0.2).map(lambda g: {"lam": g}),
    "greedy": _k(),  # as for exhaustive
    "pca": _none,
    "rsvd-gp": _none,
    "rsvd-gpb": _none,
    "spca-sp": _none,
    "spcart": _none,
    "st": _none,
    "tpower": _k(),
    "tpower-restarts": _k(),
}

#: Configurations beyond the methods' defaults: (label, method, replaced parts and fixed parameters,
#: the strategy of the drawn parameters).
CONFIGURATIONS: list[tuple[str, str, dict, Callable[[int, int], st.SearchStrategy[dict]]]] = [
    ("fspca-ipu random restarts", "fspca-ipu", {"restarts": 3}, PARAMETERS["fspca-ipu"]),
    ("fspca-go epsilon", "fspca-go", {"epsilon": 0.1}, PARAMETERS["fspca-go"]),
    ("encoder-batch leverage-columns", "encoder-batch", {"initializer": "leverage-columns"},
     PARAMETERS["encoder-batch"]),
    ("encoder-batch leverage-sampling", "encoder-batch", {"initializer": "leverage-sampling"},
     PARAMETERS["encoder-batch"]),
    ("rsvd-gp random start", "rsvd-gp", {"initializer": "random"}, _none),
    ("gpower-l0 absolute gamma", "gpower-l0", {"updater.relative": False}, PARAMETERS["gpower-l0"]),
    ("tpower energy", "tpower", {"truncator": "energy"}, _none),
    ("spcart soft", "spcart", {"truncator": "soft"}, _none),
    ("spcart row-sparse", "spcart", {"truncator": "row-sparse"}, _k(lambda p, r: r)),
    ("spca-sp power solver", "spca-sp", {"updater.solver": "power"}, _none),
]

#: Configurations that are not permutation-equivariant, and why. No registered method draws random starts
#: over the variables by default (spca-sp's LinearTimeSVD samples observations, with probabilities that a
#: permutation of the variables does not change, so it is equivariant); these configurations do.
NOT_EQUIVARIANT: dict[str, str] = {
    "fspca-ipu random restarts": "draws its starts W0 as Gaussian d x m matrices row by row: permuting the "
    "variables does not permute the draws",
    "encoder-batch leverage-sampling": "samples the columns with random keys drawn variable by variable",
    "rsvd-gp random start": "draws a Gaussian p x r start variable by variable",
}
#: Configurations whose results depend on the scale of the data, and why (absolute by definition).
NOT_SCALE_INVARIANT: dict[str, str] = {
    "gpower-l0 absolute gamma": "GPower's published absolute threshold: z_i^2 > gamma compares loadings of "
    "length ~ sqrt(scale) with an absolute gamma",
}


def _cases() -> list[tuple[str, str, dict, Callable[[int, int], st.SearchStrategy[dict]]]]:
    return [(name, name, {}, PARAMETERS[name]) for name in sorted(PARAMETERS)] + CONFIGURATIONS


def _configure(label: str, method: str, fixed: dict) -> tuple[Any, dict, dict]:
    """The method (a name or a spec), the keyword arguments of fit, and the fixed part parameters."""
    fit_kwargs, params = {}, dict(fixed)
    spec: Any = method
    if "initializer" in params:
        spec = attrs.evolve(get_registry().method(method), initializer=PartRef(params.pop("initializer")), name=label)
    if "truncator" in params:
        fit_kwargs["truncator"] = params.pop("truncator")
    return spec, fit_kwargs, params


@st.composite
def problems(draw: Draw, parameters: Callable[[int, int], st.SearchStrategy[dict]]) -> dict:
    """A problem without exact ties (data or covariance), r, the method's parameters, a permutation, a scale."""
    p = draw(st.integers(3, 7))
    r = draw(st.integers(1, min(3, p - 1)))
    kind = draw(st.sampled_from(("data", "covariance")))
    if kind == "data":
        matrix = draw(sps.data_matrices(n_range=(p + 3, p + 15), p_range=p))
    else:
        matrix = draw(sps.psd_matrices(p, rank=p, ridge=False))
    drawn = draw(parameters(p, r))
    r = drawn.pop("r", r)
    permutation = np.asarray(draw(st.permutations(range(p))))
    scale = 10.0 ** draw(st.floats(-3.0, 3.0))
    return {"matrix": matrix, "kind": kind, "r": r, "params": drawn, "permutation": permutation, "scale": scale,
            "seed": draw(st.integers(0, 2**16))}


def _permuted(case: dict) -> np.ndarray:
    m, perm = case["matrix"], case["permutation"]
    return m[:, perm] if case["kind"] == "data" else m[np.ix_(perm, perm)]


def _scaled(case: dict) -> np.ndarray:
    c = case["scale"]
    return case["matrix"] * (c if case["kind"] == "data" else c * c)


def _fit(matrix: np.ndarray, case: dict, method: Any, fit_kwargs: dict, fixed: dict):
    """The result, or the class of the spcakit error the fit raised."""
    params = {**fixed, **case["params"]}
    lam = params.pop("lam", None)
    try:
        return spcakit.fit(matrix, method, r=case["r"], covariance=case["kind"] == "covariance", lam=lam,
                           seed=case["seed"], **fit_kwargs, **params)
    except SpcakitError as exc:
        return type(exc)


def _numbers(value: Any) -> np.ndarray | None:
    try:
        out = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return out


def _nested_spans(x: np.ndarray) -> np.ndarray:
    """An orthonormal basis whose first t columns span the first t loadings, for every t (each column's
    largest-magnitude entry positive)."""
    q, _ = np.linalg.qr(x)
    return q * np.sign(q[np.argmax(np.abs(q), axis=0), np.arange(q.shape[1])])


def _generalized_tie(a: Any, b: np.ndarray) -> bool:
    """Whether loadings ``b`` differ from ``a``'s only by Mackey's structural tie (see GENERALIZED_TIE)."""
    x = a.loadings
    if np.any((b[:, 0] != 0) != (x[:, 0] != 0)):
        return False
    return bool(np.allclose(_nested_spans(b), _nested_spans(x), rtol=0, atol=ATOL))


#: Why the methods with Mackey's generalized deflation may differ in their later loadings (and only there).
GENERALIZED_TIE = (
    "round t + 1 maximises the variance a loading on a support S adds to span(x_1..x_t), which depends on S only "
    "through span(S) + span(x_1..x_t). When S misses exactly one variable of an earlier loading's support, "
    "swapping which one it misses gives the same sum (and when k + t >= p every sum may be all of R^p), hence "
    "the same added variance in exact arithmetic: the supports tie for any data, and the smaller index wins. The added directions (the nested spans of the loadings) and the variance they explain "
    "are the same; the loadings themselves differ by a combination of the earlier ones"
)


#: Metrics that depend only on the nested spans of the loadings (and their supports' sizes), not on the
#: loadings themselves (EV, NOR and the FSPCA objective do).
SPAN_METRICS = {"nz", "pattern", "sp", "std", "worst_sp", "cpev", "additional_variance", "cumulative_variance",
                "loss", "normalized_loss", "symmetric_explained_variance"}


def _assert_same(a: Any, b: Any, rows: np.ndarray, what: str, metrics: bool) -> None:
    if isinstance(a, type) or isinstance(b, type):  # a failure must be equivariant too
        assert a == b, f"{what}: {a!r} vs {b!r}"
        return
    expected = a.loadings[rows]
    unpermuted = np.empty_like(b.loadings)
    unpermuted[rows] = b.loadings
    skip: set[str] = set()
    same = np.array_equal(b.loadings != 0, expected != 0) and np.allclose(b.loadings, expected, rtol=0, atol=ATOL)
    generalized = (a.spec.get("deflator") or {}).get("name") == "generalized"
    if not same and generalized and _generalized_tie(a, unpermuted):
        skip = set(a.metrics) - SPAN_METRICS  # GENERALIZED_TIE: the same nested spans, the same metrics of them
    else:
        np.testing.assert_array_equal(b.loadings != 0, expected != 0, err_msg=f"{what}: supports differ")
        np.testing.assert_allclose(b.loadings, expected, rtol=0, atol=ATOL, err_msg=f"{what}: loadings differ")
    if metrics:
        for name, value in a.metrics.items():
            if name in skip:
                continue
            x, y = _numbers(value), _numbers(b.metrics[name])
            if x is None or y is None:
                assert value == b.metrics[name], (what, name)
            else:
                np.testing.assert_allclose(y, x, rtol=1e-7, atol=1e-9 * max(1.0, float(np.max(np.abs(x), initial=0.0))),
                                           err_msg=f"{what}: metric {name}")


@pytest.mark.parametrize("label, method, fixed, parameters", _cases(), ids=[c[0] for c in _cases()])
@SETTINGS
@given(data=st.data())
def test_permutation_equivariance_and_scale_invariance(label, method, fixed, parameters, data):
    case = data.draw(problems(parameters))
    spec, fit_kwargs, params = _configure(label, method, fixed)
    base = _fit(case["matrix"], case, spec, fit_kwargs, params)
    if label not in NOT_EQUIVARIANT:
        permuted = _fit(_permuted(case), case, spec, fit_kwargs, params)
        _assert_same(base, permuted, case["permutation"], f"{label} permuted", metrics=True)
    if label not in NOT_SCALE_INVARIANT:
        scaled = _fit(_scaled(case), case, spec, fit_kwargs, params)
        _assert_same(base, scaled, np.arange(case["matrix"].shape[1]), f"{label} scaled", metrics=False)
        if not isinstance(base, type):
            assert scaled.metrics["cpev"] == pytest.approx(base.metrics["cpev"], rel=1e-9, abs=1e-12)


def test_every_method_is_covered():
    registered = {info.spec.name for info in get_registry().methods()}
    assert registered == set(PARAMETERS), (
        "give every registered method its parameters in PARAMETERS: "
        f"missing {sorted(registered - set(PARAMETERS))}, stale {sorted(set(PARAMETERS) - registered)}"
    )
    assert set(NOT_EQUIVARIANT) <= {c[0] for c in CONFIGURATIONS}
    assert set(NOT_SCALE_INVARIANT) <= {c[0] for c in CONFIGURATIONS}


# -- one data set, standardised four ways -------------------------------------------------------
def _rows_from(covariance: np.ndarray, n: int, seed: int) -> np.ndarray:
    factor = np.linalg.cholesky(covariance)
    return np.random.default_rng(seed).standard_normal((n, covariance.shape[0])) @ factor.T


def _data_sets() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        "pitprops": _rows_from(pitprops().matrix, 180, 0),
        "zou": _rows_from(zou_covariance().matrix, 120, 1),
        "random": rng.standard_normal((40, 9)) * 10.0 ** rng.uniform(-1, 1, 9) + rng.uniform(-5, 5, 9),
    }


def _standardisations(x: np.ndarray) -> dict[str, tuple[np.ndarray, bool]]:
    """(matrix, is_covariance) for the four ways of standardising ``x``."""
    centred = x - x.mean(axis=0)
    covariance = np.cov(x, rowvar=False)
    d = 1.0 / np.sqrt(np.diag(covariance))
    return {
        "population std": (centred / x.std(axis=0, ddof=0), False),
        "sample std": (centred / x.std(axis=0, ddof=1), False),
        "np.corrcoef": (np.corrcoef(x, rowvar=False), True),
        "covariance to unit diagonal": (covariance * d[:, None] * d[None, :], True),
    }


#: Parameters of each method for the four-standardisations test (p = 9, 10 or 13; r = 3).
FOUR_WAYS: dict[str, dict] = {
    "auto": {"k": 4},
    "encoder-batch": {"sparsity": 5},
    "encoder-iterative": {"sparsity": 3},
    "exhaustive": {"k": 3},
    "exact": {"k": 3},
    "fspca-exhaustive": {"k": 4},
    "fspca-go": {"k": 4},
    "fspca-ipu": {"k": 4},
    "gpower-l0": {"lam": 0.1},
    "gpower-l0-block": {"lam": 0.002},
    "gpower-l1": {"lam": 0.2},
    "gpower-l1-block": {"lam": 0.05},
    "greedy": {"k": 4},
    "pca": {},
    "rsvd-gp": {},
    "rsvd-gpb": {},
    # SPCA-SP's default P0 on data is LinearTimeSVD's random sample of the rows, on a covariance the exact
    # leading eigenvectors: two different starts by design. exact = true gives both inputs the same start.
    "spca-sp": {"exact": True},
    "spcart": {},
    "st": {},
    "tpower": {"k": 4},
    "tpower-restarts": {"k": 4},
}


def test_four_ways_covers_every_method():
    assert {info.spec.name for info in get_registry().methods()} == set(FOUR_WAYS)


@pytest.mark.parametrize("name", sorted(FOUR_WAYS))
def test_four_standardisations_give_the_same_supports_and_cpev(name):
    for label, x in _data_sets().items():
        results = {}
        for way, (matrix, is_covariance) in _standardisations(x).items():
            params = dict(FOUR_WAYS[name])
            lam = params.pop("lam", None)
            results[way] = spcakit.fit(matrix, name, r=3, covariance=is_covariance, lam=lam, **params)
        first_way, first = next(iter(results.items()))
        for way, result in results.items():
            np.testing.assert_array_equal(result.loadings != 0, first.loadings != 0,
                                          err_msg=f"{name} on {label}: supports of {way} vs {first_way}")
            assert result.metrics["cpev"] == pytest.approx(first.metrics["cpev"], rel=0, abs=1e-9), (name, label, way)


# -- the tie rule itself (spcakit.numerics.ties) -------------------------------------------------------
def _scores(values: list[float], noise_seed: int) -> np.ndarray:
    """Scores with exact repeats, perturbed by rounding-level noise (ties that bit noise would break)."""
    s = np.asarray(values, dtype=float)
    noise = np.random.default_rng(noise_seed).uniform(-4e-16, 4e-16, size=s.shape)
    return s * (1.0 + noise)


#: Values equal or far apart (multiples of 1/8): the only ties are exact repeats.
TIE_SCORES = st.lists(st.integers(-40, 40).map(lambda i: i / 8), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(values=TIE_SCORES, noise=st.integers(0, 2**16), scale=st.floats(-6, 6), data=st.data())
def test_ties_rank_like_an_exact_sort_with_ties_to_the_smaller_index(values, noise, scale, data):
    from spcakit.numerics import ties

    exact = np.asarray(values, dtype=float)
    s = _scores(values, noise) * 10.0**scale
    # the tie rule sees the exact order, ties to the smaller index, whatever the rounding noise and the scale
    expected = np.lexsort((np.arange(exact.size), -exact))
    np.testing.assert_array_equal(ties.order(s), expected)
    k = data.draw(st.integers(0, s.size))
    np.testing.assert_array_equal(ties.top_k(s, k), expected[:k])
    mask = ties.top_k_mask(np.column_stack([s, -s]), k)
    np.testing.assert_array_equal(np.flatnonzero(mask[:, 0]), np.sort(expected[:k]))
    np.testing.assert_array_equal(np.flatnonzero(mask[:, 1]), np.sort(np.lexsort((np.arange(exact.size), exact))[:k]))
    assert ties.argmax(s) == expected[0]
    np.testing.assert_array_equal(ties.order_columns(np.column_stack([s, s]))[:, 1], expected)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shape=st.sampled_from([(1, 500), (40, 400), (50, 500), (3, 6000), (2, 20000)]), k=st.integers(1, 400),
       repeats=st.booleans(), seed=st.integers(0, 2**16))
def test_kth_and_next_largest_equal_a_sort_whatever_the_branch(shape, k, repeats, seed):
    """The ``k``-th and ``(k+1)``-th largest score of each row, by whole partition (few scores in all), by slabs
    (more, short rows) or by a sampled band (long rows, large ``k``): the same numbers as a sort, ties included."""
    from spcakit.numerics import ties

    c, p = shape
    k = min(k, p - 1)
    rng = np.random.default_rng(seed)
    rows = rng.integers(-30, 30, size=shape) / 8 if repeats else rng.standard_normal(shape)
    kth, after = ties._kth_and_next_largest(np.ascontiguousarray(rows), k)
    ranked = -np.sort(-rows, axis=1)
    np.testing.assert_array_equal(kth, ranked[:, k - 1])
    np.testing.assert_array_equal(after, ranked[:, k])


# -- exact ties: correlation matrices, duplicated variables, equicorrelated blocks (issue 24) --------------
#: Drawn tied problems per method.
TIED_EXAMPLES = 30


@st.composite
def tied_problems(draw: Draw, parameters: Callable[[int, int], st.SearchStrategy[dict]]) -> dict:
    """A covariance with exact ties (:func:`spcakit.testing.strategies.tied_covariances`), r, the method's
    parameters and a permutation."""
    kind, matrix = draw(sps.tied_covariances(p=(3, 8)))
    p = matrix.shape[0]
    values = np.linalg.eigvalsh(matrix)[::-1]
    # r up to 3, below the rank, and only where the leading r eigenvectors are unique (distinct eigenvalues
    # down to the r-th and a gap after it): PCA itself, and every start built on it, is otherwise defined only
    # up to a rotation inside a repeated eigenspace (equicorrelated blocks repeat 1 - rho)
    gaps = -np.diff(values) > 1e-6 * values[0]
    unique = [t for t in range(1, min(3, p - 1) + 1) if values[t - 1] > 1e-9 * p and np.all(gaps[:t])]
    r = draw(st.sampled_from(unique)) if unique else 1
    drawn = draw(parameters(p, r))
    r = drawn.pop("r", r)
    permutation = np.asarray(draw(st.permutations(range(p))))
    return {"matrix": matrix, "tie": kind, "kind": "covariance", "r": r, "params": drawn, "permutation": permutation,
            "seed": draw(st.integers(0, 2**16))}


#: Configurations (not methods) whose results on some kind of tie depend on the order, and why.
TIED_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("spcart row-sparse", "duplicated"): "SPCArt's rotation with both copies of a variable in the shared row support "
    "iterates on a singular C_II: the second loading's direction inside it is set by rounding, and the run can "
    "end at either of two fixed points of different CPEV",
    ("spcart row-sparse", "blocks"): "the same with two variables of one equicorrelated block in the shared row "
    "support: C_II has a repeated eigenvalue, the loadings' rotation inside its eigenspace is set by rounding",
}


@pytest.mark.parametrize("label, method, fixed, parameters", [c for c in _cases() if c[0] not in NOT_EQUIVARIANT],
                         ids=[c[0] for c in _cases() if c[0] not in NOT_EQUIVARIANT])  # fmt: skip
# (ids by label: an id holding a function's address would change Hypothesis's derandomized examples every run)
@settings(max_examples=TIED_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_tied_matrices_give_results_independent_of_the_order(label, method, fixed, parameters, data):
    """Correlation matrices give the same CPEV and the same supports in any order (the ties between equal
    variances are broken by the values); duplicated variables and equicorrelated blocks are symmetries of
    C, so there the result is the same up to relabelling the tied variables: the same CPEV."""
    case = data.draw(tied_problems(parameters))
    if (label, case["tie"]) in TIED_EXCEPTIONS:
        return
    spec, fit_kwargs, params = _configure(label, method, fixed)
    base = _fit(case["matrix"], case, spec, fit_kwargs, params)
    permuted = _fit(_permuted(case), case, spec, fit_kwargs, params)
    what = f"{label} on a {case['tie']} matrix, permuted"
    if isinstance(base, type) or isinstance(permuted, type):
        assert base == permuted, f"{what}: {base!r} vs {permuted!r}"
        return
    assert permuted.metrics["cpev"] == pytest.approx(base.metrics["cpev"], rel=0, abs=1e-9), what
    generalized = (base.spec.get("deflator") or {}).get("name") == "generalized"
    unpermuted = np.empty_like(permuted.loadings)
    unpermuted[case["permutation"]] = permuted.loadings
    if generalized and (case["tie"] != "correlation" or _generalized_tie(base, unpermuted)):
        return  # GENERALIZED_TIE: the same nested spans (and CPEV, checked above); later loadings may differ
    single = np.any(np.count_nonzero(base.loadings, axis=0) == 1)
    if case["tie"] == "correlation" and not single:
        # the same supports. (With a loading on one variable - k = 1, or a threshold that leaves one - every
        # single variable explains variance 1: rounds tie exactly on the values, and a deflated round can hold
        # a symmetry C itself does not - with e_i removed, two variables of equal correlation to each other
        # look alike to the rest - so there only the CPEV is the same.)
        np.testing.assert_array_equal(permuted.loadings != 0, base.loadings[case["permutation"]] != 0,
                                      err_msg=f"{what}: supports differ")
    # else a symmetry of C relabels the tied variables: the same CPEV (above), not the same loadings: a block
    # method's loadings may rotate inside a repeated eigenspace of C_II (equicorrelated blocks), and a support
    # holding both copies of a duplicated variable makes C_II singular, where a loading inside its null space
    # has as many nonzeros as rounding gives it
