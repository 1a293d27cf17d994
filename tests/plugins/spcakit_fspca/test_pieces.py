"""The FSPCA plugin's experiment pieces: the Table 1 schemes, the Fantope start, and their registration."""

from __future__ import annotations

import numpy as np
import pytest

from spcakit.core.errors import DuplicateNameError, UnknownNameError
from spcakit.core.plugins import get_registry
from spcakit.core.registry import PIECE_KINDS, Registry
from spcakit_fspca import metrics, pieces


def test_the_generators_are_the_published_schemes():
    rng = np.random.default_rng(0)
    for scheme, (lead, floor) in pieces.SPECTRA.items():
        a = pieces.scheme_covariance(rng, scheme, 12)
        values = np.sort(np.linalg.eigvalsh(a))[::-1]
        np.testing.assert_allclose(values, list(lead) + [floor] * (12 - len(lead)), atol=1e-9)
    with pytest.raises(ValueError, match="unknown scheme 'G'"):
        pieces.scheme_covariance(rng, "G")


def test_the_fantope_start_is_orthonormal_and_row_sparse():
    a = pieces.scheme_covariance(np.random.default_rng(1), "A", 20)
    w0 = pieces.fantope_start(a, 3, 7)
    np.testing.assert_allclose(w0.T @ w0, np.eye(3), atol=1e-10)
    assert 3 <= metrics.row_support(w0).size <= 20


def test_the_plugin_registers_its_pieces_by_kind():
    registry = get_registry()
    for kind, name, function in pieces.PIECES:
        assert registry.piece(kind, name) is function
    assert set(registry.piece_names("score")) >= {"fspca-refined", "fspca-bound"}


def test_the_registry_refuses_duplicate_unknown_and_odd_pieces():
    registry = Registry()
    registry.register_piece("start", "zeros", np.zeros, plugin="one")
    with pytest.raises(DuplicateNameError, match="start 'zeros' is already registered by plugin 'one'"):
        registry.register_piece("start", "zeros", np.ones, plugin="two")
    with pytest.raises(ValueError, match="experiment pieces are of kind generator, start, score; got 'figure'"):
        registry.register_piece("figure", "x", np.zeros)
    with pytest.raises(TypeError, match="register a function"):
        registry.register_piece("score", "x", 3)
    with pytest.raises(UnknownNameError, match="unknown start 'zero'"):
        registry.piece("start", "zero")
    registry.unregister_plugin("one")
    assert registry.piece_names("start") == [] and set(PIECE_KINDS) == {"generator", "start", "score"}
