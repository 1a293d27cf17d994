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
