"""Ctrl-C during a long dense eigen-decomposition reaches the caller at once (the search's setup at p = 5000 held it
for 40-53 s inside one LAPACK call)."""

from __future__ import annotations

import _thread
import threading

import numpy as np
import pytest

from spcakit.numerics import linalg


def test_a_large_decomposition_is_the_eigh_of_the_matrix():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((linalg.INTERRUPTIBLE_ORDER, 20))
    a = g @ g.T
    values, vectors = linalg.interruptible_eigh(a)
    reference = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(values, reference, atol=1e-9 * reference[-1])
    np.testing.assert_allclose(a @ vectors[:, -1], values[-1] * vectors[:, -1], atol=1e-8 * values[-1])


def test_an_interrupt_reaches_the_caller_while_the_decomposition_still_runs(monkeypatch):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("an interrupt reaches the main thread only")
    started, release = threading.Event(), threading.Event()

    def held_eigh(a):  # stands for a LAPACK call that holds its thread until it returns
        started.set()
        release.wait()
        return np.zeros(a.shape[0]), np.eye(a.shape[0])

    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ORDER", 2)
    monkeypatch.setattr(linalg.np.linalg, "eigh", held_eigh)

    def interrupt() -> None:
        started.wait()
        _thread.interrupt_main()  # what Ctrl-C does: KeyboardInterrupt in the main thread

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            linalg.interruptible_eigh(np.eye(3))
        assert not release.is_set()  # raised while the decomposition was still held
    finally:
        release.set()


def test_an_error_of_the_decomposition_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ORDER", 2)
    with pytest.raises(np.linalg.LinAlgError):
        linalg.interruptible_eigh(np.full((3, 3), np.nan))


def _spy(monkeypatch, module, name):
    """Record the number of entries each call of ``numpy.name`` gets, through ``module``'s ``np``."""
    sizes: list[int] = []
    original = getattr(np, name)

    def spied(a, *args, **kwargs):
        sizes.append(np.asarray(a).size)
        return original(a, *args, **kwargs)

    monkeypatch.setattr(module.np, name, spied)
    return sizes


def test_the_capacities_of_a_large_spectrum_are_partitioned_in_blocks_and_equal_the_whole(monkeypatch):
    from spcakit.numerics import thresholding

    rng = np.random.default_rng(3)
    vectors = np.linalg.qr(rng.standard_normal((300, 300)))[0]
    squares, fixed = vectors**2, np.zeros(300, dtype=bool)
    fixed[[4, 50, 77]] = True
    need = 9
    whole = squares[fixed].sum(axis=0) + np.sort(squares[~fixed], axis=0)[-need:].sum(axis=0)
    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ENTRIES", 5000)
    sizes = _spy(monkeypatch, thresholding, "partition")
    np.testing.assert_allclose(thresholding.support_capacities(squares, fixed, need), whole, rtol=1e-13)
    assert len(sizes) > 1 and max(sizes) <= 5000  # Ctrl-C is checked between the blocks


def test_the_descending_prefix_of_a_large_matrix_is_taken_in_blocks_and_equals_a_full_sort(monkeypatch):
    from spcakit.analysis.search import nodes

    rng = np.random.default_rng(4)
    matrix = np.abs(rng.standard_normal((300, 300)))
    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ENTRIES", 5000)
    sizes = _spy(monkeypatch, nodes, "argpartition")
    values, columns = nodes.descending_prefix(matrix, 12)
    expected = np.argsort(-matrix, axis=1, kind="stable")[:, :12]
    np.testing.assert_array_equal(columns, expected)  # distinct random entries: one order
    np.testing.assert_array_equal(values, np.take_along_axis(matrix, expected, axis=1))
    assert len(sizes) > 1 and max(sizes) <= 5000


def test_a_decomposition_still_running_at_the_deadline_is_given_up(monkeypatch):
    import time

    started, release = threading.Event(), threading.Event()

    def held_eigh(a):  # a LAPACK call that runs on past the caller's deadline
        started.set()
        release.wait()
        return np.zeros(a.shape[0]), np.eye(a.shape[0])

    monkeypatch.setattr(linalg, "INTERRUPTIBLE_ORDER", 2)
    monkeypatch.setattr(linalg.np.linalg, "eigh", held_eigh)
    try:
        with linalg.deadline_scope(time.perf_counter() - 1.0), pytest.raises(linalg.DeadlinePassed):
            linalg.interruptible_eigh(np.eye(3))  # the deadline has passed: given up at the first look
        assert started.is_set() and not release.is_set()
        assert linalg.abandoned_still_running()
    finally:
        release.set()
    with linalg.deadline_scope(float("inf")):  # no deadline: the result
        monkeypatch.setattr(linalg.np.linalg, "eigh", lambda a: (np.ones(a.shape[0]), np.eye(a.shape[0])))
        assert linalg.interruptible_eigh(np.eye(3))[0].tolist() == [1.0, 1.0, 1.0]
