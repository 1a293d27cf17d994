"""The threshold bound (spcakit.analysis.bounds.threshold_bound; spcakit.numerics.thresholding): never below the optimum.

Any rho >= 0 gives a valid bound, so the tests draw rho freely as well as take the default grid, and compare
with brute force (every support of the cardinality: spcakit.testing.brute_force_optimum, support_values) on
random, Wishart (n < p), spiked and tied covariances and correlations up to p = 16; at a node of the exact
search, with some variables fixed in, against the best support that contains them.

The bound metrics' ``"threshold"`` relaxation (``spcakit.fit(bound="threshold")``, component_bounds'
``relaxation``): each loading's bound on the covariance the previous ones leave is never below that matrix's
brute-force optimum and never above the ``"fast"`` bound; strictly tighter on a low-rank covariance of weakly
correlated variables; ``"fast"`` is what every run computed before the option existed.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spcakit
from spcakit.analysis.certificate import cumulative_bounds, searched_bound
from spcakit.analysis.bounds import (
    RELAXATIONS,
    THRESHOLD_LIMIT,
    component_bounds,
    raised_for_rounding,
    refined_threshold_bound,
    sparse_variance_bound,
    threshold_bound,
)
from spcakit.core.errors import InvalidParameterError, ZeroLoadingError
from spcakit.numerics import thresholding
from spcakit.numerics.thresholding import (COMPONENT_SIZE, spectral_knapsack, threshold_knapsack, thresholded_blocks,
                                  thresholded_spectrum)
from spcakit.testing import brute_force_optimum, left_by, reference_rounding, support_values
from spcakit.testing import strategies as sps

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = {name: st.one_of(any_p, sps.covariance_families(16)[name])
            for name, any_p in sps.covariance_families((2, 16)).items()}  # fmt: skip
PITPROPS_OPTIMA = {4: 2.937479, 5: 3.406155, 6: 3.770960, 7: 3.996190, 8: 4.068607, 9: 4.138647, 10: 4.172638}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_threshold_bound_is_never_below_the_optimum(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    scale = float(np.diag(c).max())
    share = data.draw(st.floats(0.0, 2.0), label="rho / max C_ii")
    for k in range(1, c.shape[0] + 1):
        optimum = brute_force_optimum(c, k)[0]
        grid, _ = threshold_bound(c, k)
        drawn, _ = threshold_bound(c, k, [share * scale])
        assert min(grid, drawn) >= optimum - reference_rounding(c), (k, grid, drawn, optimum)


# -- blocks decomposed in part (PARTIAL_BLOCK): the item for the rest, and completion when the knapsack reaches it
@contextlib.contextmanager
def forced_partial(pairs: int) -> Iterator[None]:
    """Every block of more than one variable decomposed in part, ``pairs`` leading eigenpairs computed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(thresholding, "PARTIAL_BLOCK", 1)
        patch.setattr(thresholding, "PARTIAL_PAIRS", pairs)
        yield


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(SETTINGS, max_examples=24)  # twice the others': half the draws decompose in full, half in part
@given(data=st.data())
def test_with_variables_fixed_in_it_bounds_every_support_that_contains_them(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    k = data.draw(st.integers(1, p), label="k")
    fixed_at = data.draw(st.lists(st.integers(0, p - 1), max_size=k, unique=True), label="fixed")
    rho = data.draw(st.floats(0.0, 2.0), label="rho share") * float(np.diag(c).max())
    # None: every block decomposed in full; else blocks decomposed in part, the item for the rest alone (no completion)
    pairs = data.draw(st.sampled_from([None, 1, 2, 3]), label="pairs computed")
    fixed = np.zeros(p, dtype=bool)
    fixed[fixed_at] = True
    rest = [i for i in range(p) if not fixed[i]]
    supports = np.array([sorted(fixed_at + list(more)) for more in itertools.combinations(rest, k - len(fixed_at))])
    best = float(support_values(c, supports).max())
    with contextlib.nullcontext() if pairs is None else forced_partial(pairs):
        spectrum = thresholded_spectrum(c, rho, k, fixed)
    # with the rounding allowance every reported bound gets (the exact search's too): the knapsack of computed
    # eigenpairs may sit a few eps * lambda_max below the support's value (seen: 4.6 eps * lambda_max, a tied
    # covariance under OpenBLAS's Sandybridge kernels)
    bound = raised_for_rounding(spectral_knapsack(spectrum.values, spectrum.capacities) + rho * (k - 1), p,
                                float(np.abs(np.diag(c)).max()))
    assert bound >= best - reference_rounding(c), (k, fixed_at, rho, bound, best)


@pytest.mark.parametrize("p", [150, 300])
def test_a_block_whose_top_eigenvalue_is_repeated_gets_all_its_leading_pairs(p):
    """An equicorrelated block of correlation -1/(p-1) has its top eigenvalue p/(p-1) repeated p-1 times: LAPACK's
    subset driver returned 12 of the 16 leading pairs at p = 150 and 10 at p = 300 (none at all for one pair of a
    15-variable block), which left the block's spectrum short (or, with none, raised IndexError); the block is then
    decomposed in full, and the bound is still above brute force's optimum at k = 1 and 2."""
    c = np.full((p, p), -1.0 / (p - 1))
    np.fill_diagonal(c, 1.0)
    blocks = thresholded_blocks(c, 0.0)
    (members, values, vectors), = blocks.blocks
    assert not blocks.is_complete(0) and values.shape == (thresholding.PARTIAL_PAIRS,)
    np.testing.assert_allclose(values, p / (p - 1), rtol=1e-12)
    np.testing.assert_allclose(c @ vectors, vectors * values, atol=1e-12)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(values.size), atol=1e-12)
    for k in (1, 2):
        spectrum = thresholded_spectrum(c, 0.0, k)
        optimum = 1.0 + (k - 1) / (p - 1)  # two variables of opposite signs: 1 + 1/(p-1)
        assert spectral_knapsack(spectrum.values, spectrum.capacities) >= optimum - reference_rounding(c)


@pytest.mark.parametrize("p, count", [(15, 1), (150, 16), (300, 16)])
@pytest.mark.parametrize("vectors", [True, False])
def test_the_subset_eigensolver_gives_every_pair_asked_for(p, count, vectors):
    """``spcakit.numerics.linalg.leading_subset``, the one subset solve behind the eigen policy, FSPCA and the thresholded
    blocks: on an equicorrelated matrix whose top eigenvalue repeats p - 1 times, where LAPACK's subset driver
    returned fewer pairs (none for one pair of 15), all ``count`` come back, ascending, with valid vectors."""
    from spcakit.numerics.linalg import leading_subset

    c = np.full((p, p), -1.0 / (p - 1))
    np.fill_diagonal(c, 1.0)
    found = leading_subset(c, count, vectors=vectors, driver="evr" if vectors else None)
    values = found[0] if vectors else found
    assert values.shape == (count,)
    np.testing.assert_allclose(values, p / (p - 1), rtol=1e-12)
    if vectors:
        np.testing.assert_allclose(c @ found[1], found[1] * values, atol=1e-12)


def test_components_give_the_spectrum_of_the_whole_thresholded_matrix():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, COMPONENT_SIZE + 60)) * rng.uniform(0.2, 3.0, COMPONENT_SIZE + 60)
    c = x.T @ x / 40
    rho = float(np.quantile(np.abs(c[np.triu_indices_from(c, 1)]), 0.97))
    whole = np.sign(c) * np.maximum(np.abs(c) - rho, 0.0)
    whole[np.diag_indices_from(whole)] = np.diag(c)
    spectrum = thresholded_spectrum(c, rho, 5)  # above COMPONENT_SIZE: decomposed by connected components
    np.testing.assert_allclose(np.sort(spectrum.values), np.linalg.eigvalsh(whole), atol=1e-10 * np.abs(c).max())
    assert spectrum.top.max() > 0 and np.isclose(np.linalg.norm(spectrum.top), 1.0)


def _components_by_search(linked: np.ndarray) -> list[list[int]]:
    """The connected components of a symmetric boolean matrix by a plain depth-first search, in the order of their
    first variables, each sorted: the reference for thresholded_blocks' blocks."""
    m = linked.shape[0]
    seen, components = np.zeros(m, dtype=bool), []
    for start in range(m):
        if seen[start]:
            continue
        seen[start], stack, members = True, [start], []
        while stack:
            i = stack.pop()
            members.append(i)
            for j in np.flatnonzero(linked[i]):
                if j != i and not seen[j]:
                    seen[j] = True
                    stack.append(int(j))
        components.append(sorted(members))
    return components


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.80, 0.999))
def test_the_blocks_are_the_components_of_the_entries_above_rho_in_order(seed, share):
    """Above COMPONENT_SIZE the blocks are the connected components of the off-diagonal entries above rho: each
    block's members, in the order of their first variables, and the variables alone the singletons."""
    rng = np.random.default_rng(seed)
    p = COMPONENT_SIZE + int(rng.integers(1, 80))
    x = rng.standard_normal((30, p)) * rng.uniform(0.2, 3.0, p)
    c = x.T @ x / 30
    rho = float(np.quantile(np.abs(c[np.triu_indices_from(c, 1)]), share))
    blocks = thresholded_blocks(c, rho, complete=True)
    expected = _components_by_search(np.abs(c) > rho)
    assert [list(members) for members, _, _ in blocks.blocks] == [g for g in expected if len(g) > 1]
    assert list(blocks.alone) == sorted(g[0] for g in expected if len(g) == 1)


def test_on_pitprops_it_lies_above_the_optima_and_below_the_plain_eigenvalue():
    c = spcakit.datasets.pitprops().matrix
    top = float(np.linalg.eigvalsh(c)[-1])
    for k, optimum in PITPROPS_OPTIMA.items():
        bound, rho = threshold_bound(c, k)
        assert optimum <= bound <= top * (1 + 1e-12) and rho >= 0, (k, bound)
        assert bound <= sparse_variance_bound(c, k).value * (1 + 1e-12)


def test_the_knapsack_fills_the_largest_values_first():
    assert spectral_knapsack(np.array([1.0, 5.0, 3.0]), np.array([1.0, 0.25, 0.5])) == pytest.approx(0.25 * 5 + 0.5 * 3 + 0.25)
    assert spectral_knapsack(np.array([-2.0, -1.0]), np.array([1.0, 1.0])) == 0.0  # negative values count as 0


# -- the refined search over rho, and the "threshold" relaxation of the bound metrics ------------------------
@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_refined_search_is_never_below_the_optimum(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    for k in range(1, c.shape[0] + 1):
        bound, rho = refined_threshold_bound(c, k)
        assert bound >= brute_force_optimum(c, k)[0] - reference_rounding(c) and rho >= 0, (k, bound)


def _check_relaxations(c: np.ndarray, x: np.ndarray) -> None:
    fast = component_bounds(c, x)
    tight = component_bounds(c, x, relaxation="threshold")
    assert tight.achieved == fast.achieved
    for t in range(x.shape[1]):
        k = int(np.count_nonzero(x[:, t]))
        if k == 0:
            assert tight.bound[t] == 0.0 and tight.which[t] == "zero"
            continue
        ct = left_by(c, x[:, :t])
        optimum = brute_force_optimum((ct + ct.T) / 2, k)[0]
        assert tight.bound[t] >= optimum - reference_rounding(c), (t, tight, optimum)
        assert tight.bound[t] <= fast.bound[t], (t, tight, fast)  # the least of more bounds
        assert (tight.which[t] == "threshold") == (tight.bound[t] < fast.bound[t]), (t, tight, fast)
        assert 0.0 <= tight.gap[t] <= fast.gap[t] + 1e-12 and tight.gap[t] <= 1.0


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_with_the_threshold_relaxation_each_components_bound_holds_against_brute_force(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    rng = np.random.default_rng(data.draw(sps.seeds(), label="seed"))
    x = rng.standard_normal((p, data.draw(st.integers(1, min(3, p)), label="r")))
    for j in range(x.shape[1]):
        x[rng.permutation(p)[data.draw(st.integers(1, p), label=f"k_{j}"):], j] = 0.0
    _check_relaxations(c, x)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_fits_threshold_bounds_hold_and_never_exceed_the_fast_ones(family, data):
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    r, k = data.draw(st.integers(1, min(2, p)), label="r"), data.draw(st.integers(1, p), label="k")
    try:
        fast = spcakit.fit(spcakit.Covariance(c), "tpower", r=r, k=k, metrics=["bound", "gap"])
    except (InvalidParameterError, ZeroLoadingError) as exc:
        # r above the rank: refused, with that reason, before the run or (TPower starting from one variable, so that
        # sparse loadings can outnumber the rank) when the deflated covariance has nothing left, as for a
        # standardised pair of identical columns at r = k = 2
        if "rank" not in str(exc):
            raise
        return
    tight = spcakit.fit(spcakit.Covariance(c), "tpower", r=r, k=k, metrics=["bound", "gap"], bound="threshold")
    np.testing.assert_array_equal(tight.loadings, fast.loadings)  # the relaxation changes the metrics alone
    assert tight.spec["bound"] == "threshold" and fast.spec["bound"] == "fast"
    for t in range(r):
        ct = left_by(c, fast.loadings[:, :t])
        optimum = brute_force_optimum((ct + ct.T) / 2, int(np.count_nonzero(fast.loadings[:, t])))[0]
        assert optimum - reference_rounding(c) <= tight.metrics["bound"][t] <= fast.metrics["bound"][t], t
        assert 0.0 <= tight.metrics["gap"][t] <= 1.0


def _weakly_correlated(n: int = 12, p: int = 150, seed: int = 3) -> np.ndarray:
    """A Wishart covariance with n << p (rank n - 1) and unequal variances: many weakly linked variables, as in
    gene expression, where the fast bounds sit near lambda_max."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, p)) * rng.uniform(0.5, 2.0, p)
    return np.cov(a, rowvar=False)


def test_the_threshold_relaxation_is_strictly_tighter_on_a_low_rank_covariance():
    """Against the cheap bounds alone (no search): the threshold bound at every cardinality is far below them."""
    c = _weakly_correlated()
    result = spcakit.fit(spcakit.Covariance(c), "tpower", r=2, k=8)
    cheap = cumulative_bounds(c, result.loadings, top_eigenvalues=np.linalg.eigvalsh(c)[::-1])
    tight = cumulative_bounds(c, result.loadings, top_eigenvalues=np.linalg.eigvalsh(c)[::-1], relaxation="threshold")
    for t in range(2):
        assert tight.bound[t] < 0.9 * cheap.bound[t], (tight, cheap)
        assert tight.gap[t] < cheap.gap[t]
    assert spcakit.fit(spcakit.Covariance(c), "tpower", r=2, k=8, bound="threshold").metrics["bound"][0] <= tight.bound[0]


def test_on_colon_genes_the_threshold_bound_is_far_tighter(load_shared):
    x = load_shared("colon_alon_62x2000.npz")["X"][:, :300]
    fast = spcakit.fit(x, "tpower", r=1, k=10)
    tight = spcakit.fit(x, "tpower", r=1, k=10, bound="threshold")
    achieved = fast.metrics["bound"][0] * (1 - fast.metrics["gap"][0])
    cheap = cumulative_bounds(spcakit.as_problem(x).covariance, fast.loadings).bound[0]  # no search, no threshold
    assert achieved <= tight.metrics["bound"][0] < 0.9 * cheap and tight.metrics["bound"][0] <= fast.metrics["bound"][0] * (1 + 1e-12)


def test_the_fast_relaxation_is_the_default_and_unchanged():
    c = spcakit.datasets.pitprops().matrix
    default = spcakit.fit(spcakit.Covariance(c), "greedy", r=3, k=4)
    fast = spcakit.fit(spcakit.Covariance(c), "greedy", r=3, k=4, bound="fast")
    assert default.metrics == fast.metrics and default.spec["bound"] == "fast"
    searched = searched_bound(spcakit.numerics.operators.DenseCovariance(c), default.loadings[:, 0], "fast")
    by_hand = cumulative_bounds(c, default.loadings, top_eigenvalues=np.linalg.eigvalsh(c)[::-1], first=searched)
    assert default.metrics["bound"] == pytest.approx(list(by_hand.bound), rel=1e-12)
    assert default.metrics["gap"] == pytest.approx(list(by_hand.gap), rel=1e-9, abs=1e-12)
    assert "threshold" not in by_hand.which


@pytest.mark.parametrize("bound", ["exact", "Threshold", "", None, 1])
def test_unknown_relaxations_are_refused_naming_the_valid_ones(bound):
    with pytest.raises(InvalidParameterError, match="choose one of: " + ", ".join(RELAXATIONS)):
        spcakit.fit(spcakit.datasets.pitprops().matrix, "tpower", r=1, k=4, covariance=True, bound=bound)


def test_the_threshold_relaxation_is_refused_above_its_limit():
    wide = np.random.default_rng(0).standard_normal((3, THRESHOLD_LIMIT + 1))
    with pytest.raises(InvalidParameterError, match=f"up to p = {THRESHOLD_LIMIT}.*p = {THRESHOLD_LIMIT + 1}"):
        spcakit.fit(wide, "tpower", r=1, k=4, bound="threshold")
    with pytest.raises(InvalidParameterError, match="bound='fast'"):
        component_bounds(np.eye(THRESHOLD_LIMIT + 1), np.eye(THRESHOLD_LIMIT + 1)[:, :1], relaxation="threshold")


def test_certify_takes_as_many_variables_as_the_exact_method_and_refuses_more():
    from spcakit.analysis.bounds import CERTIFY_LIMIT, check_relaxation

    assert check_relaxation("certify", 7129) == "certify"  # the Golub data: exact certifies them
    assert check_relaxation("certify", CERTIFY_LIMIT) == "certify"
    with pytest.raises(InvalidParameterError, match=f"up to p = {CERTIFY_LIMIT}.*p = {CERTIFY_LIMIT + 1}"):
        check_relaxation("certify", CERTIFY_LIMIT + 1)


def test_paths_and_targets_pass_the_relaxation_through():
    c = _weakly_correlated(p=80)  # above the default search (p <= 64): the relaxation alone differs
    fast = spcakit.path(spcakit.Covariance(c), "tpower", r=1, k="4:6")
    tight = spcakit.path(spcakit.Covariance(c), "tpower", r=1, k="4:6", bound="threshold")
    for a, b in zip(fast.levels, tight.levels):
        assert b.result.metrics["bound"][0] <= a.result.metrics["bound"][0] and b.result.spec["bound"] == "threshold"
    assert any(b.result.metrics["bound"][0] < a.result.metrics["bound"][0] for a, b in zip(fast.levels, tight.levels))
    target = spcakit.target_k(spcakit.Covariance(c), "tpower", r=1, sparsity=0.9, bound="threshold")
    direct = spcakit.fit(spcakit.Covariance(c), "tpower", r=1, k=target.k, bound="threshold")
    assert target.result.metrics["bound"] == direct.metrics["bound"]


def test_kept_blocks_give_the_same_spectrum_for_any_fixed_set():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((30, COMPONENT_SIZE + 40))
    c = x.T @ x / 30
    rho = float(np.quantile(np.abs(c[np.triu_indices_from(c, 1)]), 0.98))
    blocks = thresholded_blocks(c, rho)
    for fixed_at in ([], [3], [0, 7, 100]):
        fixed = np.zeros(c.shape[0], dtype=bool)
        fixed[fixed_at] = True
        direct, kept = thresholded_spectrum(c, rho, 6, fixed), thresholded_spectrum(None, rho, 6, fixed, blocks=blocks)
        np.testing.assert_array_equal(direct.values, kept.values)
        np.testing.assert_array_equal(direct.capacities, kept.capacities)
    assert blocks.nbytes > 0


@pytest.mark.parametrize("family", sorted(FAMILIES))
@SETTINGS
@given(data=st.data())
def test_the_knapsack_of_blocks_decomposed_in_part_is_the_whole_spectrums(family, data):
    # completed where the knapsack reaches the rest: the value of the whole decomposition, to rounding
    _, c = data.draw(FAMILIES[family], label="(kind, C)")
    p = c.shape[0]
    k = data.draw(st.integers(1, p), label="k")
    rho = data.draw(st.floats(0.0, 0.5), label="rho share") * float(np.diag(c).max())
    pairs = data.draw(st.integers(1, 3), label="pairs computed")
    whole, _, _ = threshold_knapsack(c, rho, k, blocks=thresholded_blocks(c, rho, complete=True))
    with forced_partial(pairs):
        value, _, used = threshold_knapsack(c, rho, k)
        _, _, from_made = threshold_knapsack(lambda: c, rho, k)  # the matrix made on demand
    assert abs(value - whole) <= 1e-12 * max(abs(whole), float(np.abs(c).max())), (value, whole)
    assert len(used.blocks) == len(from_made.blocks)


def test_blocks_above_the_limit_are_decomposed_in_part_and_completed_only_when_reached():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((30, 200)) + 2.0 * rng.standard_normal((30, 1))  # one strong direction: one big block
    c = x.T @ x / 30
    rho = 0.05 * float(np.diag(c).max())
    blocks = thresholded_blocks(c, rho)
    big = [i for i, (members, _, _) in enumerate(blocks.blocks) if members.size > thresholding.PARTIAL_BLOCK]
    assert big and all(not blocks.is_complete(i) and blocks.blocks[i][1].size == thresholding.PARTIAL_PAIRS for i in big)
    value, _, used = threshold_knapsack(c, rho, 5, blocks=blocks)
    whole, _, _ = threshold_knapsack(c, rho, 5, blocks=thresholded_blocks(c, rho, complete=True))
    assert used is blocks  # the strong direction fills the knapsack: nothing completed
    assert abs(value - whole) <= 1e-12 * whole
    # a nearly flat spectrum of eigenvectors spread over 400 variables, k = 1: each pair holds little of a
    # support (its largest squared entry), so the knapsack needs more than PARTIAL_PAIRS of them and reaches the rest
    x = rng.standard_normal((800, 400))
    c = x.T @ x / 800
    rho = 1e-3 * float(np.diag(c).max())
    blocks = thresholded_blocks(c, rho)
    assert len(blocks.blocks) == 1 and not blocks.is_complete(0)
    value, _, used = threshold_knapsack(c, rho, 1, blocks=blocks)
    whole, _, _ = threshold_knapsack(c, rho, 1, blocks=thresholded_blocks(c, rho, complete=True))
    assert used is not blocks and used.is_complete(0) and used.blocks[0][1].size == 400
    assert abs(value - whole) <= 1e-12 * whole


@pytest.mark.parametrize(("seed", "share"), [(0, 0.02), (1, 0.1), (2, 0.3), (3, 0.6)])
def test_the_blocks_of_a_submatrix_read_in_place_equal_those_of_its_copy(monkeypatch, seed, share):
    """The search thresholds its nodes' allowed blocks without copying them: ``index`` reads the submatrix where needed
    (its entries above rho a block of rows at a time), with the same components, eigenpairs and knapsack, bit for bit,
    as the copied submatrix (Golub's allowed block near the root is a 0.4 GB copy)."""
    from spcakit.numerics import linalg

    rng = np.random.default_rng(seed)
    g = rng.standard_normal((2 * COMPONENT_SIZE, 40))
    c = g @ g.T / 40
    index = np.sort(rng.choice(c.shape[0], size=COMPONENT_SIZE + 40, replace=False))
    rho = share * float(np.abs(c[np.ix_(index, index)]).max())
    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ENTRIES", 2000)  # several blocks of rows at this size
    read = thresholded_blocks(c, rho, index=index)
    copied = thresholded_blocks(c[np.ix_(index, index)], rho)
    assert np.array_equal(read.diagonal, copied.diagonal) and np.array_equal(read.alone, copied.alone)
    assert read.complete == copied.complete and len(read.blocks) == len(copied.blocks)
    for (m1, v1, u1), (m2, v2, u2) in zip(read.blocks, copied.blocks, strict=True):
        assert np.array_equal(m1, m2) and np.array_equal(v1, v2) and np.array_equal(u1, u2)
    fixed = np.zeros(index.size, dtype=bool)
    fixed[:2] = True
    assert threshold_knapsack(c, rho, 6, fixed, index=index)[0] == threshold_knapsack(c[np.ix_(index, index)], rho, 6, fixed)[0]

