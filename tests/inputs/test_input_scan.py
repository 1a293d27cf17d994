"""One pass of checks: :func:`spcakit.inputs.checks.scan_rows` finds, a block of rows at a time, what
separate NumPy reductions find (finiteness, each column's extremes and sum, the content hash), and building
a problem from dense data reads the data once: the checks and the Gram matrix in one pass (a second pass only
where subtracting the mean from the scan's Gram matrix would lose digits)."""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterator
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spcakit.core.errors import SHOWN, InvalidDataError
from spcakit.inputs import as_problem, checks, data_problem

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EPS = float(np.finfo(float).eps)


def recipe(matrix: np.ndarray) -> str:
    """The content hash exactly as documented in :func:`spcakit.inputs.checks.content_sha256`."""
    h = hashlib.sha256(np.array(matrix.shape, dtype="<u8").tobytes())
    h.update(np.ascontiguousarray(matrix, dtype="<f8").tobytes())
    return h.hexdigest()


@contextlib.contextmanager
def blocks_of(rows: int, p: int) -> Iterator[None]:
    """Blocks of ``rows`` rows of ``p`` doubles (restored after): small data take several blocks (the scan's
    least height, :data:`~spcakit.inputs.checks.SCAN_MIN_ROWS`, lifted too)."""
    saved = checks.BLOCK_BYTES, checks.SCAN_MIN_ROWS
    checks.BLOCK_BYTES, checks.SCAN_MIN_ROWS = 8 * p * rows, 1
    try:
        yield
    finally:
        checks.BLOCK_BYTES, checks.SCAN_MIN_ROWS = saved


@st.composite
def tables(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    """A table and the rows of a block: n below a block, a multiple of it, or neither; some constant
    columns; values of mixed signs and magnitudes; C or Fortran order."""
    rows = draw(st.integers(1, 6))
    p = draw(st.integers(1, 7))
    n = draw(st.one_of(st.integers(1, rows), st.integers(1, 4).map(lambda m: m * rows), st.integers(1, 30)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, p)) * 10.0 ** rng.integers(-3, 4, size=p) + rng.integers(-5, 6, size=p)
    constant = draw(st.lists(st.integers(0, p - 1), max_size=p, unique=True))
    a[:, constant] = rng.standard_normal(len(constant))
    if draw(st.booleans()):
        a = np.asfortranarray(a)
    return a, rows


def sum_bound(a: np.ndarray, rows: int) -> np.ndarray:
    r"""What :func:`~spcakit.inputs.checks.scan_rows` promises for a column's sum against the exact one:
    :math:`(b + 2)\,\varepsilon \sum_i |a_{ij}|` (the in-block sums add ``b`` rows in order, the blocks'
    sums are compensated), with a unit of slack for the last rounding."""
    return (min(rows, a.shape[0]) + 3) * EPS * np.abs(a).sum(axis=0)


@SETTINGS
@given(tables())
def test_the_one_pass_finds_what_separate_reductions_find(case):
    a, rows = case
    with blocks_of(rows, a.shape[1]):
        scan = checks.scan_rows(a, sums=True, sha256=True)
        plain = checks.scan_rows(a)  # extremes alone, from views of a Fortran-ordered array
    assert scan.finite and scan.stopped_at == a.shape[0]
    np.testing.assert_array_equal(scan.high, a.max(axis=0))  # extremes are exact
    np.testing.assert_array_equal(scan.low, a.min(axis=0))
    np.testing.assert_array_equal(plain.high, scan.high)
    np.testing.assert_array_equal(plain.low, scan.low)
    assert plain.sums is None and plain.sha256 is None
    assert scan.sha256 == recipe(a) == checks.content_sha256(a)
    exact = np.array([math.fsum(a[:, j]) for j in range(a.shape[1])])
    bound = sum_bound(a, rows)
    assert np.all(np.abs(scan.sums - exact) <= bound)
    # numpy.mean adds the rows of a C-ordered array in order: its error is up to (n - 1) eps sum |a_ij|
    n = a.shape[0]
    np.testing.assert_array_less(np.abs(scan.sums / n - a.mean(axis=0)), (bound + n * EPS * np.abs(a).sum(axis=0)) / n + 1e-300)


@SETTINGS
@given(tables())
def test_constant_columns_are_found_as_before(case):
    a, rows = case
    if a.shape[0] < 2:
        return
    varying = np.nonzero(a.max(axis=0) > a.min(axis=0))[0]
    with blocks_of(rows, a.shape[1]):
        if varying.size == 0:
            with pytest.raises(InvalidDataError, match="constant"):
                data_problem(a)
            return
        problem = data_problem(a)
    np.testing.assert_array_equal(np.setdiff1d(np.arange(a.shape[1]), varying), problem.constant_columns)
    np.testing.assert_allclose(problem.input.mean, a.mean(axis=0), rtol=1e-13, atol=1e-300)


def old_message(a: np.ndarray, what: str, names: tuple[str, ...] | None) -> str:
    """The message the checks gave before the one pass, from a boolean copy of the whole matrix."""
    bad = ~np.isfinite(a)
    named = names is not None and len(names) == a.shape[1]

    def column(j: int) -> str:
        return f"{j} ({names[j]!r})" if named else str(j)  # type: ignore[index]

    row, col = np.unravel_index(int(np.argmax(bad)), bad.shape)
    kind = "NaN" if np.isnan(a[row, col]) else "infinite"
    count = int(bad.sum())
    per_column = bad.sum(axis=0)
    columns = np.nonzero(per_column)[0]
    listed = ", ".join(f"{column(j)}: {per_column[j]}" for j in columns[:SHOWN])
    more = f" and {columns.size - SHOWN} more" if columns.size > SHOWN else ""
    return (
        f"{what} has {count} NaN or infinite entr{'y' if count == 1 else 'ies'} "
        f"(first: {kind} at row {row}, column {column(col)}; by column: {listed}{more}); all entries must be "
        f"finite numbers - drop or fill in the missing values"
    )


@SETTINGS
@given(tables(), st.data())
def test_non_finite_entries_anywhere_are_reported_as_before(case, data):
    a, rows = case
    a = a.copy(order="K")
    n, p = a.shape
    count = data.draw(st.integers(1, 4))
    for _ in range(count):
        i = data.draw(st.one_of(st.just(n - 1), st.integers(0, n - 1)))  # the last row often
        a[i, data.draw(st.integers(0, p - 1))] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    names = data.draw(st.one_of(st.none(), st.just(tuple(f"v{j}" for j in range(p)))))
    first_bad = int(np.argmax(~np.isfinite(a).all(axis=1)))
    with blocks_of(rows, p):
        scan = checks.scan_rows(a, sums=True, sha256=True)
        assert not scan.finite and scan.stopped_at % rows == 0 and scan.stopped_at <= first_bad < scan.stopped_at + rows
        with pytest.raises(InvalidDataError) as caught:
            data_problem(a, names)
    assert str(caught.value) == old_message(a, "the data matrix", names)


class CountingArray(np.ndarray):
    """An array that logs every read: each slice taken (as a plain view) and every NumPy function or ufunc
    applied to the whole of it."""

    log: ClassVar[list[tuple[str, object]]] = []

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        CountingArray.log.append(("slice", key))
        return np.asarray(super().__getitem__(key))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):  # type: ignore[no-untyped-def]
        CountingArray.log.append(("ufunc", f"{ufunc.__name__}.{method}"))
        plain = [np.asarray(x) if isinstance(x, CountingArray) else x for x in inputs]
        return getattr(ufunc, method)(*plain, **kwargs)

    def __array_function__(self, func, types, args, kwargs):  # type: ignore[no-untyped-def]
        CountingArray.log.append(("function", func.__name__))
        plain = [np.asarray(x) if isinstance(x, CountingArray) else x for x in args]
        return func(*plain, **kwargs)


def row_reads(log: list[tuple[str, object]], n: int) -> list[tuple[int, int]]:
    """The ranges of rows that ``log`` records as read, in order (``A.T @ A`` on the whole array: ``(0, n)``)."""
    reads: list[tuple[int, int]] = []
    for kind, key in log:
        if (kind, key) == ("ufunc", "matmul.__call__"):  # the Gram matrix of the data as given: A^T A
            reads.append((0, n))
            continue
        assert kind == "slice" and isinstance(key, slice), f"another read of the whole array: {kind} {key}"
        start, stop, step = key.indices(n)
        assert step == 1
        reads.append((start, stop))
    return reads


@pytest.mark.parametrize("center, standardize", [(True, False), (False, False), (True, True)])
def test_building_a_problem_reads_the_data_once_for_the_checks_and_the_gram_matrix(monkeypatch, center, standardize):
    # one sweep: the checks read each block of rows once, in order, and the Gram matrix reads the rows the checks
    # have just read (GRAM_BLOCK_BYTES of them at a time, or the block itself when shifted), never going back
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1000, 6)) * [1.0, 2.0, 1e-3, 5.0, 1.0, 1.0] + 3.0
    x[:, 4] = 7.0  # a constant column
    numeric_array = checks.numeric_array

    def counted(data, what):  # type: ignore[no-untyped-def]
        arr, names = numeric_array(data, what)
        return arr.view(CountingArray), names

    monkeypatch.setattr(checks, "numeric_array", counted)
    monkeypatch.setattr(checks, "BLOCK_BYTES", 8 * 6 * 64)  # blocks of 64 rows: 16 blocks, the last short
    monkeypatch.setattr(checks, "GRAM_BLOCK_BYTES", 8 * 6 * 256)  # the Gram matrix every 4 blocks
    CountingArray.log = []
    problem = data_problem(x, center=center, standardize=standardize)
    reads = row_reads(CountingArray.log, 1000)
    blocks = [(start, min(start + 64, 1000)) for start in range(0, 1000, 64)]
    assert [r for r in reads if r in blocks] == blocks, reads  # the checks: every block once, in order
    windows = [r for r in reads if r not in blocks]
    if windows:  # the Gram matrix of the rows as given (centred later: the data's means are small here)
        assert windows == [(0, 256), (256, 512), (512, 768), (768, 1000)], reads
        for window in windows:  # each read right after the checks of its last block
            assert reads[reads.index(window) - 1][1] == window[1], reads
    else:  # shifted by the first block's means (column 2: mean 3, deviation 1e-3): a block at a time
        assert center
    assert problem.input.sha256 == recipe(x)
    assert problem.constant_columns == ((4,) if center else ())  # uncentred, only a zero column has no variance


def test_every_layout_and_type_gives_the_same_record(tmp_path):
    """Fortran order, read-only, float32 (converted as before), integers, memory-mapped ``.npy`` and a
    DataFrame: the same checks, hash, means and covariance as a C-ordered float64 array."""
    x = np.random.default_rng(5).standard_normal((700, 5)) @ np.triu(np.ones((5, 5)))
    reference = as_problem(x)
    readonly = x.copy()
    readonly.flags.writeable = False
    np.save(tmp_path / "x.npy", x)
    matrices = [np.asfortranarray(x), readonly, np.load(tmp_path / "x.npy", mmap_mode="r"), x[::-1][::-1], x.astype(">f8")]
    pd = pytest.importorskip("pandas")
    matrices.append(pd.DataFrame(x, columns=[f"x{j}" for j in range(5)]))
    with blocks_of(64, 5):  # several blocks, for every layout
        for matrix in matrices:
            problem = as_problem(matrix)
            assert problem.input.sha256 == reference.input.sha256 == recipe(x)
            np.testing.assert_allclose(problem.input.mean, x.mean(axis=0), rtol=1e-14)
            np.testing.assert_allclose(problem.covariance.explicit(), reference.covariance.explicit(), rtol=1e-13)
        low = x.astype(np.float32)
        assert as_problem(low).input.sha256 == recipe(low.astype(float))
        integers = np.arange(700 * 5).reshape(700, 5) % 13
        np.testing.assert_array_equal(as_problem(integers).input.mean, integers.mean(axis=0))


def test_column_sums_are_compensated_across_blocks():
    """A column whose plain sum loses its small terms: the blocks' sums, compensated, keep them."""
    a = np.ones((4096, 1))
    a[0, 0] = 1e16
    with blocks_of(1, 1):  # one row a block: the compensated sum is exact here
        scan = checks.scan_rows(a, sums=True)
    assert scan.sums[0] == math.fsum(a[:, 0]) == 1e16 + 4095
    assert np.add.reduce(a, axis=0)[0] != 1e16 + 4095  # rows added in order lose every 1 after the first


def test_means_of_columns_whose_sum_overflows_are_still_found():
    top = np.finfo(float).max
    x = np.array([[top * 0.9, 1.0], [top * 0.8, 2.0], [top * 0.7, 4.0]])
    with blocks_of(1, 2):
        problem = as_problem(x, standardize=True)
    np.testing.assert_allclose(problem.input.mean, [top * 0.8, 7 / 3], rtol=1e-14)


def _two_pass_covariance(x: np.ndarray, center: bool, standardize: bool) -> np.ndarray:
    """The covariance as the second pass forms it: the data centred first, then their Gram matrix."""
    a = x - x.mean(axis=0) if center else x
    c = a.T @ a / (x.shape[0] - 1 if center else x.shape[0])
    if standardize:
        d = np.sqrt(np.diag(c))
        d[d == 0] = 1.0
        c = c / np.outer(d, d)
    return c


def _varying(problem) -> np.ndarray:  # type: ignore[no-untyped-def]
    covariance = problem.covariance
    return covariance.explicit() if covariance.explicit() is not None else covariance.base.explicit()


OFFSET_DATA = {
    "plain": lambda rng: rng.standard_normal((900, 7)),
    "offsets": lambda rng: rng.standard_normal((900, 7)) * 1e-2 + [1e3, -5e2, 0, 1e4, 3, 1e6, 7],
    "sorted offsets": lambda rng: np.sort(rng.standard_normal((900, 7)) + 50.0, axis=0),
    "constant column": lambda rng: np.column_stack([rng.standard_normal((900, 6)) + 2.0, np.full(900, 7.0)]),
}


@pytest.mark.parametrize("gram_rows", [64, 192, 10**6])
@pytest.mark.parametrize("case", OFFSET_DATA)
@pytest.mark.parametrize("center, standardize", [(True, False), (False, False), (True, True)])
def test_the_covariance_from_the_scan_is_the_two_pass_covariance(monkeypatch, case, center, standardize, gram_rows):
    """The scan's (shifted) Gram matrix less the mean's part equals the centred data's Gram matrix to the
    rounding of three of sixteen digits at most (gram_from_scan's rule): compared at 1e-12 relative. The Gram
    matrix's updates every block, every three blocks (the last window short) or once at the end."""
    monkeypatch.setattr(checks, "BLOCK_BYTES", 8 * 7 * 64)  # blocks of 64 rows
    monkeypatch.setattr(checks, "GRAM_BLOCK_BYTES", 8 * 7 * gram_rows)
    x = OFFSET_DATA[case](np.random.default_rng(5))
    with pytest.MonkeyPatch.context() as patch:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = data_problem(x, center=center, standardize=standardize)
        del patch
    varying = [j for j in range(x.shape[1]) if j not in problem.constant_columns]
    expected = _two_pass_covariance(x, center, standardize)[np.ix_(varying, varying)]
    np.testing.assert_allclose(_varying(problem), expected, rtol=0, atol=1e-12 * np.abs(expected).max())


def test_a_mean_the_first_block_does_not_show_takes_a_second_pass(monkeypatch):
    """A first block far from the rest (64 rows at 1e4, then 64 000 rows near 0): shifted by the first block's
    means, the scan's Gram matrix would lose more digits than GRAM_LOSS allows, so the centred pass forms it."""
    from spcakit.inputs import dense

    monkeypatch.setattr(checks, "BLOCK_BYTES", 8 * 3 * 64)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((64_000, 3))
    x[:64] = 1e4 + 1e-3 * rng.standard_normal((64, 3))
    calls = []
    centred = dense._centred_gram
    monkeypatch.setattr(dense, "_centred_gram", lambda *args: (calls.append(1), centred(*args))[1])
    problem = data_problem(x)
    assert calls == [1]
    expected = _two_pass_covariance(x, True, False)
    np.testing.assert_allclose(problem.covariance.explicit(), expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    calls.clear()
    data_problem(rng.standard_normal((640, 3)) + 1e3)  # offsets the first block shows: one pass
    assert calls == []


def test_the_scan_reads_wide_data_in_views_of_at_least_its_least_height_and_copies_in_blocks_of_block_bytes(monkeypatch):
    """Wide data: a block of BLOCK_BYTES holds few rows, and each block costs operations on p-vectors besides
    reading it; the scan takes views of at least SCAN_MIN_ROWS rows instead (no memory), while a block it must
    copy (to hash data not C-ordered) keeps to BLOCK_BYTES. The results are those of small blocks."""
    monkeypatch.setattr(checks, "BLOCK_BYTES", 8 * 4000 * 10)  # 10 rows of these 4000 columns: "wide"
    rng = np.random.default_rng(3)
    a = rng.standard_normal((150, 4000)) + 5.0
    heights = [block.shape[0] for _, block, _ in checks.row_blocks(a, c_order=False, min_rows=checks.SCAN_MIN_ROWS)]
    assert checks.block_rows(4000) < checks.SCAN_MIN_ROWS and heights[:-1] == [checks.SCAN_MIN_ROWS] * (len(heights) - 1)
    fortran = np.asfortranarray(a)
    copied = [c.shape[0] for _, _, c in checks.row_blocks(fortran, c_order=True, min_rows=checks.SCAN_MIN_ROWS)]
    assert max(copied) == checks.block_rows(4000)
    wide = checks.scan_rows(a, sums=True, sha256=True)
    with blocks_of(1, 4000):
        small = checks.scan_rows(a, sums=True, sha256=True)
    np.testing.assert_array_equal(wide.high, small.high)
    np.testing.assert_array_equal(wide.low, small.low)
    assert wide.sha256 == small.sha256 == checks.content_sha256(a)
    exact = np.array([math.fsum(a[:, j]) for j in range(a.shape[1])])
    assert np.all(np.abs(wide.sums - exact) <= sum_bound(a, checks.SCAN_MIN_ROWS))
